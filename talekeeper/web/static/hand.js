// The play page's hand on the player's own turn: "Write my turn" drafts the next action
// into the box (never sent by itself), "Suggest" offers three short actions as buttons
// that fill the box. Both ask the server (web/hand.py); nothing in the story changes.
(function () {
  const root = document.querySelector(".play[data-adventure]");
  const write = document.getElementById("write-turn");
  const ask = document.getElementById("suggest");
  const box = document.getElementById("action-text");
  const list = document.getElementById("suggestions");
  const status = document.getElementById("hand-status");
  if (!root || !write || !ask || !box || !list) return;
  const adventure = root.dataset.adventure;

  function headers() {
    const csrf = document.querySelector('meta[name="csrf-token"]');
    const base = { "Content-Type": "application/json", Accept: "application/json" };
    return csrf ? { ...base, "X-CSRF-Token": csrf.content } : base;
  }
  function kind() {
    const chosen = document.querySelector('input[name="kind"]:checked');
    return chosen && ["do", "say", "story"].includes(chosen.value) ? chosen.value : "do";
  }
  function say(text, failed) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(failed));
  }
  async function call(path, body) {
    const response = await fetch(`/api/adventures/${adventure}/hand/${path}`, {
      method: "POST", headers: headers(), body: JSON.stringify(body || {}),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.detail || "The model did not answer; try again.");
    return answer;
  }
  function busy(button, on) {
    button.disabled = on;
    button.setAttribute("aria-busy", on ? "true" : "false");
  }
  function fill(text) {
    box.value = text;
    box.dispatchEvent(new Event("input", { bubbles: true }));
    box.focus();
  }

  write.addEventListener("click", async () => {
    busy(write, true);
    say("Writing your turn…");
    try {
      const draft = await call("write", { kind: kind() });
      fill(draft.text);
      say("A draft of your turn is in the box: change it, or send it as it is.");
    } catch (error) {
      say(error.message, true);
    } finally {
      busy(write, false);
    }
  });

  ask.addEventListener("click", async () => {
    busy(ask, true);
    say("Thinking of what you could do…");
    list.replaceChildren();
    try {
      const found = await call("suggest");
      for (const text of found.suggestions) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "small secondary suggestion";
        button.textContent = text;
        button.addEventListener("click", () => {
          const doIt = document.querySelector('input[name="kind"][value="do"]');
          if (doIt) doIt.checked = true;
          fill(text);
          say("In the box: change it, or send it as it is.");
        });
        list.append(button);
      }
      say("Pick one to put it in the box.");
    } catch (error) {
      say(error.message, true);
    } finally {
      busy(ask, false);
    }
  });
})();
