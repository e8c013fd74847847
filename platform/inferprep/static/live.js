// A grading in progress. The stream itself (progress, then the verdict) is htmx's SSE extension:
// see templates/_verdict.html. Here: (1) every 100 ms, count on from the elapsed time the server
// rendered (data-elapsed: seconds since the grading started, or since it was queued) with this
// page's own clock, so a clock that differs from the server's does not matter; (2) after a pushed
// update of a verdict's body, copy its state (queued -> running) onto the verdict element; (3) after
// Cancel, whose button the answer replaces, put the focus on the verdict's heading, not <body>.
(function () {
  function tick() {
    var now = performance.now();
    document.querySelectorAll(".elapsed[data-elapsed]").forEach(function (el) {
      if (!el.dataset.seenAt) el.dataset.seenAt = String(now);
      var s = parseFloat(el.dataset.elapsed) + (now - parseFloat(el.dataset.seenAt)) / 1000;
      el.textContent = s.toFixed(1) + " s";
    });
  }
  setInterval(tick, 100);
  document.addEventListener("htmx:afterSettle", function (e) {
    var body = e.target;
    if (!body.classList || !body.classList.contains("verdict-body")) return;
    var bar = body.querySelector("[data-live-state]"), verdict = body.closest(".verdict");
    if (bar && verdict) verdict.dataset.state = bar.dataset.liveState;
  });
  // (the stream's cancelled verdict and Cancel's own answer may each replace the element)
  var cancelPressed = {};   // verdict element ids
  document.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    if (form.classList && form.classList.contains("cancel")) cancelPressed[form.getAttribute("hx-target").slice(1)] = true;
  });
  document.addEventListener("htmx:load", function (e) {
    var el = e.detail.elt;
    if (!el.id || !cancelPressed[el.id] || document.activeElement !== document.body) return;
    var heading = el.querySelector("h3");
    if (heading) { heading.tabIndex = -1; heading.focus(); }
  });
})();
