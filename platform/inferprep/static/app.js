// Every page: math (KaTeX), tabs, the exercise page's divider and phone views, the header's menu,
// htmx error answers shown where the content would have gone, and the exercise list's filters
// restored from the URL on Back.
(function () {
  // -- math: render the spans markdown-it-py left for KaTeX (after load and after every htmx swap)
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

  // -- tabs (WAI-ARIA tabs pattern, automatic activation). A tablist with data-tabs="views"
  // switches the workspace's data-view (CSS shows that view on a phone); any other shows one
  // tabpanel and hides its siblings.
  function tabsOf(list) { return Array.prototype.slice.call(list.querySelectorAll('[role="tab"]')); }
  function selectTab(tab, focus) {
    var list = tab.closest('[role="tablist"]');
    tabsOf(list).forEach(function (t) {
      var on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      var panel = document.getElementById(t.getAttribute("aria-controls"));
      if (panel && list.dataset.tabs !== "views") panel.hidden = !on;
    });
    if (list.dataset.tabs === "views") {
      var ws = document.getElementById("workspace");
      if (ws) ws.dataset.view = tab.dataset.view;
      window.dispatchEvent(new Event("resize"));   // the editor measures its new height
    }
    if (focus) tab.focus();
  }
  function setUpTabs(list) {
    var tabs = tabsOf(list);
    selectTab(tabs.filter(function (t) { return t.getAttribute("aria-selected") === "true"; })[0] || tabs[0]);
    list.addEventListener("click", function (e) {
      var tab = e.target.closest('[role="tab"]');
      if (tab) selectTab(tab, true);
    });
    list.addEventListener("keydown", function (e) {
      var i = tabs.indexOf(document.activeElement), next = null;
      if (i < 0) return;
      if (e.key === "ArrowRight") next = tabs[(i + 1) % tabs.length];
      else if (e.key === "ArrowLeft") next = tabs[(i - 1 + tabs.length) % tabs.length];
      else if (e.key === "Home") next = tabs[0];
      else if (e.key === "End") next = tabs[tabs.length - 1];
      if (next) { e.preventDefault(); selectTab(next, true); }
    });
  }
  // Show the tab whose panel holds ``el`` (and, on a phone, the Result view if it is in the drawer).
  function revealPanelOf(el) {
    var panel = el && el.closest('[role="tabpanel"]');
    if (!panel) return;
    var tab = document.querySelector('[role="tab"][aria-controls="' + panel.id + '"]');
    if (tab) selectTab(tab);
    var views = document.querySelector('[data-tabs="views"]');
    if (views && panel.closest(".drawer") && window.matchMedia(PHONE).matches) {
      selectTab(views.querySelector('[data-view="result"]'));
    }
  }
  window.inferprepReveal = revealPanelOf;

  // -- phone views: the view panes are tabpanels only while the phone tabs show
  var PHONE = "(max-width: 760px)";
  function setUpViews(list) {
    var mq = window.matchMedia(PHONE);
    function apply() {
      tabsOf(list).forEach(function (t) {
        var pane = document.getElementById(t.getAttribute("aria-controls"));
        if (!pane) return;
        if (mq.matches) { pane.setAttribute("role", "tabpanel"); pane.setAttribute("aria-labelledby", t.id); }
        else if (pane.getAttribute("role") === "tabpanel") { pane.removeAttribute("role"); pane.removeAttribute("aria-labelledby"); }
      });
    }
    apply();
    mq.addEventListener("change", apply);
  }

  // -- the divider between the statement and the editor: drag it, or arrow keys; remembered
  var SPLIT_KEY = "inferprep.split", SPLIT_MIN = 20, SPLIT_MAX = 80;
  function setUpDivider(divider) {
    var ws = document.getElementById("workspace");
    function setSplit(pct, remember) {
      pct = Math.max(SPLIT_MIN, Math.min(SPLIT_MAX, Math.round(pct)));
      ws.style.setProperty("--split", pct);
      divider.setAttribute("aria-valuenow", pct);
      divider.setAttribute("aria-valuetext", pct + "% statement, " + (100 - pct) + "% editor");
      if (remember) { try { localStorage.setItem(SPLIT_KEY, String(pct)); } catch (e) { /* private mode */ } }
      window.dispatchEvent(new Event("resize"));
    }
    var stored = null;
    try { stored = parseFloat(localStorage.getItem(SPLIT_KEY)); } catch (e) { /* private mode */ }
    setSplit(isFinite(stored) ? stored : 50, false);
    divider.addEventListener("keydown", function (e) {
      var now = parseFloat(divider.getAttribute("aria-valuenow")), step = e.shiftKey ? 10 : 2, next = null;
      if (e.key === "ArrowLeft") next = now - step;
      else if (e.key === "ArrowRight") next = now + step;
      else if (e.key === "Home") next = SPLIT_MIN;
      else if (e.key === "End") next = SPLIT_MAX;
      if (next !== null) { e.preventDefault(); setSplit(next, true); }
    });
    divider.addEventListener("pointerdown", function (e) {
      e.preventDefault();
      divider.setPointerCapture(e.pointerId);
      divider.classList.add("dragging");
      var box = ws.getBoundingClientRect();
      function move(ev) { setSplit(100 * (ev.clientX - box.left) / box.width, false); }
      function up(ev) {
        divider.releasePointerCapture(ev.pointerId);
        divider.classList.remove("dragging");
        divider.removeEventListener("pointermove", move);
        divider.removeEventListener("pointerup", up);
        setSplit(parseFloat(divider.getAttribute("aria-valuenow")), true);
      }
      divider.addEventListener("pointermove", move);
      divider.addEventListener("pointerup", up);
    });
  }

  // -- the header's menu at phone widths
  document.addEventListener("click", function (e) {
    var btn = e.target.closest && e.target.closest(".menu-btn");
    if (!btn) return;
    var top = btn.closest(".top"), open = !top.classList.contains("open");
    top.classList.toggle("open", open);
    btn.setAttribute("aria-expanded", open ? "true" : "false");
  });

  // -- keyboard shortcuts help: the "Keyboard shortcuts" button, or "?" outside a text field
  function setUpShortcuts(dialog) {
    function open() { if (!dialog.open) dialog.showModal(); }
    document.querySelectorAll("[data-shortcuts-open]").forEach(function (b) { b.addEventListener("click", open); });
    document.addEventListener("keydown", function (e) {
      if (e.key !== "?" || e.ctrlKey || e.metaKey || e.altKey) return;
      var t = e.target;
      if (t.closest && t.closest("input, textarea, select, [contenteditable], .CodeMirror")) return;
      e.preventDefault();
      open();
    });
  }

  // -- the exercise list: Back restores the search box and filters from the URL's query
  function fillFiltersFromURL() {
    var form = document.querySelector("form.filters");
    if (!form) return;
    var q = new URLSearchParams(location.search);
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name) return;
      if (el.type === "checkbox") el.checked = q.getAll(el.name).indexOf(el.value) >= 0;   // keep its value
      else el.value = q.get(el.name) || "";
    });
  }

  // -- an htmx request answered with an error: say so where its content would have gone, so
  // nothing older (a previous "Passed") stays on screen, and never swap in a sign-in page.
  function messageOf(xhr) {
    var type = xhr.getResponseHeader("Content-Type") || "", text = xhr.responseText || "";
    if (type.indexOf("json") >= 0) {
      try { var d = JSON.parse(text).detail; if (typeof d === "string") return d; } catch (e) { /* fall through */ }
    }
    if (type.indexOf("text/plain") === 0 && text) return text;
    if (type.indexOf("text/html") === 0 && text) {   // an error page: its message paragraph
      var p = new DOMParser().parseFromString(text, "text/html").querySelector("main p");
      if (p) return p.textContent.trim();
    }
    return "the server answered " + xhr.status + (xhr.statusText ? " " + xhr.statusText : "");
  }
  function alertFor(xhr, prefix) {
    var p = document.createElement("p");
    p.className = "alert";
    p.setAttribute("role", "alert");
    p.dataset.status = String(xhr.status);
    if (xhr.status === 401) {
      p.append("Signed out: ");
      var a = document.createElement("a");
      a.href = "/login?next=" + encodeURIComponent(location.pathname);
      a.target = "_blank";
      a.rel = "noopener";
      a.textContent = "sign in again";
      p.append(a, " (in a new tab; your code is kept here), then try again.");
    } else {
      p.textContent = (prefix || "Error") + ": " + messageOf(xhr);
    }
    return p;
  }
  document.addEventListener("htmx:beforeSwap", function (e) {
    var d = e.detail;
    if (!d.isError || !d.target || d.requestConfig.elt.closest("[hx-select]")) return;
    d.shouldSwap = true;
    d.swapOverride = "innerHTML";
    var source = d.requestConfig.elt.closest("[data-error-prefix]");
    d.serverResponse = alertFor(d.xhr, source && source.dataset.errorPrefix).outerHTML;
  });
  document.addEventListener("htmx:afterSwap", function (e) { renderMath(e.target); });

  // -- the mock interview's countdown (templates/_interview_banner.html): the server renders the
  // time left; this ticks it down from data-ends-at, on the server's clock (data-now is the
  // server's time at rendering, so a skewed clock here changes nothing), and at zero loads the
  // report. A reload reads the server's ends_at again: nothing is kept in the browser.
  function clockText(s) {
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var mm = h ? String(m).padStart(2, "0") : String(m);
    return (h ? h + ":" : "") + mm + ":" + String(sec).padStart(2, "0");
  }
  function startCountdown(el) {
    var endsAt = Date.parse(el.dataset.endsAt), serverNow = Date.parse(el.dataset.now);
    if (isNaN(endsAt) || isNaN(serverNow)) return;
    var skew = serverNow - Date.now();      // the server's clock minus this one's
    var out = el.querySelector(".countdown-left"), timer = null;
    function tick() {
      var left = Math.max(0, Math.ceil((endsAt - (Date.now() + skew)) / 1000));
      out.textContent = clockText(left);
      if (left <= 0) {
        clearInterval(timer);
        location.assign(el.dataset.reportUrl);
      }
    }
    timer = setInterval(tick, 1000);
    tick();
  }

  document.addEventListener("DOMContentLoaded", function () {
    renderMath(document);
    var countdown = document.getElementById("interview-banner");
    if (countdown) startCountdown(countdown);
    document.querySelectorAll('[role="tablist"][data-tabs]').forEach(setUpTabs);
    var views = document.querySelector('[data-tabs="views"]');
    if (views) setUpViews(views);
    var divider = document.querySelector('.workspace > [role="separator"]');
    if (divider) setUpDivider(divider);
    var dialog = document.getElementById("shortcuts");
    if (dialog) setUpShortcuts(dialog);
    document.body.addEventListener("htmx:historyRestore", fillFiltersFromURL);
    window.addEventListener("pageshow", fillFiltersFromURL);
  });
})();
