// Small progressive enhancements for every page (the pages work without them).
// - form[data-confirm] / button[data-confirm]: ask before a destructive plain-form submit.
// - input[type=file][data-autosubmit]: submit the form when a file is chosen.
// - #adventure-filter: show only the adventures whose title or scenario matches.
// - form[data-canonical]: a refused save is shown at the form's POST address; the address
//   bar shows the editor's own instead, so a reload reads the page and never re-posts.
// - .point-buy[data-points]: character creation's points left, counted as the player types;
//   spending too many says so beside the stats and holds the form back (nothing is reset).
// - with accounts on, HTMX requests carry the page's CSRF token (web/auth.py); plain forms
//   get it as a hidden field from the server.
(function () {
  "use strict";
  const csrf = document.querySelector('meta[name="csrf-token"]');
  if (csrf) {
    document.addEventListener("htmx:configRequest", (e) => { e.detail.headers["X-CSRF-Token"] = csrf.content; });
  }
  const canonical = document.querySelector("form[data-canonical]");
  if (canonical && location.pathname + location.search !== canonical.dataset.canonical) {
    history.replaceState(null, "", canonical.dataset.canonical);
  }
  const filter = document.getElementById("adventure-filter");
  if (filter) {
    filter.closest(".filter").hidden = false;
    filter.addEventListener("input", () => {
      const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const card of document.querySelectorAll("#adventure-list > li")) {
        const text = (card.querySelector(".card-title").textContent + " " + card.querySelector(".meta").textContent).toLowerCase();
        card.hidden = !words.every((w) => text.includes(w));
      }
    });
  }
  for (const box of document.querySelectorAll(".point-buy[data-points]")) {
    const inputs = [...box.querySelectorAll("input[type=number]")];
    const left = box.querySelector(".points-left");
    const count = () => {
      const spent = inputs.reduce((sum, i) => sum + (Number(i.value) || 0) - Number(i.dataset.min || 0), 0);
      const rest = Number(box.dataset.points) - spent;
      const plural = (n) => `${n} point${Math.abs(n) === 1 ? "" : "s"}`;
      left.textContent = rest >= 0 ? `${plural(rest)} left.` : `${plural(-rest)} too many: take some off.`;
      left.classList.toggle("over", rest < 0);
      for (const i of inputs) i.setCustomValidity(rest < 0 ? `You have ${plural(-rest)} too many.` : "");
    };
    box.addEventListener("input", count);
    count();
  }
  document.addEventListener("submit", (e) => {
    const button = e.submitter && e.submitter.closest("[data-confirm]");
    const question = (button && button.dataset.confirm) || e.target.dataset.confirm;
    if (question && !window.confirm(question)) e.preventDefault();
  });
  document.addEventListener("change", (e) => {
    if (e.target.matches("input[type=file][data-autosubmit]") && e.target.files.length) e.target.form.requestSubmit();
  });
})();
