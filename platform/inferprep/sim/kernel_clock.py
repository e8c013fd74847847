"""Clocks for timing a kernel: one interface, three implementations (kernel-timing exercise).

The interface a timing loop is written against (``Timer``)::

    ev = timer.record()          # enqueue a timestamp on the device stream; returns an event id
    timer.synchronize()          # block the host until everything queued has finished
    s = timer.elapsed(ev0, ev1)  # seconds between two recorded events; both must have completed,
                                 # else RuntimeError (CUDA: cudaErrorNotReady)

plus two callables, ``kernel()`` (launch the work once) and ``flush()`` (launch a write over a
buffer larger than the L2 cache so the next kernel starts cold).

- ``CudaEventTimer``: CUDA events (``torch.cuda.Event(enable_timing=True)``) on the current
  stream; ``elapsed`` is ``start.elapsed_time(end) / 1e3``. The GPU timestamps an event when
  it reaches it in stream order. The interval excludes the host's launch overhead only while
  the host is ahead of the GPU: if the stream is idle when the start event is reached, the GPU
  stamps it at once and then waits for the kernel's launch, and that wait is in the interval.
  Work queued before the start event (the L2 flush, as in Triton's ``do_bench``) keeps the
  host ahead.
- ``CpuTimer``: the host's monotonic clock (``time.perf_counter``); CPU work is synchronous, so
  ``synchronize`` does nothing.
- ``SimulatedDevice``: a deterministic model of an asynchronous device, what the grader hosts.
  Host time advances only by launch overhead and by ``synchronize``; the stream runs work in
  order, and a launch reaches the stream only once its host-side launch call has returned
  (``launch_s`` after it began), so on an idle stream a kernel starts ``launch_s`` after the
  host called it; each flush takes its own (seeded) time around ``flush_s``; a kernel launched right
  after itself (no flush between) finds its data in L2 and runs faster; the first launches pay a one-off start-up cost (JIT compilation, autotuning, lazy
  initialisation); a few launches are slowed by interference (outliers). Every launch is
  logged (``log``) with its true duration, so a grader can compare what a timing loop reports
  with what happened.

``l2_flush(device)`` builds a real flush callable (a 256 MiB ``zero_()``, as Triton's
``do_bench`` does), larger than any current L2 (H100: 50 MB).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

__all__ = ["CudaEventTimer", "CpuTimer", "SimulatedDevice", "Launch", "Handle", "l2_flush"]


class CudaEventTimer:
    """CUDA events on the current stream (requires a GPU)."""

    def __init__(self):
        import torch
        self._torch = torch
        self._events: list = []

    def record(self) -> int:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record()
        self._events.append(ev)
        return len(self._events) - 1

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def elapsed(self, start: int, end: int) -> float:
        return self._events[start].elapsed_time(self._events[end]) / 1e3


class CpuTimer:
    """The host's monotonic clock; synchronous device."""

    def __init__(self):
        self._stamps: list[float] = []

    def record(self) -> int:
        self._stamps.append(time.perf_counter())
        return len(self._stamps) - 1

    def synchronize(self) -> None:
        pass

    def elapsed(self, start: int, end: int) -> float:
        return self._stamps[end] - self._stamps[start]


def l2_flush(device: str = "cpu", nbytes: int = 256 << 20):
    """A callable that overwrites ``nbytes`` on ``device`` (evicting the L2 cache)."""
    import torch
    buf = torch.empty(nbytes // 4, dtype=torch.int32, device=device)
    return lambda: buf.zero_()


@dataclass
class Launch:
    """One unit of work the simulated stream ran."""

    what: str               # "kernel" | "flush"
    index: int              # kernel launches are numbered 0, 1, ...
    start: float            # device seconds
    duration: float
    cold: bool = True       # kernel only: no kernel ran since the last flush (or ever)


@dataclass
class SimulatedDevice:
    """A deterministic asynchronous device. All times in seconds.

    Args:
        base_s: a kernel's cold-cache duration before jitter.
        warm_factor: duration multiplier when the kernel's inputs are still in L2.
        startup_launches: how many first launches pay ``startup_s`` extra.
        startup_s: one-off start-up cost (JIT, autotune, lazy init).
        jitter: relative standard deviation of the normal launch-to-launch noise.
        outlier_rate: fraction of launches slowed by interference, by 1.5x to 4x.
        flush_s: a flush's mean duration.
        flush_jitter: relative standard deviation of a flush's duration (each flush draws its
            own, seeded: a flush is not a constant that can be measured once and subtracted).
        launch_s: host time one launch (kernel or flush) costs; the work reaches the stream
            when the launch call returns.
        seed: seed of the noise.
    """

    base_s: float = 100e-6
    warm_factor: float = 0.6
    startup_launches: int = 2
    startup_s: float = 20e-3
    jitter: float = 0.02
    outlier_rate: float = 0.1
    flush_s: float = 60e-6
    flush_jitter: float = 0.05
    launch_s: float = 5e-6
    seed: int = 0
    host: float = 0.0
    stream: float = 0.0
    log: list[Launch] = field(default_factory=list)
    events: list[float] = field(default_factory=list)
    not_ready: int = 0
    _warm: bool = False
    _kernels: int = 0
    _flushes: int = 0

    def _enqueue(self, duration: float) -> float:
        self.host += self.launch_s             # the launch call returns: the work is queued now
        start = max(self.stream, self.host)    # an idle stream starts it; a busy one queues it
        self.stream = start + duration
        return start

    def _duration(self, i: int) -> float:
        rng = random.Random(self.seed * 1_000_003 + i)
        d = self.base_s * max(0.5, 1.0 + self.jitter * rng.gauss(0.0, 1.0))
        if rng.random() < self.outlier_rate:
            d *= rng.uniform(1.5, 4.0)
        if self._warm:
            d *= self.warm_factor
        if i < self.startup_launches:
            d += self.startup_s
        return d

    # -- what a timing loop calls ---------------------------------------------------------------
    def kernel(self) -> None:
        i = self._kernels
        d = self._duration(i)
        start = self._enqueue(d)
        self.log.append(Launch("kernel", i, start, d, cold=not self._warm))
        self._kernels += 1
        self._warm = True

    def _flush_duration(self, j: int) -> float:
        rng = random.Random(f"flush:{self.seed}:{j}")
        return self.flush_s * max(0.5, 1.0 + self.flush_jitter * rng.gauss(0.0, 1.0))

    def flush(self) -> None:
        d = self._flush_duration(self._flushes)
        self._flushes += 1
        start = self._enqueue(d)
        self.log.append(Launch("flush", -1, start, d))
        self._warm = False

    def record(self) -> int:
        self.events.append(max(self.stream, self.host))
        return len(self.events) - 1

    def synchronize(self) -> None:
        self.host = max(self.host, self.stream)

    def elapsed(self, start: int, end: int) -> float:
        for ev in (start, end):
            if isinstance(ev, bool) or not isinstance(ev, int) or not 0 <= ev < len(self.events):
                raise ValueError(f"unknown event {ev!r}")
        if max(self.events[start], self.events[end]) > self.host:
            self.not_ready += 1
            raise RuntimeError("event not complete (cudaErrorNotReady): synchronize before reading it")
        return self.events[end] - self.events[start]

    # -- views for a grader ---------------------------------------------------------------------
    def kernels(self) -> list[Launch]:
        return [x for x in self.log if x.what == "kernel"]


class Handle:
    """One callable view of a device method (``SimulatedDevice.kernel`` or ``.flush``) that a
    grader can host as its own object."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self) -> None:
        self._fn()

