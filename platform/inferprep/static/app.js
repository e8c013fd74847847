// Math: render the spans markdown-it-py left for KaTeX (after load and after every htmx swap).
(function () {
  function renderMath(root) {
    if (!window.katex) return;
    root.querySelectorAll(".math.inline, .math.block").forEach(function (el) {
      if (el.dataset.rendered) return;
      try {
        katex.render(el.textContent, el, { displayMode: el.classList.contains("block"), throwOnError: false });
        el.dataset.rendered = "1";
      } catch (e) { /* leave the TeX source visible */ }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { renderMath(document); });
  document.addEventListener("htmx:afterSwap", function (e) { renderMath(e.target); });
})();
