// Follow-up order questions: up/down buttons move an item; the text field (the order as the
// items' numbers, which also works without JavaScript) follows the list.
(function () {
  "use strict";
  function sync(ol) {
    var form = ol.closest("form");
    var field = form && form.querySelector("[data-fu-order-field]");
    if (!field) return;
    field.value = Array.prototype.map.call(ol.children, function (li) { return li.dataset.label; }).join(",");
  }
  function button(label, dir, text) {
    var b = document.createElement("button");
    b.type = "button"; b.className = "secondary small fu-move"; b.dataset.fuMove = dir;
    b.setAttribute("aria-label", label); b.textContent = text;
    return b;
  }
  function enhance(root) {
    (root || document).querySelectorAll("ol[data-fu-order]:not([data-fu-ready])").forEach(function (ol) {
      ol.setAttribute("data-fu-ready", "");
      Array.prototype.forEach.call(ol.children, function (li) {
        var name = li.textContent.trim();
        li.appendChild(button("Move up: " + name, "up", "↑"));
        li.appendChild(button("Move down: " + name, "down", "↓"));
      });
    });
  }
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-fu-move]");
    if (!b) return;
    var li = b.closest("li"), ol = li.parentElement;
    if (b.dataset.fuMove === "up" && li.previousElementSibling) ol.insertBefore(li, li.previousElementSibling);
    else if (b.dataset.fuMove === "down" && li.nextElementSibling) ol.insertBefore(li.nextElementSibling, li);
    sync(ol);
    b.focus();
  });
  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:afterSettle", function (e) { enhance(e.target); });
})();
