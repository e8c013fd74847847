// The code editor: CodeMirror 5 over the textarea (which stays the form field, so the page
// works without JavaScript), sized to its pane; autosave of the draft with a copy in this
// browser until the server has it; opening or dropping a file (UTF-8 only, never altered);
// keyboard shortcuts; Run and Submit through htmx (Run's result in Examples, Submit's in Result).
(function () {
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("solution-form");
    var textarea = document.getElementById("code");
    if (!form || !textarea || !window.CodeMirror) return;
    var status = document.getElementById("save-status");
    var runBtn = document.getElementById("run-btn"), submitBtn = document.getElementById("submit-btn");
    var maxBytes = parseInt(form.dataset.maxBytes, 10) || Infinity;

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

    // The editor fills its pane: its height follows the host's (divider, window, phone views).
    var host = document.getElementById("editor-host");
    function fit() { if (host && host.clientHeight > 0) cm.setSize(null, host.clientHeight); }
    if (host && window.ResizeObserver) new ResizeObserver(fit).observe(host);
    fit();

    // -- a copy in this browser until the server has saved it (signed out, offline, too large)
    var localKey = form.dataset.localKey;
    function keepLocal(code) {
      try { localStorage.setItem(localKey, JSON.stringify({ code: code, at: new Date().toISOString() })); }
      catch (e) { /* full or private mode: the server copy is all there is */ }
    }
    function dropLocal(code) {
      try {
        var kept = JSON.parse(localStorage.getItem(localKey) || "null");
        if (kept && kept.code === code) localStorage.removeItem(localKey);
      } catch (e) { /* nothing kept */ }
    }
    function restoreLocal() {   // newer than the server's draft and different: it was never saved
      try {
        var kept = JSON.parse(localStorage.getItem(localKey) || "null");
        var serverAt = form.dataset.draftAt ? Date.parse(form.dataset.draftAt + (/[Z+]/.test(form.dataset.draftAt.slice(19)) ? "" : "Z")) : 0;
        if (kept && kept.code !== cm.getValue() && Date.parse(kept.at) > serverAt) return kept.code;
      } catch (e) { /* nothing kept */ }
      return null;
    }

    function byteSize(code) { return new Blob([code]).size; }
    function kb(n) { return Math.ceil(n / 1024); }
    function tooLarge(size) {
      return "Not saved: too large (limit " + kb(maxBytes) + " KiB; this is " + kb(size) + " KiB). It is kept in this browser.";
    }
    var SIGNED_OUT = "Signed out: sign in again (your code is kept here)";

    // -- autosave: the status says what the server answered, nothing else
    var timer = null, saved = cm.getValue();
    function save(useBeacon) {
      var code = cm.getValue();
      if (code === saved) return Promise.resolve();
      keepLocal(code);
      var size = byteSize(code);
      if (size > maxBytes) { status.textContent = tooLarge(size); return Promise.resolve(); }
      var body = new URLSearchParams({ code: code });
      if (useBeacon && navigator.sendBeacon) { navigator.sendBeacon(form.dataset.draftUrl, body); return Promise.resolve(); }
      // JSON, and no redirect followed: a signed-out session answers 401 (or a redirect), never
      // the sign-in page taken for a success
      return fetch(form.dataset.draftUrl, { method: "POST", body: body, redirect: "manual",
                                            headers: { "Accept": "application/json" } })
        .then(function (r) {
          if (r.type === "opaqueredirect" || r.status === 401) { status.textContent = SIGNED_OUT; return; }
          return r.json().catch(function () { return {}; }).then(function (d) {
            if (r.ok && d.message) {
              if (cm.getValue() === code) saved = code;
              dropLocal(code);
              status.textContent = d.message;
            } else if (r.status === 413) {
              status.textContent = tooLarge(size);
            } else {
              status.textContent = "Not saved: " + (d.detail || ("the server answered " + r.status)) + ". It is kept in this browser.";
            }
          });
        })
        .catch(function () { status.textContent = "Not saved (offline?). It is kept in this browser."; });
    }
    cm.on("change", function () {
      status.textContent = "Editing…";
      clearTimeout(timer);
      timer = setTimeout(save, 800);
    });
    window.addEventListener("pagehide", function () { if (cm.getValue() !== saved) keepLocal(cm.getValue()); save(true); });
    var restored = restoreLocal();
    if (restored !== null) {
      cm.setValue(restored);   // a change: autosave sends it
      status.textContent = "Restored your unsaved code from this browser; saving…";
    }

    // -- opening or dropping a file: strict UTF-8, or a message and the editor left as it was
    function loadFile(file) {
      if (file.size > maxBytes) { status.textContent = file.name + " is too large (limit " + kb(maxBytes) + " KiB; it is " + kb(file.size) + " KiB); the editor is unchanged."; return; }
      file.arrayBuffer().then(function (buf) {
        var text;
        try { text = new TextDecoder("utf-8", { fatal: true }).decode(buf); }
        catch (e) {
          status.textContent = file.name + " is not UTF-8 text; the editor is unchanged. Save it as UTF-8 and try again.";
          return;
        }
        cm.setValue(text);
        status.textContent = "Opened " + file.name + " (Ctrl+Z undoes); saving…";
      });
    }
    cm.on("drop", function (c, e) {
      var files = e.dataTransfer && e.dataTransfer.files;
      if (!files || !files.length) return;    // dropped text: CodeMirror inserts it
      e.preventDefault();
      loadFile(files[0]);
    });
    var fileInput = document.getElementById("code-file");
    if (fileInput) fileInput.addEventListener("change", function () {
      if (fileInput.files.length) loadFile(fileInput.files[0]);
      fileInput.value = "";
    });

    // -- Run and Submit through htmx (the server also saves the code as the draft)
    var sent = null, kind = "submit";
    form.addEventListener("htmx:configRequest", function (e) {
      sent = cm.getValue();
      e.detail.parameters.code = sent;
      kind = e.detail.parameters.kind === "run" ? "run" : "submit";
      clearTimeout(timer);
    });
    document.addEventListener("htmx:beforeSwap", function (e) {   // fired on the target, not the form
      if (e.detail.requestConfig.elt === form && kind === "run") e.detail.target = document.getElementById("examples");
    });
    form.addEventListener("submit", function () { cm.save(); });
    // Disabling the focused button drops the focus to <body>; give it back afterwards, so a
    // keyboard user's next Tab or Enter starts where they were.
    var pressed = null;
    form.addEventListener("htmx:beforeRequest", function () {
      pressed = document.activeElement === runBtn || document.activeElement === submitBtn ? document.activeElement : null;
      runBtn.disabled = submitBtn.disabled = true;
    });
    form.addEventListener("htmx:afterRequest", function (e) {
      runBtn.disabled = submitBtn.disabled = false;
      if (pressed && document.activeElement === document.body) pressed.focus();
      pressed = null;
      if (e.detail.elt !== form) return;
      if (e.detail.successful) {
        saved = sent;
        dropLocal(sent);
        status.textContent = "Saved with the submission";
      } else if (e.detail.xhr && e.detail.xhr.status === 401) {
        keepLocal(sent);
        status.textContent = SIGNED_OUT;
      } else {
        save();   // the grading was refused: the draft endpoint says whether the code is saved
      }
    });
    // A verdict arriving shows its tab (Result or Examples; on a phone, the Result view): the
    // answer to Run or Submit, and a grading that has finished.
    form.addEventListener("htmx:afterRequest", function (e) {
      if (e.detail.elt === form) window.inferprepReveal(document.getElementById(kind === "run" ? "examples" : "verdict"));
    });
    document.addEventListener("htmx:load", function (e) {
      var el = e.detail.elt;
      if (el.matches && el.matches('.drawer .verdict[data-state="done"]')) window.inferprepReveal(el);
    });
  });
})();
