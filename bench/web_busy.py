"""Does the server keep answering pages while the grading pool is busy? Measured in one run.

Starts a real ``inferprep serve`` (local mode, temp database, embedded worker on the warm pool),
times page loads while idle, then queues N hidden-case gradings of sampling-order's reference and
times the same pages while they run. Prints p50/p99 page latency idle vs busy and how long the
gradings took.

    .venv/bin/python bench/web_busy.py [--submissions 12] [--pages 60]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--submissions", type=int, default=12)
    ap.add_argument("--pages", type=int, default=60)
    args = ap.parse_args()
    port = free_port()
    data = tempfile.mkdtemp(prefix="inferprep-bench-")
    env = dict(os.environ, INFERPREP_DATA_DIR=data)
    exe = str(Path(sys.executable).parent / "inferprep")
    server = subprocess.Popen([exe, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as c:
            for _ in range(300):
                try:
                    if c.get("/api/exercises").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            pages = ["/", "/exercises", "/exercises/sampling-order", "/progress", "/api/exercises"]

            def load(n):
                out = []
                for i in range(n):
                    t = time.perf_counter()
                    r = c.get(pages[i % len(pages)])
                    out.append(time.perf_counter() - t)
                    assert r.status_code == 200, (pages[i % len(pages)], r.status_code)
                return out

            load(10)  # warm caches and the fork server
            idle = load(args.pages)
            code = (ROOT / "reference" / "sampling_order.py").read_text()
            t0 = time.perf_counter()
            ids = [c.post("/api/exercises/sampling-order/submissions", json={"code": code, "kind": "submit"}).json()["id"]
                   for _ in range(args.submissions)]
            busy: list[float] = []
            done = threading.Event()

            def poll():
                while not done.is_set():
                    states = [c.get(f"/api/submissions/{i}").json() for i in ids]
                    if all(s["state"] == "done" for s in states):
                        done.set()
                    time.sleep(0.5)

            th = threading.Thread(target=poll, daemon=True)
            th.start()
            while not done.is_set():
                busy += load(5)
            graded = time.perf_counter() - t0
            verdicts = [c.get(f"/api/submissions/{i}").json() for i in ids]
    finally:
        server.terminate()
        server.wait(timeout=30)
    ok = sum(1 for v in verdicts if v.get("status") == "passed")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"idle  pages: n={len(idle):4d}  p50 {statistics.median(idle) * 1000:7.1f} ms  p99 {pct(idle, .99) * 1000:7.1f} ms")
    print(f"busy  pages: n={len(busy):4d}  p50 {statistics.median(busy) * 1000:7.1f} ms  p99 {pct(busy, .99) * 1000:7.1f} ms"
          f"  (ratio of medians {statistics.median(busy) / statistics.median(idle):.1f}x)")
    print(f"{args.submissions} hidden-case gradings of sampling-order: {ok} passed, all done in {graded:.1f} s "
          f"({args.submissions / graded * 60:.0f} per minute while serving pages)")


if __name__ == "__main__":
    main()
