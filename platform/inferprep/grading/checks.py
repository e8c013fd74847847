"""Comparisons for graders. Each raises ``WrongAnswer`` with a message that says what was wrong
without printing hidden expected tensors (it names shapes, dtypes, counts and the worst error).

A float checker rejects NaN even where NaN is expected (DMOJ's rule); use ``allow_nan=True`` only
where the statement defines NaN as the answer.

For public examples and counterexamples (never hidden cases) each check also records what it
compared, expected and got (a tensor's first differences and largest errors), into the case's
detail (``detail.CaseTrace``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .detail import revealing, tensor_diff


class WrongAnswer(AssertionError):
    """The submission's output is wrong; the message is shown to the user."""


def fail(message: str) -> None:
    raise WrongAnswer(message)


def _where(name: str) -> str:
    return f"{name}: " if name else ""


def expect_tensor(actual: Any, expected: torch.Tensor, *, name: str = "output", rtol: float = 0.0,
                  atol: float = 0.0, dtype: torch.dtype | None = None, check_device: bool = True,
                  allow_nan: bool = False) -> torch.Tensor:
    """Check ``actual`` is a tensor of ``expected``'s shape (and ``dtype``, default expected's) and
    close to it: ``|a - e| <= atol + rtol * |e|`` elementwise (exact when both are 0).
    Returns ``actual`` on success."""
    _noted(lambda: _expect_tensor(actual, expected, name, rtol, atol, dtype, check_device, allow_nan),
           name, expected, actual, lambda: tensor_diff(actual, expected, rtol, atol))
    return actual


def _noted(check, name: str, expected: Any, actual: Any, diff=lambda: None) -> Any:
    """Run ``check()`` and, in a case that reveals (a public example, a counterexample), record
    what it compared and whether it passed."""
    trace = revealing()
    try:
        result = check()
    except WrongAnswer:
        if trace is not None:
            trace.note_check(name, expected, actual, False, diff())
        raise
    if trace is not None:
        trace.note_check(name, expected, actual, True, diff())
    return result


def _expect_tensor(actual: Any, expected: torch.Tensor, name: str, rtol: float, atol: float,
                   dtype: torch.dtype | None, check_device: bool, allow_nan: bool) -> None:
    w = _where(name)
    if not isinstance(actual, torch.Tensor):
        fail(f"{w}expected a torch.Tensor, got {type(actual).__name__}")
    if tuple(actual.shape) != tuple(expected.shape):
        fail(f"{w}expected shape {tuple(expected.shape)}, got {tuple(actual.shape)}")
    want_dtype = dtype or expected.dtype
    if actual.dtype != want_dtype:
        fail(f"{w}expected dtype {want_dtype}, got {actual.dtype}")
    if check_device and actual.device.type != expected.device.type:
        fail(wrong_device_message(name, expected.device.type, actual.device.type))
    a = actual.detach().to("cpu")
    e = expected.detach().to("cpu")
    if a.is_floating_point() or a.is_complex():
        a64, e64 = a.to(torch.float64), e.to(torch.float64)
        nan_a, nan_e = torch.isnan(a64), torch.isnan(e64)
        if not allow_nan and nan_a.any():
            fail(f"{w}{int(nan_a.sum())} NaN value(s), first at index {_first(nan_a)}")
        if allow_nan and not torch.equal(nan_a, nan_e):
            fail(f"{w}NaN where a number was expected (or the reverse), first at index {_first(nan_a ^ nan_e)}")
        ok = nan_a & nan_e
        inf_e = torch.isinf(e64)
        ok |= inf_e & (a64 == e64)
        finite = ~(nan_a | nan_e | inf_e)
        if (torch.isinf(a64) & ~inf_e).any():
            fail(f"{w}infinite value(s) where finite ones were expected, first at {_first(torch.isinf(a64) & ~inf_e)}")
        err = (a64 - e64).abs()
        tol = atol + rtol * e64.abs()
        bad = finite & (err > tol)
        bad |= ~finite & ~ok
        if bad.any():
            worst = float(torch.where(finite, err, torch.zeros_like(err)).max())
            fail(f"{w}{int(bad.sum())} of {a.numel()} values out of tolerance (rtol={rtol:g}, atol={atol:g}); "
                 f"first at index {_first(bad)}, largest abs error {worst:.3g}")
    else:
        bad = a != e
        if bad.any():
            fail(f"{w}{int(bad.sum())} of {a.numel()} values differ, first at index {_first(bad)}")


def wrong_device_message(name: str, want: str, got: str) -> str:
    """"output: a tensor on cpu, but this grading runs on cuda: ..." (device types)."""
    return (f"{_where(name)}a tensor on {got}, but this grading runs on {want}: return it on the device of "
            f"its inputs ({want}), without copying it to another device")


def expect_device(actual: Any, device: torch.device | str, *, name: str = "output") -> Any:
    """Every tensor in ``actual`` (a tensor, or tuples, lists and dict values of them, nested) is
    on ``device``'s type (``cuda:0`` and ``cuda`` match). A CPU tensor returned in a CUDA grading
    is a wrong answer that says so; values that are not tensors are not checked here. Returns
    ``actual``."""
    want = torch.device(device).type
    for where, t in _tensors(actual, name):
        if t.device.type != want:
            fail(wrong_device_message(where, want, t.device.type))
    return actual


def _tensors(value: Any, name: str, depth: int = 0):
    """(path, tensor) for each tensor in ``value``, depth-first, in order (at most 32 levels deep)."""
    if isinstance(value, torch.Tensor):
        yield name, value
    elif depth < 32 and isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from _tensors(v, f"{name}[{i}]", depth + 1)
    elif depth < 32 and isinstance(value, dict):
        for k, v in value.items():
            yield from _tensors(v, f"{name}[{k!r}]", depth + 1)


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    idx = mask.nonzero()
    return tuple(int(i) for i in idx[0]) if len(idx) else ()


def expect_equal(actual: Any, expected: Any, *, name: str = "output") -> Any:
    """Exact equality for ints, strings, enums, tuples and lists (a tensor is compared exactly)."""
    if isinstance(expected, torch.Tensor):
        return expect_tensor(actual, expected, name=name)
    _noted(lambda: _expect_equal(actual, expected, name), name, expected, actual)
    return actual


def _expect_equal(actual: Any, expected: Any, name: str) -> Any:
    if isinstance(expected, torch.Tensor):
        return expect_tensor(actual, expected, name=name)
    if isinstance(expected, bool) or isinstance(actual, bool):
        if type(actual) is not type(expected) or actual != expected:
            fail(f"{_where(name)}expected {expected!r}, got {_short(actual)}")
        return actual
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            fail(f"{_where(name)}expected a sequence of length {len(expected)}, got {_short(actual)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _expect_equal(a, e, f"{name}[{i}]")
        return actual
    if isinstance(expected, int) and not isinstance(actual, int):
        fail(f"{_where(name)}expected an int, got {_short(actual)}")
    if actual != expected:
        fail(f"{_where(name)}expected {expected!r}, got {_short(actual)}")
    return actual


def expect_close(actual: Any, expected: float, *, name: str = "output", rtol: float = 1e-6,
                 atol: float = 0.0) -> float:
    """A finite real number within ``atol + rtol * |expected|`` of ``expected``."""
    return _noted(lambda: _expect_close(actual, expected, name, rtol, atol), name, expected, actual)


def _expect_close(actual: Any, expected: float, name: str, rtol: float, atol: float) -> float:
    w = _where(name)
    if isinstance(actual, torch.Tensor) and actual.numel() == 1:
        actual = actual.item()
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        fail(f"{w}expected a number, got {_short(actual)}")
    actual = float(actual)
    if math.isnan(actual):
        fail(f"{w}got NaN")
    if math.isinf(expected):
        if actual != expected:
            fail(f"{w}got {actual:.6g}, not the expected infinity")
        return actual
    if not math.isfinite(actual) or abs(actual - expected) > atol + rtol * abs(expected):
        side = "too large" if actual > expected else "too small"
        fail(f"{w}got {actual:.6g}: {side} (not within rtol={rtol:g}, atol={atol:g} of the expected value)")
    return actual


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."
