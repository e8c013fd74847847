"""The performance stage: time a correct submission against the reference, from the trusted side.

Run by the judge after every core case passed, for exercises with ``perf = true``, when asked
(``judge.grade(perf=...)``: on by default on CUDA, off on CPU). The trust model is the hidden
cases': nothing the submission's process says is believed.

- **Who times.** The parent (this process) reads its own clock (``clock(what)``, with ``what`` one
  of ``reference``, ``submission``, ``echo``, ``stage``: ``time.perf_counter()`` whatever ``what``
  unless a test injects a fake clock that advances by scripted amounts) around one small request.
  A submission that patches ``time.perf_counter``, CUDA events or the harness in its own process
  changes nothing here.
- **No transfer in the window** (``perf_wire``): the inputs are sent beforehand, untimed, masked
  with a keystream whose key arrives in the timed request; the child unmasks them, runs the call
  and answers with a digest of its outputs' bits (a random linear sketch whose weights it learns
  in that request). The outputs travel afterwards, untimed, and must match the digest: work
  deferred past the reply (a side stream, a background thread, a lazy tensor) shows as a digest
  that does not match, or as a wrong output. Without this the window would time the socket (a few
  GB/s) instead of the kernel (an H200 reads 4.8 TB/s).
- **What the child does.** The harness (loaded before the submission) flushes the L2 cache and
  synchronises the whole device around each timed call (``harness._timed``): a guard that makes
  honest figures comparable, not a boundary.
- **Fresh inputs.** Each repetition draws new inputs from a generator seeded by the grading's salt
  and the repetition's index, after the previous call returned; the warm-up's inputs are never
  used again, and every call's inputs are new tensors (new buffers in the child), so neither a
  cache keyed on data pointers nor a replay of an earlier output helps. Every output of every
  repetition is verified by the grader's ``perf_case``; one wrong output fails the stage.
- **The reference** runs in a child of its own, started like the submission's from the same
  harness with the same limits: the same unmasking, flush, sync and digest costs, and nothing the
  submission's process can reach. The two run interleaved, alternating which goes first, on the
  same inputs, so a change of the machine's load reaches both series alike. While the reference
  (and the overhead below) is timed, every process of the submission's uid is stopped
  (``freeze``): a thread or process it left spinning cannot slow the reference down.
- **Overhead.** Right after its side of each repetition the reference's child runs the same timed request without
  the call (the same inputs unmasked, a digest of as many output bytes: empty tensors of the
  outputs' shapes, or a launch's buffers); the median of these is subtracted from both medians
  before the ratios.
- **Stopping.** ``perf_stats.StoppingRule``: until the median's relative standard error is under
  1% for all three series (submission, reference, overhead), or the time cap.
- **Beside vs alone** (on a GPU): before the submission's child exists the reference is timed
  alone (``_alone``); a reference or overhead median beside the submission more than
  ``ALONE_TOLERANCE`` times its median alone is flagged, never ranked (kernels the submission
  queued before it was paused still run beside the reference).
- **Roofline.** The grader's ``perf_case`` returns the call's minimal work (``PerfWork``: bytes
  moved, FLOPs); on a GPU that ``specs`` knows, a net median below the floor is flagged, never
  ranked.

A grader opts in with ``perf_case(g, side, rng) -> PerfWork``: it draws the inputs from ``rng`` (a
``torch.Generator``) at the benchmark size, makes exactly one timed request through ``side``
(``side.timed_call`` or ``side.timed_launch``; untimed ``side.call`` for set-up like block sizes),
and checks the output with the ``expect_*`` functions (``WrongAnswer`` fails the stage).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
import zlib
from typing import Any, Callable

import torch

from ..catalog import Exercise
from ..grading import Grading, load_module
from ..grading import perf_stats
from ..grading.perf_stats import PerfWork
from ..grading.checks import WrongAnswer, fail
from ..grading.kernels import KernelArg, check_buffers
from ..verdict import PerfResult
from . import freeze, perf_wire
from .process import RunFailed, SubmissionProcess, SubmissionRaised, load_submission

__all__ = ["PerfWork", "PerfSide", "DEFAULT_RULE", "WARMUP", "run_stage", "device_kind"]

DEFAULT_RULE = perf_stats.StoppingRule(target_rse=0.01, min_n=5, max_n=200, cap_s=10.0)
"""1% relative standard error of the median, at least 5 and at most 200 repetitions, 10 s cap."""

WARMUP = 2
"""Untimed repetitions on each side first (Triton's compilation, allocator warm-up); their inputs
are fresh too and their outputs verified, but never used again."""

ALONE_TOLERANCE = 1.25
"""On a GPU, the reference's (and the overhead's) median beside the submission may be at most this
many times its median alone, measured before the submission's child exists; beyond it the figure is
flagged: something slowed the reference down. The submission's processes are stopped while the
reference runs, but a GPU runs on the kernels a stopped process queued before (``freeze``)."""

PERF_TIME_S = 60.0
"""CPU seconds each child of the stage may use (its start-up excluded), the cap's repetitions and
the warm-up included."""


PERF_MEMORY_MIB = 4096
"""Memory limit (MiB) of each child of the stage, when the exercise's own is lower: the benchmark
sizes are larger than the hidden cases', the stage keeps inputs, outputs and the digest's
temporaries at once, and on CUDA the L2 flush buffer (twice the L2) counts too. The exercise's
limit binds in its hidden cases (a memory-limit case must), not here."""


class PerfSide:
    """One side of the comparison (the submission's child or the reference's) as ``perf_case`` sees
    it. One timed request per ``perf_case`` run; its round trip, read on ``clock``, is ``elapsed``."""

    def __init__(self, proc: SubmissionProcess, clock: Callable[[str], float], name: str):
        self.proc, self.clock, self.name = proc, clock, name
        self.elapsed: float | None = None
        self.inner: dict | None = None
        self.value: Any = None

    def reset(self) -> None:
        self.elapsed, self.inner, self.value = None, None, None

    def call(self, fn: str, *args, **kwargs) -> Any:
        """An untimed call (set-up: block sizes, a plan)."""
        return self.proc.call(fn, *args, **kwargs)

    def _timed(self, inner: dict) -> Any:
        """Stage ``inner`` masked, time the request that unmasks and runs it, fetch its outputs and
        check them against the digest committed inside the window (``perf_wire``)."""
        if self.inner is not None:
            raise RuntimeError("perf_case made more than one timed request")
        self.inner = inner
        key, sketch = secrets.randbits(63), secrets.randbits(63)
        self.proc.perf_request({"op": "stage", "inner": perf_wire.mask(inner, key)})
        t0 = self.clock(self.name)
        committed = self.proc.perf_request({"op": "timed", "key": key, "sketch": sketch})
        self.elapsed = self.clock(self.name) - t0
        value = self.proc.perf_request({"op": "fetch"})
        if type(committed) is not int or perf_wire.digest(perf_wire.tensors(value), sketch) != committed:
            fail("the outputs sent after the timed call are not the ones it had when the clock stopped "
                 "(work finished after the call returned, or outputs changed since)")
        self.value = value
        return value

    def timed_call(self, fn: str, *args, **kwargs) -> Any:
        """Call ``fn`` once, timed; returns its value."""
        return self._timed({"op": "call", "fn": fn, "args": args, "kwargs": kwargs})

    def timed_launch(self, kernel: str, grid: tuple[int, ...], *args, **constexprs) -> list[torch.Tensor]:
        """Launch a Triton kernel once, timed, like ``Grading.launch``; returns the outputs' views
        after ``check_buffers`` (no write outside them, inputs unchanged)."""
        tensors = [a for a in args if isinstance(a, KernelArg)]
        wire = [a.wire() if isinstance(a, KernelArg) else a for a in args]
        returned = self._timed({"op": "launch", "kernel": kernel, "grid": [int(x) for x in grid],
                                "args": wire, "constexprs": dict(constexprs)})
        return check_buffers(tensors, returned)

    def grading(self, g: Grading) -> "_SideGrading":
        """``g`` with its calls sent to this side: ``call`` untimed, ``launch`` timed (once). Lets a
        grader reuse its case runner (``run(g, ...)``) for the benchmark."""
        return _SideGrading(g, self)

    def echo(self) -> float:
        """Seconds of the last timed request done again without its work: the same inputs staged,
        unmasked, flushed and synchronised, and a digest of as many output bytes (a launch's
        buffers; for a call, empty tensors of its outputs' shapes and dtypes)."""
        inner = self.inner or {}
        key = secrets.randbits(63)
        self.proc.perf_request({"op": "stage", "inner": perf_wire.mask(inner, key)})
        like = [[list(t.shape), t.dtype] for t in perf_wire.tensors(self.value)] if inner.get("op") == "call" else None
        t0 = self.clock("echo")
        self.proc.perf_request({"op": "timed", "key": key, "sketch": 0, "echo": True, "like": like})
        return self.clock("echo") - t0


class _SideGrading:
    """A ``Grading`` whose ``call`` and ``launch`` go to a ``PerfSide`` (everything else is ``g``'s)."""

    def __init__(self, g: Grading, side: PerfSide):
        self._g, self._side = g, side

    def __getattr__(self, name: str):
        return getattr(self._g, name)

    def call(self, fn: str, *args, **kwargs):
        return self._side.call(fn, *args, **kwargs)

    def launch(self, kernel: str, grid, *args, **constexprs):
        return self._side.timed_launch(kernel, grid, *args, **constexprs)


def wall_clock(what: str) -> float:
    """The stage's clock: ``time.perf_counter()`` (seconds) for every ``what``."""
    return time.perf_counter()


def device_kind(device: str) -> str:
    """``cpu``, or the CUDA device's name as torch reports it (``NVIDIA H100 80GB HBM3``)."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def _seed(salt: int, rep: int) -> int:
    return zlib.crc32(f"perf:{salt}:{rep}".encode()) | (rep << 32)


class _Failed(Exception):
    def __init__(self, status: str, message: str):
        self.status = status
        super().__init__(message)


def _run_side(perf_case, g: Grading, side: PerfSide, seed: int, rep: int, reference: bool) -> PerfWork:
    side.reset()
    who = "the reference" if reference else "your submission"
    try:
        work = perf_case(g, side, torch.Generator().manual_seed(seed))
    except WrongAnswer as e:
        if reference:
            raise _Failed("error", f"the reference failed its own perf check (not your fault): {e}") from None
        raise _Failed("failed", f"a wrong output on fresh inputs at the benchmark size (repetition {rep}): {e}") from None
    except SubmissionRaised as e:
        raise _Failed("error" if reference else "failed", f"{who} raised at the benchmark size: {e}") from None
    except RunFailed as e:
        raise _Failed("error" if reference else "failed", f"{who} stopped at the benchmark size: {e}") from None
    if side.elapsed is None:
        raise _Failed("error", "the grader's perf_case made no timed request (not your fault)")
    return work if isinstance(work, PerfWork) else PerfWork()


def run_stage(exercise: Exercise, code: str, *, device: str, salt: int, sandbox_mode: str | None = None,
              launcher=None, clock: Callable[[str], float] | None = None,
              rule: perf_stats.StoppingRule = DEFAULT_RULE, warmup: int = WARMUP,
              cancel: threading.Event | None = None) -> PerfResult:
    """Time ``code`` against the exercise's reference (see the module's docstring). Never raises for
    anything the submission does: a wrong output or a crash is ``status="failed"``, the platform's
    own failure ``status="error"``. ``cancel``, once set, kills the children (``status="error"``)."""
    clock = clock or wall_clock
    kind = device_kind(device)
    base = dict(device_kind=kind)
    try:
        grader = load_module(exercise.grader_path, f"_inferprep_perf_grader_{exercise.module}")
        perf_case = getattr(grader, "perf_case", None)
        if not callable(perf_case):
            return PerfResult(status="error", message=f"the grader of {exercise.slug} defines no perf_case", **base)
        reference_code = exercise.reference_path.read_text(encoding="utf-8")
    except Exception as e:  # noqa: BLE001
        return PerfResult(status="error", message=f"cannot load the grader: {type(e).__name__}: {e}", **base)
    meta = exercise.meta
    if "triton" in meta.requires:
        from .triton_source import check as check_triton_source
        refused = check_triton_source(code)
        if refused is not None:
            return PerfResult(status="failed", message=refused, **base)
    procs: list[SubmissionProcess] = []

    def start(source: str, forbidden: list[str]) -> SubmissionProcess:
        proc = SubmissionProcess(source, meta.entrypoints, time_s=PERF_TIME_S,
                                 memory_mib=max(meta.limits.memory_mib, PERF_MEMORY_MIB),
                                 device=device, mode=sandbox_mode, launcher=launcher, forbidden=forbidden,
                                 requires=meta.requires, cancel=cancel)
        procs.append(proc)
        return proc

    try:
        ref_proc = start(reference_code, [])
        status, message = load_submission(ref_proc)
        if status is not None:
            return PerfResult(status="error", message=f"the reference's child did not start: {message}", **base)
        alone = None
        if kind != "cpu":
            # The reference timed before the submission's child exists: what it costs with nothing of
            # the submission anywhere (the GPU included).
            g_ref = Grading(ref_proc, device=device, public=False, reference_path=exercise.reference_path, salt=salt)
            alone = _alone(perf_case, g_ref, PerfSide(ref_proc, clock, "reference"), salt=salt, warmup=warmup,
                           n=rule.min_n)
        sub_proc = start(code, list(meta.forbidden))
        status, message = load_submission(sub_proc)
        if status is not None:
            return PerfResult(status="failed", message=f"your submission did not load again: {message}", **base)
        g = Grading(sub_proc, device=device, public=False, reference_path=exercise.reference_path, salt=salt)
        ref, sub = PerfSide(ref_proc, clock, "reference"), PerfSide(sub_proc, clock, "submission")
        return _measure(perf_case, g, ref, sub, salt=salt, clock=clock, rule=rule, warmup=warmup, kind=kind,
                        alone=alone)
    except _Failed as e:
        if cancel is not None and cancel.is_set():
            return PerfResult(status="error", message="the grading was cancelled", **base)
        return PerfResult(status=e.status, message=str(e), **base)
    except Exception as e:  # noqa: BLE001 - the grader's or the platform's fault
        return PerfResult(status="error", message=f"the perf stage failed (not your fault): {type(e).__name__}: {e}", **base)
    finally:
        for proc in procs:
            proc.close()


@contextlib.contextmanager
def _paused(proc: SubmissionProcess):
    """The submission's processes stopped (``freeze.freeze_uid``) for the duration: while the
    reference and the overhead are timed nothing of the submission runs, so a thread or a process
    it left spinning cannot slow them down (its own ratio would look better by as much). A child
    without a uid of its own (unsandboxed, not root) is not paused (docs/security.md)."""
    uid = getattr(proc.child, "uid_used", None)
    if uid is None:
        yield
        return
    try:
        left = freeze.freeze_uid(uid)
        if left:
            raise _Failed("failed", f"{len(left)} thread(s) of your submission could not be paused while the "
                          "reference was timed (the stage pauses them so that they cannot slow the reference)")
        yield
    finally:
        freeze.thaw_uid(uid)


ALONE_REP0 = 1 << 20
"""Repetition numbers of the reference-alone series start here (their inputs are never the stage's)."""


def _alone(perf_case, g: Grading, ref: PerfSide, *, salt: int, warmup: int, n: int) -> tuple[float, float]:
    """(median seconds of the reference's timed request, of its overhead) over ``n`` repetitions
    after ``warmup``, with no child of the submission in existence."""
    times, echoes = [], []
    for i in range(warmup + n):
        rep = ALONE_REP0 + i
        _run_side(perf_case, g, ref, _seed(salt, rep), rep, reference=True)
        echo = ref.echo()
        if i >= warmup:
            times.append(ref.elapsed)
            echoes.append(echo)
    return perf_stats.summarize(times).median_s, perf_stats.summarize(echoes).median_s


def _measure(perf_case, g: Grading, ref: PerfSide, sub: PerfSide, *, salt: int, clock, rule, warmup: int,
             kind: str, alone: tuple[float, float] | None = None) -> PerfResult:
    """Warm up, then interleave the two sides until ``rule`` stops; summarise."""
    sub_t: list[float] = []
    ref_t: list[float] = []
    echo_t: list[float] = []
    work = PerfWork()
    started = None
    rep = 0
    stopped = ""
    while True:
        seed = _seed(salt, rep)
        order = (ref, sub) if rep % 2 == 0 else (sub, ref)
        for side in order:
            if side is ref:
                with _paused(sub.proc):
                    work = _run_side(perf_case, g, ref, seed, rep, reference=True)
                    overhead = ref.echo()
            else:
                _run_side(perf_case, g, sub, seed, rep, reference=False)
        if rep >= warmup:
            if started is None:
                started = clock("stage")
            sub_t.append(sub.elapsed)
            ref_t.append(ref.elapsed)
            echo_t.append(overhead)
            done, stopped = rule.stop(clock("stage") - started, sub_t, ref_t, echo_t)
            if done:
                break
        rep += 1
    s, r, e = perf_stats.summarize(sub_t), perf_stats.summarize(ref_t), perf_stats.summarize(echo_t)
    sub_net, ref_net = s.median_s - e.median_s, r.median_s - e.median_s
    gpu = perf_stats.gpu_spec(kind) if kind != "cpu" else None
    floor = perf_stats.roofline_floor_s(work.bytes_moved, work.flops, gpu) if gpu is not None else None
    result = PerfResult(status="measured", device_kind=kind, median_s=s.median_s, spread_s=s.iqr_s, n=s.n,
                        reference_median_s=r.median_s, reference_spread_s=r.iqr_s, reference_n=r.n,
                        overhead_s=e.median_s, floor_s=floor, converged=stopped == "converged", stopped=stopped)
    if sub_net <= 0 or ref_net <= 0:
        result.message = ("the call is too short to time beside the stage's own overhead (unmasking the inputs, "
                          f"the outputs' digest: {e.median_s * 1e3:.3g} ms): no ratio")
        return result
    result.ratio = sub_net / ref_net
    if alone is not None:
        slower = [(what, beside / by_itself) for what, beside, by_itself in
                  (("reference", r.median_s, alone[0]), ("overhead", e.median_s, alone[1]))
                  if by_itself > 0 and beside > ALONE_TOLERANCE * by_itself]
        if slower:
            result.status, result.flagged = "flagged", True
            result.reason = ("; ".join(f"the {what} took {x:.3g}x its time alone" for what, x in slower)
                             + " beside your submission: something slowed it down (your processes are paused "
                             "while it runs, but work they queued on the GPU runs on): not ranked")
    if floor is not None and floor > 0:
        result.roofline_ratio = sub_net / floor
        if sub_net < floor:
            result.status, result.flagged = "flagged", True
            result.reason = "; ".join(filter(None, [
                result.reason, f"{sub_net * 1e6:.3g} us net is under the roofline floor of {floor * 1e6:.3g} us "
                f"for {kind}: faster than the hardware allows"]))
    return result
