"""Proxy-call throughput: how many calls per second a submission can make to an object hosted in
the grader's process (the stateful exercises' simulators), measured in one run.

Starts a real sandboxed child through the warm pool (the same path grading uses), hosts a tiny
object, and lets the child call it in a loop: from one thread with a scalar, with a 4 KiB and a
400 KiB tensor, and from p threads at once (independent calls; a lock-step barrier like the ring
exercise's). Prints calls per second and microseconds per call (median of repeats).

    .venv/bin/python bench/proxy.py [--calls 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading

import torch

CHILD = '''
import threading, time

def loop(obj, n, payload):
    t = time.perf_counter()
    for _ in range(n):
        obj.echo(payload)
    return time.perf_counter() - t

def threads(objs, n):
    out = [0.0] * len(objs)
    def run(i):
        t = time.perf_counter()
        for _ in range(n):
            objs[i].step(i)
        out[i] = time.perf_counter() - t
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(objs))]
    t0 = time.perf_counter()
    for t in ts: t.start()
    for t in ts: t.join()
    return time.perf_counter() - t0
'''


class Echo:
    def echo(self, x):
        return x


class Step:
    def __init__(self, barrier=None):
        self.barrier = barrier

    def step(self, i):
        if self.barrier is not None:
            self.barrier.wait()
        return i


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from inferprep.runner.process import SubmissionProcess, drain_cleanups
    n = args.calls
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {n} calls per measurement")
    proc = SubmissionProcess(CHILD, ["loop", "threads"], time_s=120, memory_mib=2048)
    assert proc.start()["op"] == "ready"
    try:
        echo = proc.host(Echo(), ["echo"])
        for label, payload in (("scalar", 1), ("4 KiB tensor", torch.zeros(1024)), ("400 KiB tensor", torch.zeros(102400))):
            secs = statistics.median(proc.call("loop", echo, n, payload) for _ in range(args.repeats))
            print(f"  one thread, {label:15s} {n / secs:8.0f} calls/s  {secs / n * 1e6:7.0f} us/call")
        for p in (2, 4, 8):
            for label, barrier in (("independent", None), ("lock-step barrier", True)):
                b = threading.Barrier(p, timeout=30) if barrier else None
                objs = [proc.host(Step(b), ["step"], concurrent=True) for _ in range(p)]
                secs = statistics.median(proc.call("threads", objs, n // p) for _ in range(args.repeats))
                total = (n // p) * p
                print(f"  {p} threads, {label:17s} {total / secs:8.0f} calls/s in all  "
                      f"({(n // p) / secs:6.0f} steps/s per rank)")
    finally:
        proc.close()
        drain_cleanups()


if __name__ == "__main__":
    main()
