"""The grader-side API that ``graders/<module>.py`` and ``exercises/<slug>/examples.py`` import.

A grader (or the public examples file) defines ``grade(g: Grading) -> None`` and, inside it,
opens one ``g.case(name)`` per test case::

    from inferprep.grading import Grading, expect_tensor

    def grade(g: Grading) -> None:
        ref = g.reference()                      # the trusted reference, parent-side only
        for seed in range(8):
            with g.case(f"random-{seed}"):
                x = torch.randn(4, 16, generator=g.rng(seed))
                out = g.call("softmax", x.to(g.device))      # runs in the sandboxed child
                expect_tensor(out, ref.softmax(x), rtol=1e-6, atol=1e-9)

For the public examples (and counterexamples) the verdict shows, per case, the submission's last
call with its arguments, what the ``expect_*`` checks compared (expected and got; for tensors the
first differing elements and the largest errors) and what ``g.show_input`` / ``g.show_result``
describe; for hidden cases none of this is recorded. A grader may also define
``counterexample(g, trial)`` (see ``grading.counterexample``): after a failing core case the judge
searches small fresh inputs for one where the submission and the reference disagree.

Inside a case, ``WrongAnswer`` (from the ``expect_*`` checks or ``fail``) fails the case as a wrong
answer; an exception raised by the submission fails it as a runtime error (``g.raises`` checks for
an expected one); a dead child (time, memory, output limit, crash) fails this case and every
later one. Any other exception comes from the grader itself and becomes an internal error, never
charged to the submission.
"""

from __future__ import annotations

import contextlib
import secrets
import importlib.util
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import torch

from ..runner.process import CallRecord, Hosted, RunFailed, SubmissionProcess, SubmissionRaised
from ..verdict import CORE, GROUPS, INPUT_CHECKS, CaseResult, Status
from .checks import WrongAnswer, expect_close, expect_device, expect_equal, expect_tensor, fail
from .counterexample import Trial
from .detail import CaseTrace, render, render_call, revealing, tensor_diff
from .kernels import KernelArg, check_buffers, expect_block_sizes, kernel_input, kernel_output

__all__ = ["CORE", "INPUT_CHECKS", "CaseSelection", "Grading", "GraderError", "KernelArg", "WrongAnswer", "SubmissionRaised", "Trial",
           "expect_close", "expect_block_sizes", "expect_device", "expect_equal", "expect_tensor", "fail", "kernel_input", "kernel_output",
           "load_module"]


class GraderError(Exception):
    """The grader itself is broken (an internal error)."""


class StopGrading(BaseException):
    """Raised out of a failed case when grading fail-fast (``check-exercise`` on the stub and the
    known-wrong variants only needs to know that they fail). A BaseException so that a grader's
    own ``except Exception`` cannot swallow it."""


class SkipCase(BaseException):
    """Raised at the first call to the submission in a case that ``CaseSelection.only`` leaves
    out; the case's context manager swallows it. A BaseException so that a grader's own
    ``except Exception`` cannot."""


@dataclass
class CaseSelection:
    """Which hidden cases a grading runs, and what each case called (mutation testing only).

    ``only``: None runs every case; a set of case names runs those, and every other case stops at
    its first call to the submission (``call``, ``raises``, ``call_spmd``, ``launch``) and is left
    out of the verdict (a case that never calls the submission runs whole). ``skip``: the cases
    left out that way, by exclusion: a case whose name it does not list runs (under another salt a
    grader may name cases that the salt a selection was made under never produced). ``calls`` is filled in
    as the grading goes: case name -> the submission functions (entrypoints, kernels) it called.
    A grader that carries state from one case to the next may behave differently when cases are
    left out; ``inferprep.mutate`` grades the reference under a selection before trusting it."""

    only: frozenset[str] | None = None
    calls: dict[str, set[str]] = field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    salted: set[str] = field(default_factory=set)
    """Filled in as the grading goes: the cases that ended at or after the grader's first read of
    ``Grading.salt``. Every other case ran before the grading read its salt, so for the same
    submission its data, checks and what it leaves behind are the same under every salt (every
    random choice of a grader derives from the salt): a grading under another salt repeats them.
    Whether a case is in this set is itself the same under every salt for the same submission
    (all that ran before the first read was); another submission may move the first read."""


def load_module(path: Path, name: str) -> ModuleType:
    """Import a trusted Python file by path under a private module name."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GraderError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Grading:
    """What a grader sees: the submission (``call``, ``raises``, ``host``) and its cases."""

    def __init__(self, proc: SubmissionProcess, *, device: str, public: bool, reference_path: Path,
                 progress=None, fail_fast: bool | str = False, salt: int | None = None,
                 selection: CaseSelection | None = None):
        self.proc = proc
        self._selection = selection
        self._case: str | None = None  # the name of the case running now
        self.device = torch.device(device)
        self.public = public
        self.results: list[CaseResult] = []
        self._reference_path = reference_path
        self._reference: ModuleType | None = None
        self._progress = progress
        self._case_start_record = 0
        self.internal: str | None = None
        self.fail_fast = CORE if fail_fast is True else (fail_fast or None)
        """None, or the group whose first failing case stops the grading (``check-exercise`` only
        needs to know that a stub or a known-wrong variant fails the group it targets)."""
        self.died_in: str | None = None
        """The group of the case in which the submission's process stopped, if it did."""
        self._salt = secrets.randbits(63) if salt is None else int(salt)
        self._salt_read = False

    @property
    def salt(self) -> int:
        """The grading's secret (fresh per grading unless replaying one): every random choice a
        grader makes (hidden data, case order, a hosted specimen's behaviour) derives from it, never
        from the submission's code. Its first read is noted (``CaseSelection.salted``)."""
        self._salt_read = True
        return self._salt

    # -- the submission -------------------------------------------------------------------------
    def call(self, fn: str, *args, **kwargs) -> Any:
        """Call the submission's ``fn`` in the child; returns its decoded result."""
        self._select(fn)
        self._note_call(fn, args, kwargs)
        return self.proc.call(fn, *args, **kwargs)

    def _select(self, fn: str) -> None:
        """Before a call to the submission's ``fn``: record it for the ``CaseSelection``, or stop
        a case the selection leaves out (``SkipCase``)."""
        sel, case = self._selection, self._case
        if sel is None or case is None:
            return
        if (sel.only is not None and case not in sel.only) or case in sel.skip:
            raise SkipCase(case)
        sel.calls.setdefault(case, set()).add(fn)

    @staticmethod
    def _note_call(fn: str, args: tuple, kwargs: dict) -> None:
        trace = revealing()
        if trace is not None:
            trace.call = render_call(fn, args, kwargs)

    def call_spmd(self, fn: str, calls: list[tuple[tuple, dict]]) -> list[Any]:
        """SPMD: run ``fn`` once per rank, concurrently (one child thread per rank), with
        ``calls[r] = (args, kwargs)``; returns the per-rank results. If a rank raised,
        ``SubmissionRaised`` (with ``.rank`` and ``.per_rank``) propagates."""
        self._select(fn)
        trace = revealing()
        if trace is not None:
            trace.call = f"{fn} on {len(calls)} ranks at once, each with the arguments below"
            trace.input = {f"rank {r}": render_call(fn, tuple(a), dict(k)) for r, (a, k) in enumerate(calls)}
        return self.proc.call_spmd(fn, calls)

    def launch(self, kernel: str, grid: tuple[int, ...], *args, **constexprs) -> list[torch.Tensor]:
        """Launch the submission's Triton kernel ``kernel[grid](*args, **constexprs)`` in the child.

        ``args``: ints, floats and ``KernelArg`` tensors laid out by ``kernel_input`` /
        ``kernel_output`` (guard bands, row gaps: pass ``arg.stride[i]`` for the kernel's strides);
        ``constexprs``: the block sizes and flags, by parameter name. Returns the outputs' tensors
        in argument order, after checking that the kernel wrote nothing outside them and left its
        inputs unchanged (``WrongAnswer`` otherwise). The kernel must be a ``@triton.jit``
        function that compiles as Triton (a runtime error otherwise)."""
        self._select(kernel)
        tensors = [a for a in args if isinstance(a, KernelArg)]
        wire = [a.wire() if isinstance(a, KernelArg) else a for a in args]
        returned = self.proc.launch(kernel, tuple(int(x) for x in grid), wire, constexprs)
        return check_buffers(tensors, returned)

    def expect_on_device(self, value: Any, name: str = "output") -> Any:
        """``expect_device(value, g.device)``: every tensor the submission returned is on this
        grading's device (a CPU tensor in a CUDA grading is a wrong answer saying so)."""
        return expect_device(value, self.device, name=name)

    def seed_torch(self, seed: int) -> None:
        """Seed torch's global generators in the child (``torch.manual_seed(seed)``, CPU and CUDA).
        Then a call that should draw from them (a ``generator=None`` argument) can be compared with
        the same call given ``torch.Generator(device).manual_seed(seed)``: a submission that uses a
        private generator instead gives other draws. Take the seed from ``g.salt``."""
        self.proc.seed_torch(seed)

    def raises(self, exc_name: str, fn: str, *args, **kwargs) -> SubmissionRaised:
        """Require ``fn(*args, **kwargs)`` to raise ``exc_name`` (or a subclass of it)."""
        self._select(fn)
        self._note_call(fn, args, kwargs)
        try:
            value = self.proc.call(fn, *args, **kwargs)
        except SubmissionRaised as e:
            if e.is_a(exc_name):
                return e
            fail(f"expected {exc_name}, but {fn} raised {str(e)[:200]}")
        fail(f"expected {exc_name} from {fn}, but it returned a value of type {type(value).__name__}")

    def host(self, obj: Any, methods, attrs: dict | None = None, concurrent: bool = False) -> Hosted:
        """Host ``obj`` for the submission: pass the returned handle as an argument to ``call`` and
        the submission receives a proxy whose ``methods`` cross the wire to ``obj``."""
        return self.proc.host(obj, methods, attrs, concurrent)

    @property
    def calls(self) -> list[CallRecord]:
        """Proxy calls the submission made during the current case."""
        return self.proc.records[self._case_start_record:]

    # -- what the student sees of a public example or a counterexample ---------------------------
    @staticmethod
    def show_input(**values: Any) -> None:
        """Describe the current case's input (name -> value; a str is shown as it is, anything else
        rendered, tensors with shape and dtype). Shown for public examples and counterexamples
        only; in a hidden case this does nothing, so a grader may call it anywhere."""
        trace = revealing()
        if trace is not None:
            trace.input.update({k: render(v) for k, v in values.items()})

    @staticmethod
    def show_result(expected: Any, got: Any, name: str = "output", rtol: float = 0.0, atol: float = 0.0) -> None:
        """Show what the reference and the submission produced where no ``expect_*`` check compares
        them directly (a schedule the parent observed, a list of events; a str is shown as it is;
        two tensors with their differences beyond ``atol + rtol * |expected|``). A later failing
        check replaces it; hidden cases record nothing."""
        trace = revealing()
        if trace is not None:
            diff = tensor_diff(got, expected, rtol, atol) if isinstance(expected, torch.Tensor) else None
            trace.note_check(name, expected, got, True, diff, describe=True)

    @property
    def failed_cases(self) -> list[str]:
        """Names of the core cases that failed so far."""
        return [r.name for r in self.results if not r.passed and r.group == CORE]

    # -- trusted helpers ------------------------------------------------------------------------
    def reference(self) -> ModuleType:
        """The reference solution, imported in this (trusted) process only."""
        if self._reference is None:
            self._reference = load_module(self._reference_path, f"_inferprep_reference_{self._reference_path.stem}")
        return self._reference

    @staticmethod
    def rng(seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)

    # -- cases ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def case(self, name: str, points: float = 1.0, group: str = CORE) -> Iterator[None]:
        """One hidden case. ``group``: ``CORE`` (the task on valid inputs, edge cases included;
        decides the verdict) or ``INPUT_CHECKS`` (a ValueError the statement promises; scored
        beside the verdict). Run input checks after the core cases: a child that dies in one
        stops every later case."""
        if group not in GROUPS:
            raise GraderError(f"case group must be one of {GROUPS}, not {group!r}")
        t0 = time.perf_counter()
        self._case_start_record = len(self.proc.records)
        if getattr(self.proc, "recorder", None) is not None:
            self.proc.recorder.case(name)
        status, message = Status.PASSED, ""
        if self.proc.dead is not None:
            try:
                yield
            except Exception:  # noqa: BLE001 - the body cannot reach a dead submission
                pass
            self._note_salted(name)
            self._record(name, Status(self.proc.dead.status),
                         "not run: the submission process stopped in an earlier case", 0.0, points, group)
            return
        trace = CaseTrace(reveal=self.public)
        self._case = name
        try:
            with trace:
                yield
        except SkipCase:
            self._note_salted(name)
            return  # left out by the CaseSelection: not part of the verdict
        except WrongAnswer as e:
            status, message = Status.WRONG_ANSWER, str(e)
        except SubmissionRaised as e:
            status = Status.RUNTIME_ERROR
            message = f"{e}\n{e.traceback}".strip()
        except RunFailed as e:
            status, message = e.status, str(e)
            if self.died_in is None:
                self.died_in = group
        except Exception as e:  # noqa: BLE001 - the grader is broken: internal error
            import traceback
            status = Status.INTERNAL_ERROR
            message = "the grader failed (not your fault): " + f"{type(e).__name__}: {e}"
            self.internal = "".join(traceback.format_exception(e))
        finally:
            self._case = None
        self._note_salted(name)
        self._record(name, status, message, time.perf_counter() - t0, points, group, trace.detail())
        if self.fail_fast is not None and status != Status.PASSED and (group == self.fail_fast or self.proc.dead):
            raise StopGrading(name)

    def _note_salted(self, name: str) -> None:
        if self._salt_read and self._selection is not None:
            self._selection.salted.add(name)

    def _record(self, name, status, message, seconds, points, group=CORE, detail=None) -> None:
        r = CaseResult(name=name, passed=status == Status.PASSED, status=status, message=message[:8000],
                       seconds=round(seconds, 6), points=points, group=group, detail=detail)
        self.results.append(r)
        if self._progress is not None:
            self._progress(r)
