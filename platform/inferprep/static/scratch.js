// Scratch runs (templates/_scratch.html): a snippet that calls the editor's code as the module
// `solution` runs in the sandbox through the JSON API; it is never graded. The snippet autosaves
// in localStorage, per exercise and per account.
(function () {
  // A JSON answer, or an Error whose message says what went wrong (413, 422, 429, signed out).
  function answer(r) {
    var json = (r.headers.get("content-type") || "").indexOf("application/json") === 0;
    if (r.ok && json) return r.json();
    if (r.status === 401) return Promise.reject(new Error("You are signed out: sign in again (your snippet is kept here)."));
    var detail = json ? r.json().then(function (b) { return b.detail; }, function () { return ""; }) : Promise.resolve("");
    return detail.then(function (d) {
      if (Array.isArray(d)) d = d.map(function (e) { return e.msg; }).join("; ");
      throw new Error(d ? String(d) : "The server answered " + r.status + "; try again.");
    });
  }

  // The one place that waits for a scratch job to finish: its event stream pushes `state` (queued
  // with its position, or running) and then `done` with the result; nothing polls. A dropped
  // connection is retried by the browser; a refused one (signed out, gone) is asked once why.
  function waitDone(url, onState) {
    return new Promise(function (resolve, reject) {
      var stream = new EventSource(url + "/events");
      stream.addEventListener("state", function (e) { onState(JSON.parse(e.data)); });
      stream.addEventListener("done", function (e) { stream.close(); resolve(JSON.parse(e.data)); });
      stream.addEventListener("error", function () {
        if (stream.readyState !== EventSource.CLOSED) return;
        fetch(url, { headers: { Accept: "application/json" } }).then(answer).then(function (d) {
          if (d.state === "done") resolve(d);
          else reject(new Error("The live connection to the server was refused; run it again."));
        }).catch(reject);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("scratch");
    if (!box) return;
    var textarea = document.getElementById("scratch-snippet"), btn = document.getElementById("scratch-run");
    var status = document.getElementById("scratch-status"), out = document.getElementById("scratch-output");
    var errBox = document.getElementById("scratch-error"), key = box.dataset.storageKey;
    try { var kept = localStorage.getItem(key); if (kept !== null) textarea.value = kept; } catch (e) { /* private mode */ }

    // A plain textarea, not a second CodeMirror: the page keeps one `.CodeMirror`, the solution's.
    textarea.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); }
    });
    var timer = null;
    function store() { try { localStorage.setItem(key, textarea.value); } catch (e) { /* full or private: not kept */ } }
    textarea.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(store, 400); });

    function editorCode() {
      if (window.inferprepEditor) return window.inferprepEditor.getValue();
      var code = document.getElementById("code");
      return code ? code.value : "";
    }

    function show(d) {
      var r = d.result;
      out.textContent = r.stdout + (r.stderr ? (r.stdout && !/\n$/.test(r.stdout) ? "\n" : "") + r.stderr : "");
      if (!out.textContent) out.textContent = r.status === "ok" ? "(no output)" : "";
      out.hidden = !out.textContent;
      errBox.textContent = r.traceback || r.message;
      errBox.hidden = !errBox.textContent;
      var label = r.status === "ok" ? "Ran" : r.status.replace(/_/g, " ");
      status.textContent = label + " · " + r.cpu_s.toFixed(2) + " s CPU of " + r.time_limit_s + " s · " + r.device +
        " · not graded";
      box.dataset.status = r.status;
    }

    function progress(d) {
      if (d.state === "queued" && d.queue_position > 1) status.textContent = "Queued (position " + d.queue_position + ")…";
      else if (d.state === "running") status.textContent = "Running…";
    }

    function run() {
      if (btn.disabled) return;
      clearTimeout(timer);
      store();
      btn.disabled = true;
      status.textContent = "Running…";
      box.dataset.status = "";
      fetch(box.dataset.createUrl, {
        method: "POST", body: JSON.stringify({ code: editorCode(), snippet: textarea.value }),
        headers: { "Content-Type": "application/json", "Accept": "application/json" }
      }).then(answer).then(function (d) {
        progress(d);
        return waitDone(box.dataset.readUrl + d.id, progress);
      }).then(show).catch(function (e) {
        status.textContent = "Not run";
        box.dataset.status = "error";
        out.hidden = true;
        errBox.textContent = e.message;
        errBox.hidden = false;
      }).then(function () { btn.disabled = false; });
    }
    btn.addEventListener("click", run);
  });
})();
