// A grading in progress: count on, every 100 ms, from the elapsed time the server rendered
// (data-elapsed, seconds since the grading started, or since it was queued) using this page's own
// clock, so a clock that differs from the server's does not matter. The stream itself (progress,
// the verdict) is htmx's SSE extension: see templates/_verdict.html.
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
})();
