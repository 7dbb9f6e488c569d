// Starts Swagger UI on the OpenAPI document the /docs page names (talekeeper/web/apidocs.py).
// A file of its own because the Content-Security-Policy allows no inline script.
(function () {
  "use strict";
  var element = document.getElementById("swagger-ui");
  if (!element || !window.SwaggerUIBundle) return;
  window.SwaggerUIBundle({
    url: element.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    presets: [window.SwaggerUIBundle.presets.apis, window.SwaggerUIBundle.SwaggerUIStandalonePreset],
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null, // the default would send the document to validator.swagger.io
  });
})();
