// The code editor: CodeMirror 5 over the textarea (which stays the form field, so the page
// works without JavaScript), autosave of the draft, keyboard shortcuts, live verdict via htmx.
(function () {
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("solution-form");
    var textarea = document.getElementById("code");
    if (!form || !textarea || !window.CodeMirror) return;
    var status = document.getElementById("save-status");
    var runBtn = document.getElementById("run-btn"), submitBtn = document.getElementById("submit-btn");

    function grade(btn) { btn.click(); }   // a click, so htmx sends this button's kind
    var cm = CodeMirror.fromTextArea(textarea, {
      mode: "python", lineNumbers: true, indentUnit: 4, tabSize: 4, indentWithTabs: false,
      matchBrackets: true, styleActiveLine: true, viewportMargin: 50,
      extraKeys: {
        "Tab": function (c) { c.somethingSelected() ? c.indentSelection("add") : c.replaceSelection("    ", "end"); },
        "Shift-Tab": function (c) { c.indentSelection("subtract"); },
        "Ctrl-/": "toggleComment", "Cmd-/": "toggleComment",
        "Ctrl-Enter": function () { grade(runBtn); }, "Cmd-Enter": function () { grade(runBtn); },
        "Shift-Ctrl-Enter": function () { grade(submitBtn); }, "Shift-Cmd-Enter": function () { grade(submitBtn); },
        "Esc": function (c) { c.getInputField().blur(); }   // leave the editor with the keyboard
      }
    });
    window.inferprepEditor = cm;
    var input = cm.getInputField();
    input.setAttribute("aria-label", "Code editor (Python). Press Escape, then Tab, to leave it.");
    input.id = "code-input";
    document.querySelector('label[for="code"]').setAttribute("for", "code-input");

    var timer = null, saved = cm.getValue();
    function save(useBeacon) {
      var code = cm.getValue();
      if (code === saved) return Promise.resolve();
      var body = new URLSearchParams({ code: code });
      if (useBeacon && navigator.sendBeacon) {
        navigator.sendBeacon(form.dataset.draftUrl, body); saved = code; return Promise.resolve();
      }
      return fetch(form.dataset.draftUrl, { method: "POST", body: body, headers: { "Accept": "text/plain" } })
        .then(function (r) { return r.text().then(function (t) {
          if (r.ok) { saved = code; status.textContent = t; } else { status.textContent = "Not saved: " + t; }
        }); })
        .catch(function () { status.textContent = "Not saved (offline?)"; });
    }
    cm.on("change", function () {
      status.textContent = "Editing…";
      clearTimeout(timer);
      timer = setTimeout(save, 800);
    });
    window.addEventListener("pagehide", function () { save(true); });

    // htmx sends the editor's text (the server also saves it as the draft before grading).
    form.addEventListener("htmx:configRequest", function (e) {
      e.detail.parameters.code = cm.getValue();
      saved = cm.getValue();
      clearTimeout(timer);
      status.textContent = "Saved with the submission";
    });
    form.addEventListener("submit", function () { cm.save(); });
    form.addEventListener("htmx:beforeRequest", function () { runBtn.disabled = submitBtn.disabled = true; });
    form.addEventListener("htmx:afterRequest", function () { runBtn.disabled = submitBtn.disabled = false; });
  });
})();
