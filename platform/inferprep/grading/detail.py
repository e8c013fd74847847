"""What a case ran on and what came back, for the cases whose data the student may see.

A grading opens one ``CaseTrace`` per case (and per counterexample attempt). It *reveals* only for
public examples and for counterexamples, whose inputs are public or freshly generated: there the
comparisons (``expect_tensor``, ``expect_equal``, ``expect_close``), the submission's calls
(``Grading.call``) and the grader's own descriptions (``Grading.show_input``, ``show_result``)
are recorded and become the case's ``CaseDetail``. For a hidden case nothing is recorded, so no
hidden expected value can reach a verdict this way.
"""

from __future__ import annotations

import contextvars
import math
from typing import Any

import torch

from ..verdict import CaseDetail, Difference, TensorDiff

TEXT_LIMIT = 600
"""Characters of one rendered value (the rest is cut with an ellipsis)."""

FIRST_DIFFERENCES = 8
"""How many differing tensor elements a detail lists."""

_CURRENT: contextvars.ContextVar["CaseTrace | None"] = contextvars.ContextVar("inferprep_case_trace", default=None)


class CaseTrace:
    """The record of one case. ``reveal``: whether expected values may be recorded at all."""

    def __init__(self, reveal: bool):
        self.reveal = reveal
        self.input: dict[str, str] = {}
        self.call = ""
        self.check: dict[str, Any] | None = None
        self.failed = False

    def note_check(self, name: str, expected: Any, got: Any, passed: bool, diff: TensorDiff | None = None,
                   describe: bool = False) -> None:
        """Keep the first failing comparison, or else the latest one. ``describe``: str values are
        descriptions, shown as they are (otherwise values, quoted)."""
        if self.failed:
            return
        self.check = {"name": name, "expected": render(expected, describe=describe),
                      "got": render(got, describe=describe), "diff": diff}
        self.failed = not passed

    def detail(self) -> CaseDetail | None:
        if not self.reveal or not (self.input or self.call or self.check):
            return None
        return CaseDetail(input=dict(self.input), call=self.call, **(self.check or {}))

    def __enter__(self) -> "CaseTrace":
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._token)


def revealing() -> CaseTrace | None:
    """The current case's trace when it may record expected values, else None."""
    trace = _CURRENT.get()
    return trace if trace is not None and trace.reveal else None


def render(value: Any, limit: int = TEXT_LIMIT, describe: bool = True) -> str:
    """A short text rendering of an argument or a result: tensors with their shape and dtype and
    at most a few elements per dimension; containers element by element; cut at ``limit``. With
    ``describe`` a str is a description, shown as it is; otherwise it is a value, quoted."""
    text = value if describe and isinstance(value, str) else _render(value, limit)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _render(value: Any, limit: int) -> str:
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu")
        with torch._tensor_str.printoptions(threshold=60, edgeitems=3, precision=6, linewidth=100):  # noqa: SLF001
            body = repr(t.float() if t.dtype in (torch.bfloat16, torch.float16) else t)
        body = body.removeprefix("tensor(").rsplit(", dtype=", 1)[0].rsplit(", device=", 1)[0].rstrip(")")
        return f"tensor {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}: {body}"
    if isinstance(value, (list, tuple)):
        parts, used = [], 0
        for v in value:
            if used > limit:
                parts.append("...")
                break
            parts.append(_render(v, limit))
            used += len(parts[-1]) + 2
        open_, close = ("[", "]") if isinstance(value, list) else ("(", ",)" if len(value) == 1 else ")")
        return open_ + ", ".join(parts) + close
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_render(v, limit)}" for k, v in list(value.items())[:40]) + "}"
    if type(value).__name__ == "Hosted":
        return f"<{type(value.obj).__name__}, hosted by the grader>"
    return repr(value)


def render_call(fn: str, args: tuple, kwargs: dict) -> str:
    parts = [render(a, TEXT_LIMIT, False) for a in args] + [f"{k}={render(v, TEXT_LIMIT, False)}" for k, v in kwargs.items()]
    return render(f"{fn}({', '.join(parts)})", 4 * TEXT_LIMIT)


def tensor_diff(actual: Any, expected: torch.Tensor, rtol: float = 0.0, atol: float = 0.0) -> TensorDiff | None:
    """Compare ``actual`` with ``expected`` elementwise (``|a - e| <= atol + rtol * |e|``; exact for
    integers and bools; NaN equals NaN here). None when ``actual`` is not a tensor."""
    if not isinstance(actual, torch.Tensor):
        return None
    out = TensorDiff(expected_shape=list(expected.shape), got_shape=list(actual.shape),
                     expected_dtype=str(expected.dtype).removeprefix("torch."),
                     got_dtype=str(actual.dtype).removeprefix("torch."), rtol=rtol, atol=atol,
                     total=expected.numel())
    if tuple(actual.shape) != tuple(expected.shape):
        return out
    a, e = actual.detach().to("cpu"), expected.detach().to("cpu")
    if a.is_complex() or e.is_complex():
        return out
    exact = not (a.is_floating_point() or e.is_floating_point())
    a64, e64 = a.to(torch.float64), e.to(torch.float64)
    err = (a64 - e64).abs()
    if exact:
        bad = a64 != e64
    else:
        same = (a64 == e64) | (torch.isnan(a64) & torch.isnan(e64))
        bad = ~same & ~(err <= atol + rtol * e64.abs())
    finite = torch.isfinite(err)
    if finite.any():
        out.max_abs_error = float(err[finite].max())
        nz = finite & (e64 != 0)
        if nz.any():
            out.max_rel_error = float((err[nz] / e64[nz].abs()).max())
    out.mismatched = int(bad.sum())
    for idx in bad.nonzero()[:FIRST_DIFFERENCES].tolist():
        out.first.append(Difference(index=idx, expected=_scalar(e[tuple(idx)]), got=_scalar(a[tuple(idx)])))
    return out


def _scalar(t: torch.Tensor) -> float | int | bool | str:
    v = t.item()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)  # JSON has no NaN or infinity
    return v
