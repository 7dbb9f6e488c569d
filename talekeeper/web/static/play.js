// The play page: send an action, stream the narration over SSE, stop, undo/redo keys;
// retry and edited actions stream the same way; the Lines / Save Points panel follows the story.
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
  let controller = null;
  let followOutput = true;

  window.addEventListener("scroll", () => {
    const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
    followOutput = nearBottom;
  });

  function scrollIfFollowing() {
    if (followOutput) window.scrollTo(0, document.body.scrollHeight);
  }

  function setBusy(busy) {
    sendButton.disabled = busy;
    continueButton.disabled = busy;
    stopButton.hidden = !busy;
    root.classList.toggle("busy", busy);
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  function refreshStory() {
    return htmx.ajax("GET", `/adventures/${adventureId}/story`, { target: "#story", swap: "outerHTML" });
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
    const body = document.querySelector("#panel [data-src]");
    if (body) htmx.ajax("GET", body.dataset.src, { target: "#panel" });
  }

  // target: {url, body, replaceFrom} for a new take (retry, edited action); default a new turn.
  async function playTurn(kind, text, target = {}) {
    const fromInput = !target.url;
    showError("");
    setBusy(true);
    controller = new AbortController();
    const turn = document.createElement("article");
    turn.className = "turn streaming";
    const actionLine = document.createElement("p");
    actionLine.className = "action";
    const thinking = document.createElement("details");
    thinking.className = "reasoning";
    thinking.hidden = true;
    const summary = document.createElement("summary");
    summary.textContent = "Model's thinking";
    const thinkingText = document.createElement("p");
    thinking.append(summary, thinkingText);
    const narration = document.createElement("p");
    narration.className = "narration";
    turn.append(actionLine, thinking, narration);
    live.replaceChildren(turn);
    if (target.replaceFrom) hideFrom(target.replaceFrom);
    let finished = false;
    try {
      const response = await fetch(target.url || `/api/adventures/${adventureId}/turns`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(target.body || { kind, text }),
        signal: controller.signal,
      });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(body.detail ? String(typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : `The server answered ${response.status}.`);
      }
      for await (const { event, data } of readEvents(response)) {
        if (event === "accepted") {
          actionLine.textContent = data.action_line;
          if (fromInput && kind !== "continue") input.value = "";
        } else if (event === "text") {
          narration.textContent += data.text;
          scrollIfFollowing();
        } else if (event === "reasoning") {
          thinking.hidden = false;
          thinkingText.textContent += data.text;
        } else if (event === "done") {
          finished = true;
        } else if (event === "error") {
          throw new Error(data.message);
        }
      }
      if (!finished) throw new Error("The connection closed before the turn finished. Nothing was saved.");
    } catch (err) {
      if (err.name === "AbortError") showError("Stopped. Nothing was saved; your action is still in the box.");
      else showError(err.message);
      if (fromInput && kind !== "continue" && !input.value) input.value = text;
    } finally {
      controller = null;
      setBusy(false);
      await refreshStory();  // its swap refreshes an open panel too (htmx:afterSettle below)
      live.replaceChildren();
      scrollIfFollowing();
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const kind = form.querySelector("input[name=kind]:checked").value;
    const text = input.value.trim();
    if (!text) { showError("Type an action first, or press Continue."); return; }
    playTurn(kind, text);
  });
  continueButton.addEventListener("click", () => playTurn("continue", ""));
  // Story controls are re-rendered with the story, so listen on the document.
  document.addEventListener("click", (e) => {
    if (e.target.closest("#retry") && !controller) {
      const turns = document.querySelectorAll("#story .turn");
      const last = turns[turns.length - 1];
      playTurn("retry", "", { url: `/api/adventures/${adventureId}/retry`, body: {}, replaceFrom: last && last.dataset.turn });
    } else if (e.target.closest(".close-edit")) {
      e.target.closest(".edit-slot").replaceChildren();
    }
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
  // Undo, redo, takes and edits swap the story: keep an open panel in step with it.
  document.body.addEventListener("htmx:afterSettle", (e) => {
    if (e.detail.elt && e.detail.elt.id === "story" && !controller) refreshPanel();
  });
  stopButton.addEventListener("click", () => { if (controller) controller.abort(); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  document.addEventListener("keydown", (e) => {
    if (!(e.ctrlKey || e.metaKey) || controller) return;
    const key = e.key.toLowerCase();
    const id = key === "z" && !e.shiftKey ? "undo" : key === "y" ? "redo" : null;
    if (!id || document.activeElement === input && input.value) return;
    const button = document.getElementById(id);
    if (button && !button.disabled) { e.preventDefault(); button.click(); }
  });
  scrollIfFollowing();
})();
