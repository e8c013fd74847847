// Cohort mode: send the session's CSRF token with every state-changing request (forms, htmx,
// fetch and sendBeacon); the server refuses a POST carrying the session cookie without it.
(function () {
  var meta = document.querySelector('meta[name="csrf-token"]');
  var token = meta ? meta.content : "";
  if (!token) return;
  function addField(form) {
    if ((form.method || "").toLowerCase() !== "post" || form.querySelector('input[name="csrf_token"]')) return;
    var input = document.createElement("input");
    input.type = "hidden"; input.name = "csrf_token"; input.value = token;
    form.appendChild(input);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form").forEach(addField);
  });
  document.addEventListener("submit", function (e) { addField(e.target); }, true);
  document.addEventListener("htmx:configRequest", function (e) { e.detail.headers["X-CSRF-Token"] = token; });
  var origFetch = window.fetch;
  window.fetch = function (input, init) {
    init = init || {};
    var method = (init.method || "GET").toUpperCase();
    if (method !== "GET" && method !== "HEAD") {
      var headers = new Headers(init.headers || {});
      headers.set("X-CSRF-Token", token);
      init.headers = headers;
    }
    return origFetch.call(this, input, init);
  };
  if (navigator.sendBeacon) {
    var origBeacon = navigator.sendBeacon.bind(navigator);
    navigator.sendBeacon = function (url, data) {
      if (data instanceof URLSearchParams) data.set("csrf_token", token);
      return origBeacon(url, data);
    };
  }
})();
