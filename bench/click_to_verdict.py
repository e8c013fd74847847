"""Click to verdict on screen, in a real browser: how long after a grading finishes does its verdict
show? Measured in two deployment shapes, side by side:

- local: ``inferprep serve`` (SQLite, the embedded worker; wake-ups in process);
- cohort: ``inferprep serve --cohort --grading-threads 0`` over PostgreSQL plus a separate
  ``inferprep worker`` process (wake-ups by LISTEN/NOTIFY).

For each, Debian's chromium (Playwright) opens sampling-order with its reference solution in the
editor and clicks Run examples ``--n`` times, then Submit ``--n`` times, one grading at a time,
with the real sandboxed judge. Per grading:

- lag = verdict on screen - grading finished: "finished" is the submission's ``finished_at``
  (the server writes it as it records the verdict); "on screen" is the first animation frame
  after the done verdict element entered the page (a MutationObserver, then requestAnimationFrame),
  on the page's clock (``performance.timeOrigin + performance.now()``). Both are this machine's
  clock. Target: median <= 150 ms.
- click to verdict: on screen - the click, on the page's clock;
- grading: finished_at - started_at (the judge's share, for scale).

One warm-up grading per kind and mode (the warm pool starting) is not counted.

    .venv/bin/python bench/click_to_verdict.py [--n 10] [--modes local,cohort] [--pg URL]

The cohort mode needs a PostgreSQL server (``--pg``, default postgres@127.0.0.1:5432, trust auth);
it creates a fresh database and drops it at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from cohort_load import drop_database, free_port, make_database  # noqa: E402

SLUG = "sampling-order"
SECRET = "bench-" + "c" * 40
CHROMIUM = os.environ.get("INFERPREP_CHROMIUM", "/usr/bin/chromium")
TARGET_MS = 150.0
BUTTONS = {"run": "run-btn", "submit": "submit-btn"}

# Records, per verdict element id, when a *done* verdict first reached the screen.
SHOWN_JS = """
window.__shown = {};
new MutationObserver(muts => {
  for (const m of muts) for (const n of m.addedNodes) {
    if (n.nodeType !== 1) continue;
    const v = n.matches('.verdict') ? n : n.querySelector('.verdict');
    if (v && v.dataset.state === 'done' && !(v.id in window.__shown)) {
      window.__shown[v.id] = null;
      requestAnimationFrame(() => { window.__shown[v.id] = performance.timeOrigin + performance.now(); });
    }
  }
}).observe(document, {childList: true, subtree: true});
"""
CLICK_JS = """id => { const t = performance.timeOrigin + performance.now(); document.getElementById(id).click(); return t; }"""
NEW_DONE_JS = """old => { const v = document.querySelector('#verdict .verdict');
                          return v && !old.includes(v.id) && window.__shown[v.id]; }"""


def epoch_ms(iso: str) -> float:
    t = datetime.fromisoformat(iso)
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp() * 1000


def wait_healthy(base: str, procs: list[subprocess.Popen], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(base + "/healthz", timeout=2).read() == b"ok":
                return
        except OSError:
            pass
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.3)
    raise SystemExit(f"the server at {base} did not start (logs in the temp folder)")


def start_local(tmp: Path) -> tuple[str, list[subprocess.Popen], dict]:
    port = free_port()
    env = {**os.environ, "INFERPREP_DATA_DIR": str(tmp)}
    env.pop("INFERPREP_DATABASE_URL", None)
    procs = [subprocess.Popen([sys.executable, "-m", "inferprep.cli", "serve", "--host", "127.0.0.1",
                               "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=open(tmp / "serve.err", "w"))]
    return f"http://127.0.0.1:{port}", procs, {}


def start_cohort(tmp: Path, url: str) -> tuple[str, list[subprocess.Popen], dict]:
    from inferprep import auth, db
    db.prepare(url)
    with db.session_scope(url) as s:
        user = auth.create_user(s, "bench@bench.test", "Bench", "bench-password")
        token = auth.create_session(s, user.id, secret=SECRET, hours=2)
    port = free_port()
    env = {**os.environ, "INFERPREP_DATABASE_URL": url, "INFERPREP_SECRET_KEY": SECRET, "INFERPREP_DATA_DIR": str(tmp)}
    procs = [subprocess.Popen([sys.executable, "-m", "inferprep.cli", "serve", "--cohort", "--grading-threads", "0",
                               "--host", "127.0.0.1", "--port", str(port)], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=open(tmp / "serve.err", "w")),
             subprocess.Popen([sys.executable, "-m", "inferprep.cli", "worker", "--device", "cpu", "--concurrency", "2",
                               "--name", "bench-worker"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=open(tmp / "worker.err", "w"))]
    return f"http://127.0.0.1:{port}", procs, {"name": "inferprep_session", "value": token}


def measure(browser, base: str, cookie: dict, n: int, code: str) -> dict[str, list[dict]]:
    ctx = browser.new_context(base_url=base, viewport={"width": 1366, "height": 900})
    if cookie:
        ctx.add_cookies([{**cookie, "url": base}])
    ctx.add_init_script(SHOWN_JS)
    page = ctx.new_page()
    page.set_default_timeout(300_000)
    page.goto(f"/exercises/{SLUG}")
    page.wait_for_function("window.inferprepEditor !== undefined")
    page.evaluate("code => window.inferprepEditor.setValue(code)", code)
    out: dict[str, list[dict]] = {}
    for kind, button in BUTTONS.items():
        rows = []
        for i in range(n + 1):
            before = page.evaluate("[...document.querySelectorAll('.verdict')].map(v => v.id)")
            clicked = page.evaluate(CLICK_JS, button)
            page.wait_for_function(NEW_DONE_JS, arg=before)
            vid = page.evaluate("document.querySelector('#verdict .verdict').id")
            shown = page.evaluate("id => window.__shown[id]", vid)
            sub = page.request.get(f"/api/submissions/{vid.removeprefix('verdict-')}").json()
            if sub["status"] != "passed":
                raise SystemExit(f"{kind} #{sub['id']} did not pass: {sub['status']} {sub['verdict']['message']}")
            finished, started = epoch_ms(sub["finished_at"]), epoch_ms(sub["started_at"])
            if i:   # the first of each kind warms up
                rows.append({"lag": shown - finished, "click": shown - clicked, "grading": finished - started})
        out[kind] = rows
    ctx.close()
    return out


def summary(rows: list[dict], key: str) -> str:
    xs = sorted(r[key] for r in rows)
    return f"{statistics.median(xs):7.0f} ({xs[0]:.0f}-{xs[-1]:.0f})"


def report(results: dict[str, dict[str, list[dict]]], n: int) -> bool:
    modes = list(results)
    titles = {"local": "local (SQLite, embedded)", "cohort": "cohort (PostgreSQL, worker)"}
    print(f"\nclick to verdict, sampling-order, real judge; median (min-max) in ms over {n} gradings each\n")
    print(f"{'':34}" + "".join(f"{titles[m]:>30}" for m in modes))
    ok = True
    for kind, label in (("run", "Run examples"), ("submit", "Submit")):
        for key, what in (("lag", "on screen - finished"), ("click", "click to verdict"), ("grading", "grading")):
            print(f"{label + ': ' + what:34}" + "".join(f"{summary(results[m][kind], key):>30}" for m in modes))
        for m in modes:
            med = statistics.median(r["lag"] for r in results[m][kind])
            ok &= med <= TARGET_MS
    print(f"\ntarget: median (on screen - finished) <= {TARGET_MS:.0f} ms: {'met' if ok else 'NOT met'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="gradings per kind and mode (plus one warm-up)")
    ap.add_argument("--modes", default="local,cohort", help="local, cohort or both")
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
                    help="an admin URL of the PostgreSQL server for the cohort mode")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    code = (ROOT / "reference" / "sampling_order.py").read_text(encoding="utf-8")
    chromium = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run"])
        for mode in args.modes.split(","):
            tmp = Path(tempfile.mkdtemp(prefix=f"inferprep-ctv-{mode}-"))
            dbname = None
            if mode == "cohort":
                dbname, url = make_database(args.pg)
                base, procs, cookie = start_cohort(tmp, url)
            else:
                base, procs, cookie = start_local(tmp)
            try:
                wait_healthy(base, procs)
                results[mode] = measure(browser, base, cookie, args.n, code)
            finally:
                for proc in procs:
                    proc.terminate()
                for proc in procs:
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                if dbname:
                    drop_database(args.pg, dbname)
        browser.close()
    return 0 if report(results, args.n) else 1


if __name__ == "__main__":
    sys.exit(main())
