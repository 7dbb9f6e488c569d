// The play page: send an action, stream the narration over SSE, stop; retry and edited
// actions stream the same way; keyboard shortcuts; autoscroll that pauses when the reader
// scrolls up; earlier turns load as the reader scrolls back; the side panel (state, lines,
// Save Points) follows the story.
// Send is enabled again as soon as the turn is written (`done`). When that turn is pending
// (its state pass or a companion's remark still running on the server, service/settling),
// the rest of its stream is read on the side until `settled`, and the story is refreshed
// with the turn's chips. Anything sent meanwhile is held by the server until then: the page
// says so in words, and plays it after.
// Narration is untrusted text: it is only ever inserted with textContent.
(function () {
  "use strict";
  const root = document.querySelector(".play");
  if (!root) return;
  const adventureId = root.dataset.adventure;
  const form = document.getElementById("action-form");
  const input = document.getElementById("action-text");
  const live = document.getElementById("live");
  const errorBox = document.getElementById("turn-error");
  const sendButton = document.getElementById("send");
  const continueButton = document.getElementById("continue");
  const stopButton = document.getElementById("stop");
  const jumpButton = document.getElementById("jump");
  const panel = document.getElementById("panel");
  const PLACEHOLDERS = { do: "What do you do?", say: "What do you say?", story: "What happens next? (written as part of the story)", talk: "What do you say to them? (they answer in their own voice)" };
  let controller = null;
  let settling = null;  // a promise: the pending turn's background step has ended
  const WAITING = "Updating the story's state… your action is played as soon as that is done.";
  const pendingShown = () => Boolean(document.querySelector("#story .turn.pending"));
  let followOutput = true;
  let programmaticScroll = false;

  // --- autoscroll: follow the newest text unless the reader has scrolled up ------------
  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
  }
  window.addEventListener("scroll", () => {
    if (programmaticScroll) return;
    followOutput = nearBottom();
    jumpButton.hidden = followOutput || !controller;
  }, { passive: true });

  function scrollIfFollowing() {
    if (!followOutput) return;
    programmaticScroll = true;
    window.scrollTo(0, document.documentElement.scrollHeight);
    requestAnimationFrame(() => { programmaticScroll = false; });
  }

  jumpButton.addEventListener("click", () => {
    followOutput = true;
    jumpButton.hidden = true;
    scrollIfFollowing();
  });

  // Undo, Redo and Retry are re-rendered with the story; while a turn streams they wait.
  function setBusy(busy) {
    sendButton.disabled = busy;
    continueButton.disabled = busy;
    for (const id of ["undo", "redo", "retry"]) {
      const b = document.getElementById(id);
      if (!b) continue;
      if (busy) { b.dataset.wasDisabled = String(b.disabled); b.disabled = true; }
      else if (b.dataset.wasDisabled !== undefined) { b.disabled = b.dataset.wasDisabled === "true"; delete b.dataset.wasDisabled; }
    }
    stopButton.hidden = !busy;
    root.classList.toggle("busy", busy);
    live.setAttribute("aria-busy", String(busy));  // screen readers read the turn once, when it is written
    if (!busy) jumpButton.hidden = true;
  }

  function showError(message, notice = false) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
    errorBox.classList.toggle("notice", notice);
    errorBox.setAttribute("role", notice ? "status" : "alert");
  }

  // The action being typed survives a reload (even mid-turn) in this tab, until it is sent.
  const draftKey = `talekeeper:draft:${adventureId}`;
  const saveDraft = () => {
    try { if (input.value) sessionStorage.setItem(draftKey, input.value); else sessionStorage.removeItem(draftKey); } catch (_) { /* storage off */ }
  };
  try { const draft = sessionStorage.getItem(draftKey); if (draft && !input.value) input.value = draft; } catch (_) { /* storage off */ }
  input.addEventListener("input", saveDraft);

  // With accounts on, a change carries the page's CSRF token (web/auth.py).
  function withCsrf(headers) {
    const csrf = document.querySelector('meta[name="csrf-token"]');
    return csrf ? { ...headers, "X-CSRF-Token": csrf.content } : headers;
  }

  // What the page shows: its first and last turn. A change made from the story (undo, redo,
  // a take, a turn) says so, and is answered with what changed: the page patches itself
  // (web/turns.py) instead of loading the story again.
  function shownTurns() {
    const turns = document.querySelectorAll("#story .turn");
    if (!turns.length) return {};
    const shown = { shown_first: turns[0].dataset.turn, shown_head: turns[turns.length - 1].dataset.turn };
    const pending = document.querySelector("#story .turn.pending");  // drawn again once settled
    if (pending) shown.shown_stale = pending.dataset.turn;
    return shown;
  }
  document.body.addEventListener("htmx:configRequest", (e) => {
    const elt = e.detail.elt;
    if (e.detail.headers["TK-Refresh"]) {
      // refreshStory: said when it is sent, not when it was asked for (a refresh waits for
      // the one before it, and that one may change what the page shows)
      Object.assign(e.detail.parameters, shownTurns());
      return;
    }
    if (!elt || elt.id === "story" || !elt.closest || !elt.closest("#story")) return;
    if (elt.closest(".older")) return;  // earlier turns: a page of them, not a change
    const shown = shownTurns();
    for (const name of Object.keys(shown)) e.detail.parameters[name] = shown[name];
  });

  function refreshStory() {
    return htmx.ajax("GET", `/adventures/${adventureId}/story`, { target: "#story", swap: "outerHTML", headers: { "TK-Refresh": "1" } });
  }

  // Parse a text/event-stream body into {event, data} objects.
  async function* readEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
      }
    }
  }

  // Turns whose place a new take will take: hidden while it streams, back if it fails.
  function hideFrom(turnId) {
    let hiding = false;
    for (const el of document.querySelectorAll("#story .turn")) {
      if (el.dataset.turn === String(turnId)) hiding = true;
      if (hiding) el.hidden = true;
    }
  }

  function refreshPanel() {
    const body = panel.querySelector("[data-src]");
    if (body) htmx.ajax("GET", body.dataset.src, { target: "#panel" });
  }

  function element(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // target: {url, body, replaceFrom} for a new take (retry, edited action); default a new turn.
  async function playTurn(kind, text, target = {}) {
    if (controller) return;
    const fromInput = !target.url;
    showError("");
    controller = new AbortController();
    setBusy(true);
    followOutput = true;
    const turn = element("article", "turn streaming");
    const actionLine = element("p", "action");
    const thinking = element("details", "reasoning");
    thinking.hidden = true;
    const thinkingText = element("p");
    thinking.append(element("summary", "", "The model's thinking"), thinkingText);
    const narration = element("p", "narration");
    const status = element("p", "status-line");
    status.setAttribute("role", "status");
    status.hidden = true;
    turn.append(actionLine, thinking, narration, status);
    live.replaceChildren(turn);
    if (target.replaceFrom) hideFrom(target.replaceFrom);
    if (settling || pendingShown()) {  // the server holds this action until the turn before settles
      status.textContent = WAITING;
      status.hidden = false;
    }
    scrollIfFollowing();
    let finished = false;
    try {
      const response = await fetch(target.url || `/api/adventures/${adventureId}/turns`, {
        method: "POST",
        headers: withCsrf({ "Content-Type": "application/json", Accept: "text/event-stream" }),
        body: JSON.stringify(target.body || { kind, text }),
        signal: controller.signal,
      });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(describeRefusal(body, response.status));
      }
      const events = readEvents(response);
      for (;;) {
        const next = await events.next();
        if (next.done) break;
        const { event, data } = next.value;
        if (event === "accepted") {
          status.hidden = true;
          actionLine.textContent = data.action_line;
          if (fromInput && kind !== "continue") input.value = "";  // the draft stays stored until the turn is written
        } else if (event === "text") {
          narration.textContent += data.text;
          scrollIfFollowing();
        } else if (event === "remark") {  // a companion's aside: theirs, labelled
          const remark = element("p", "remark");
          remark.append(element("span", "remark-by", `${data.by}:`), ` ${data.text}`);
          status.before(remark);
          scrollIfFollowing();
        } else if (event === "reasoning") {
          thinking.hidden = false;
          thinkingText.textContent += data.text;
        } else if (event === "retold") {
          // that telling did not fit the story: it is told again (the setting `retry`)
          narration.textContent = "";
          status.textContent = data.message;
          status.hidden = false;
          scrollIfFollowing();
        } else if (event === "status") {
          status.textContent = data.message;
          status.hidden = false;
          scrollIfFollowing();
        } else if (event === "done") {
          finished = true;
          status.hidden = true;
          saveDraft();
          if (data.turn && data.turn.pending) settling = follow(events);
          break;  // written: the player may act again while the rest comes
        } else if (event === "error") {
          throw new Error(data.message);
        }
      }
      if (!finished) throw new Error("The connection closed before the turn finished. Nothing was saved.");
    } catch (err) {
      if (err.name === "AbortError") showError("Stopped. Nothing was saved; your action is still in the box.", true);
      else showError(err.message);
      if (fromInput && kind !== "continue" && !input.value) { input.value = text; saveDraft(); }
    } finally {
      controller = null;
      setBusy(false);
      await refreshStory();  // its swap refreshes an open panel too (htmx:afterSettle below)
      live.replaceChildren();
      scrollIfFollowing();
    }
  }

  // The rest of a pending turn's stream, read on the side: `settled` carries its chips and
  // any companion's remark; the story (and an open panel) is refreshed to show them.
  async function follow(events) {
    try {
      for (;;) {
        const next = await events.next();
        if (next.done || next.value.event === "settled") break;
      }
    } catch (_) { /* the connection dropped: the story below says where the turn stands */ }
    await refreshStory();
    settling = null;
    if (pendingShown()) watchPending();
  }

  // A pending turn this page is not following (opened or reloaded while its state was being
  // updated, or its stream dropped): look again every second until it has settled.
  let watching = false;
  async function watchPending() {
    if (watching) return;
    watching = true;
    try {
      for (let tries = 0; tries < 300 && pendingShown() && !settling; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const story = await fetch(`/api/adventures/${adventureId}?limit=1`).then((r) => r.json()).catch(() => null);
        const last = story && story.turns_shown && story.turns_shown[story.turns_shown.length - 1];
        if (last && !last.pending && !settling) { await refreshStory(); break; }
      }
    } finally { watching = false; }
  }

  // Undo, Redo, a correction or an edit sent while a turn's state is being updated waits for it
  // on the server; say so while it does.
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    const verb = e.detail.requestConfig && e.detail.requestConfig.verb;
    if (verb && verb !== "get" && (settling || pendingShown()) && !controller) {
      showError("Updating the story's state… this is done as soon as that is finished.", true);
    }
  });
  document.body.addEventListener("htmx:afterRequest", (e) => {
    const verb = e.detail.requestConfig && e.detail.requestConfig.verb;
    if (verb && verb !== "get" && errorBox.classList.contains("notice") && errorBox.textContent.startsWith("Updating")) showError("");
  });

  function describeRefusal(body, status) {
    if (!body || body.detail === undefined) return `The server answered ${status}.`;
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg || JSON.stringify(d)).join("; ");
    return body.detail.message || JSON.stringify(body.detail);
  }

  function retryLast() {
    const button = document.getElementById("retry");
    if (controller || !button || button.disabled) return;
    const turns = document.querySelectorAll("#story .turn");
    const last = turns[turns.length - 1];
    playTurn("retry", "", { url: `/api/adventures/${adventureId}/retry`, body: {}, replaceFrom: last && last.dataset.turn });
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const kind = form.querySelector("input[name=kind]:checked").value;
    const text = input.value.trim();
    if (!text) { showError("Type an action first, or press Continue."); input.focus(); return; }
    const to = form.querySelector("select[name=to]");
    if (kind === "talk") {
      if (!to || !to.value) { showError("Choose whom you talk to."); return; }
      playTurn(kind, text, { body: { kind, text, to: to.value } });
      return;
    }
    playTurn(kind, text);
  });
  form.addEventListener("change", (e) => {
    if (e.target.name === "kind") input.placeholder = PLACEHOLDERS[e.target.value] || "";
    if (e.target.name === "to") {  // choosing whom to talk to means talking
      const talk = form.querySelector("input[name=kind][value=talk]");
      if (talk) { talk.checked = true; input.placeholder = PLACEHOLDERS.talk; }
    }
  });
  continueButton.addEventListener("click", () => playTurn("continue", ""));
  stopButton.addEventListener("click", () => { if (controller) controller.abort(); });

  // Story controls are re-rendered with the story, so listen on the document.
  document.addEventListener("click", (e) => {
    if (e.target.closest("#retry") || e.target.closest(".clash-retry")) retryLast();
    else if (e.target.closest(".close-edit")) e.target.closest(".edit-slot").replaceChildren();
    else if (e.target.closest(".close-panel")) closePanel();
  });
  document.addEventListener("submit", (e) => {
    const editAction = e.target.closest("form.edit-action");
    if (!editAction) return;
    e.preventDefault();
    if (controller) return;
    const turnId = editAction.dataset.turn;
    const kind = editAction.querySelector("input[name=kind]:checked").value;
    const text = editAction.querySelector("textarea[name=text]").value.trim();
    playTurn(kind, text, { url: `/api/adventures/${adventureId}/turns/${turnId}/edit`, body: { kind, text }, replaceFrom: turnId });
  });

  // --- keyboard: Enter sends, Ctrl+Z / Ctrl+Y / Ctrl+R -----------------------------------
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && panel.firstElementChild && !controller) { closePanel(); return; }
    if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
    const key = e.key.toLowerCase();
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    if (key === "r" && !e.shiftKey) {
      e.preventDefault();  // never reload the page mid-story
      retryLast();
      return;
    }
    const id = key === "z" && !e.shiftKey ? "undo" : key === "y" || (key === "z" && e.shiftKey) ? "redo" : null;
    if (!id || controller) return;
    if (typing && (e.target !== input || input.value)) return;  // the text box's own undo wins
    const button = document.getElementById(id);
    if (button && !button.disabled) {
      // Ask htmx directly: a story swapped in a moment ago may not be wired up yet.
      e.preventDefault();
      htmx.ajax("POST", button.getAttribute("hx-post"), { source: button, target: "#story", swap: "outerHTML" });
    }
  });

  // --- the side panel --------------------------------------------------------------------
  function markOpen(which) {
    for (const b of document.querySelectorAll(".panel-toggle")) {
      b.setAttribute("aria-expanded", String(b.id === `open-${which}`));
    }
    root.classList.toggle("with-panel", Boolean(which));
  }
  function closePanel() {
    const opener = document.querySelector(".panel-toggle[aria-expanded=true]");
    panel.replaceChildren();
    markOpen(null);
    const url = new URL(location.href);
    url.searchParams.delete("panel");
    history.replaceState(null, "", url);
    if (opener) opener.focus();
  }
  document.addEventListener("click", (e) => {
    const toggle = e.target.closest(".panel-toggle");
    if (toggle && toggle.getAttribute("aria-expanded") === "true") {
      // Clicking the open panel's button closes it (and stops htmx loading it again).
      e.preventDefault();
      e.stopImmediatePropagation();
      closePanel();
    }
  }, true);
  // A change made in the panel answers with the panel itself and `story-changed`: the story
  // reloads, and the panel must keep what it just said (not be reloaded over it).
  let panelAnswered = false;
  document.body.addEventListener("story-changed", () => { panelAnswered = true; });
  function storyMoved() {
    if (controller) return;
    if (panelAnswered) panelAnswered = false;
    else refreshPanel();
  }
  // An edit form opens whole in view: above the composer fixed at the bottom (whose height
  // varies), not half under it — and below the sticky toolbar when it is taller than the room.
  function showEditForm(slot) {
    const box = slot.querySelector(".edit-turn");
    if (!box) return;
    const toolbar = document.querySelector(".story-tools");
    box.style.scrollMarginBottom = `${form.offsetHeight + 8}px`;
    box.style.scrollMarginTop = `${(toolbar ? toolbar.offsetHeight : 0) + 8}px`;
    const room = window.innerHeight - form.offsetHeight - (toolbar ? toolbar.offsetHeight : 0) - 16;
    const text = box.querySelector("textarea");
    if (text && box.offsetHeight > room) {  // a short screen: the narration box gives way first
      const least = 3.5 * (parseFloat(getComputedStyle(text).lineHeight) || 20);
      text.style.height = `${Math.max(least, text.offsetHeight - (box.offsetHeight - room))}px`;
    }
    programmaticScroll = true;
    box.scrollIntoView({ block: box.offsetHeight > room ? "start" : "nearest" });
    requestAnimationFrame(() => { programmaticScroll = false; });
    if (text) text.focus({ preventScroll: true });
  }
  // A patch (undo, redo, a take, a turn): turns a retry hid come back when it wrote nothing.
  document.body.addEventListener("story-patched", () => {
    for (const el of document.querySelectorAll("#story .turn[hidden]")) el.hidden = false;
    storyMoved();
  });
  document.body.addEventListener("htmx:afterSettle", (e) => {
    const elt = e.detail.elt;
    if (elt && elt.id === "story") storyMoved();  // the story drawn afresh (edits, panel changes)
    const slot = e.detail.target;  // an edit form just opened in its turn's slot
    if (slot && slot.classList && slot.classList.contains("edit-slot")) showEditForm(slot);
    if (elt && elt.id === "panel") {
      const body = panel.querySelector("[data-panel]");
      if (!body) return;
      // A correction (or its refusal) answers at the top of the panel: bring it into view.
      const result = panel.querySelector(".correction-result");
      if (result) { result.scrollIntoView({ block: "start" }); result.focus({ preventScroll: true }); }
      const opened = root.dataset.openPanel !== body.dataset.panel;
      root.dataset.openPanel = body.dataset.panel;
      markOpen(body.dataset.panel);
      const url = new URL(location.href);
      url.searchParams.set("panel", body.dataset.panel);
      history.replaceState(null, "", url);
      // Move focus into a panel that was just opened (not when it merely refreshed).
      const opener = e.detail.requestConfig && e.detail.requestConfig.elt;
      if (opened && opener && opener.classList.contains("panel-toggle")) {
        const heading = panel.querySelector("h2");
        if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: window.innerWidth >= 1000 }); }
      }
    }
  });
  panel.addEventListener("htmx:beforeSwap", (e) => {
    // A refusal (409/422) still carries the panel with its message: show it.
    if (e.detail.xhr.status === 409 || e.detail.xhr.status === 422) { e.detail.shouldSwap = true; e.detail.isError = false; }
  });
  document.body.addEventListener("htmx:beforeSwap", (e) => {
    if (e.detail.target && e.detail.target.id === "panel" && !e.detail.serverResponse.trim()) root.dataset.openPanel = "";
  });

  // --- long stories: load earlier turns as the reader scrolls back ------------------------
  // The page keeps its place while the earlier turns are put in above what is being read.
  let keepPlace = null;
  document.body.addEventListener("htmx:beforeRequest", (e) => {
    if (e.detail.elt.classList && e.detail.elt.classList.contains("older")) {
      keepPlace = { height: document.documentElement.scrollHeight, y: window.scrollY };
    }
  });
  document.body.addEventListener("htmx:afterSwap", () => {
    if (!keepPlace) return;
    const grown = document.documentElement.scrollHeight - keepPlace.height;
    programmaticScroll = true;
    window.scrollTo(0, keepPlace.y + grown);
    requestAnimationFrame(() => { programmaticScroll = false; });
    keepPlace = null;
  });
  if ("IntersectionObserver" in window) {
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const button = entry.target;
        if (entry.isIntersecting && !button.classList.contains("htmx-request") && !controller) {
          observer.unobserve(button);
          button.click();
        }
      }
    }, { rootMargin: "300px 0px 0px 0px" });
    const watchOlder = () => {
      for (const b of document.querySelectorAll("#story .older")) observer.observe(b);
    };
    // Only once the reader scrolls: opening the page must not pull in the whole story.
    const first = () => {
      if (programmaticScroll) return;
      window.removeEventListener("scroll", first);
      watchOlder();
      document.body.addEventListener("htmx:afterSettle", watchOlder);
    };
    window.addEventListener("scroll", first, { passive: true });
  }

  if (pendingShown()) watchPending();
  scrollIfFollowing();
})();
