// Small progressive enhancements for every page (the pages work without them).
// - form[data-confirm] / button[data-confirm]: ask before a destructive plain-form submit.
// - input[type=file][data-autosubmit]: submit the form when a file is chosen.
(function () {
  "use strict";
  document.addEventListener("submit", (e) => {
    const button = e.submitter && e.submitter.closest("[data-confirm]");
    const question = (button && button.dataset.confirm) || e.target.dataset.confirm;
    if (question && !window.confirm(question)) e.preventDefault();
  });
  document.addEventListener("change", (e) => {
    if (e.target.matches("input[type=file][data-autosubmit]") && e.target.files.length) e.target.form.requestSubmit();
  });
})();
