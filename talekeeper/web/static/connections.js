// The Settings page's "Add a connection" form: the chosen service fills in its address and
// name, and a hosted one shows what allowing it means before the player may tick the box.
(function () {
  const service = document.getElementById("p-service");
  if (!service) return;
  const endpoint = document.getElementById("p-endpoint");
  const name = document.getElementById("p-name");
  const privacy = document.getElementById("p-privacy");
  const sentence = document.getElementById("p-sentence");
  const host = document.getElementById("p-host");
  const allow = document.getElementById("p-allow");
  const keyWhere = document.getElementById("p-key-where");
  let named = name.value;
  function update() {
    const option = service.selectedOptions[0];
    endpoint.placeholder = option.dataset.url || "http://127.0.0.1:8080/v1";
    if (!name.value || name.value === named) {
      name.value = option.dataset.url ? option.textContent.replace(" (hosted)", "").trim() : name.value;
      named = name.value;
    }
    keyWhere.textContent = option.dataset.keyHelp || "";
    const hosted = option.dataset.hosted === "yes";
    privacy.hidden = !hosted;
    if (hosted) {
      sentence.textContent = "Your story, its cards and state are sent to " + option.dataset.host + ".";
      if (host) host.textContent = option.dataset.host;
    } else if (allow) {
      allow.checked = false;
    }
  }
  service.addEventListener("change", update);
  update();
})();
