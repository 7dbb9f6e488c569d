// Small progressive enhancements for every page (the pages work without them).
// - form[data-confirm] / button[data-confirm]: ask before a destructive plain-form submit.
// - input[type=file][data-autosubmit]: submit the form when a file is chosen.
// - #adventure-filter: show only the adventures whose title or scenario matches.
// - form[data-canonical]: a refused save is shown at the form's POST address; the address
//   bar shows the editor's own instead, so a reload reads the page and never re-posts.
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
  document.addEventListener("submit", (e) => {
    const button = e.submitter && e.submitter.closest("[data-confirm]");
    const question = (button && button.dataset.confirm) || e.target.dataset.confirm;
    if (question && !window.confirm(question)) e.preventDefault();
  });
  document.addEventListener("change", (e) => {
    if (e.target.matches("input[type=file][data-autosubmit]") && e.target.files.length) e.target.form.requestSubmit();
  });
})();
