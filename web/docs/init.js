// Starts swagger-ui on the service's own OpenAPI document. A file of its
// own, not inline script, so that the page's Content-Security-Policy can
// forbid inline script. Nothing is fetched from another host: no
// validator badge, no remote configuration.
"use strict";
(function () {
  var ui = SwaggerUIBundle({
    url: "../openapi.json",
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,
    configUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: false,
    tryItOutEnabled: false,
    onComplete: function () {
      // Signed in to the admin UI in this tab? Then "try it" carries the
      // same token (kept by the admin UI in sessionStorage, never a cookie).
      try {
        var saved = JSON.parse(sessionStorage.getItem("personnel.session") || "null");
        if (saved && typeof saved.token === "string") {
          ui.preauthorizeApiKey("jwt", saved.token);
        }
      } catch (e) {
        // No session to share: the Authorize button asks for a token.
      }
    }
  });
  window.ui = ui;
})();
