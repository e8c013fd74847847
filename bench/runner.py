"""Grading overhead, warm pool vs cold start, measured in one run.

overhead = wall time from grade() request to verdict  -  time spent inside the grader's cases
(the grader's and the submission's own compute). Uses the runner fixture exercise add-vectors
(three tiny cases), so overhead dominates. Also: concurrent submissions, submissions per
minute, and the time to grade every catalog exercise's reference on CPU.

    .venv/bin/python bench/runner.py [--n 20] [--concurrency 4] [--skip-catalog] [--sandbox auto|bwrap|none]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "content"
CODE = "def add(x, y):\n    return x + y\n"


def one(launcher, mode):
    from inferprep import catalog
    from inferprep.runner import judge
    ex = catalog.get("add-vectors")
    t0 = time.perf_counter()
    v = judge.grade(ex, CODE, device="cpu", sandbox_mode=mode, launcher=launcher)
    wall = time.perf_counter() - t0
    assert v.ok, (v.status, v.message)
    return wall, wall - sum(c.seconds for c in v.cases)


def summary(xs):
    xs = sorted(xs)
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return statistics.median(xs), q(0.1), q(0.9)


def fmt(ms):
    med, lo, hi = ms
    return f"median {med * 1000:7.1f} ms  (p10 {lo * 1000:6.1f}, p90 {hi * 1000:6.1f})"


def layer_costs(n: int, mode: str) -> None:
    """What the isolation layers of issue 11 cost per submission: the warm overhead with the
    seccomp filter on and off (one run, interleaved), and, measured apart in a forked root process,
    loading the filter and creating the per-child namespaces and /tmp."""
    from inferprep.runner import forkserver, sandbox, scopes, syscalls
    on, off = [], []
    for _ in range(n):
        for flag, into in (("1", on), ("0", off)):
            os.environ["INFERPREP_SECCOMP"] = flag
            into.append(one(forkserver.launch, mode)[1])
    os.environ.pop("INFERPREP_SECCOMP", None)
    print(f"warm overhead, seccomp on  {fmt(summary(on))}")
    print(f"warm overhead, seccomp off {fmt(summary(off))}   (on/off {statistics.median(on) / statistics.median(off):.2f}x)")
    if os.geteuid() != 0:
        return
    r, w = os.pipe()
    times = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            t0 = time.perf_counter()
            scopes.isolate(65000, 128, [str(r) for r in sandbox.allowed_roots()], sandbox.covered_writable())
            t1 = time.perf_counter()
            syscalls.install()
            t2 = time.perf_counter()
            os.write(w, f"{t1 - t0} {t2 - t1}\n".encode())
            os._exit(0)
        os.waitpid(pid, 0)
        times.append([float(x) for x in os.read(r, 100).split()])
    ns, filt = zip(*times)
    print(f"per child: namespaces + tmpfs {statistics.median(ns) * 1000:.2f} ms, "
          f"seccomp load {statistics.median(filt) * 1000:.2f} ms (medians of {n}, forked root process)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--sandbox", default=None)
    ap.add_argument("--skip-catalog", action="store_true")
    args = ap.parse_args()

    os.environ["INFERPREP_CONTENT_ROOT"] = str(FIXTURE)
    from inferprep.runner import forkserver, sandbox
    mode = sandbox.sandbox_mode(args.sandbox)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; sandbox: {mode}; "
          f"python {sys.version.split()[0]}")
    why = forkserver.warm_available()
    if why:
        print(f"warm pool unavailable here: {why}")
    one(forkserver.launch, mode)  # start the fork server (its cold start is not per-submission)

    res = {}
    for name, launcher in (("cold", sandbox.launch), ("warm", forkserver.launch)):
        walls, overs = zip(*(one(launcher, mode) for _ in range(args.n)))
        res[name] = (walls, overs)
        print(f"{name:>4} one at a time  overhead {fmt(summary(overs))}   wall {fmt(summary(walls))}")
    ratio = statistics.median(res["cold"][1]) / statistics.median(res["warm"][1])
    print(f"cold/warm overhead ratio (medians): {ratio:.1f}x")

    layer_costs(args.n, mode)

    for name, launcher in (("cold", sandbox.launch), ("warm", forkserver.launch)):
        n = args.n
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            out = list(pool.map(lambda _: one(launcher, mode), range(n)))
        elapsed = time.perf_counter() - t0
        overs = [o for _, o in out]
        print(f"{name:>4} x{args.concurrency} concurrent overhead {fmt(summary(overs))}   "
              f"throughput {n / elapsed * 60:6.0f} submissions/min")

    if not args.skip_catalog:
        del os.environ["INFERPREP_CONTENT_ROOT"]
        from inferprep import catalog
        from inferprep.runner import judge
        print("\nreference of every exercise on CPU (warm pool):")
        total = 0.0
        for ex in catalog.all_exercises():
            t0 = time.perf_counter()
            v = judge.grade(ex, ex.reference_path.read_text(), device="cpu", sandbox_mode=mode)
            dt = time.perf_counter() - t0
            total += dt
            print(f"  {ex.slug:32s} {v.status.value:14s} {v.passed:3d}/{v.total:<3d} {dt:6.2f} s")
        print(f"  {'total':32s} {'':14s} {'':7s} {total:6.2f} s")
    forkserver.shutdown()


if __name__ == "__main__":
    main()
