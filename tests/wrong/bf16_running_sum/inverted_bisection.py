"""WRONG: bisection that keeps the half whose upcast leaves the error high, i.e. the half without the culprit."""

from __future__ import annotations

import math
from fractions import Fraction

import torch

_FORMATS = {torch.bfloat16: (8, -126, 127), torch.float16: (11, -14, 15), torch.float32: (24, -126, 127)}


def _round(v: Fraction, p: int, emin: int, emax: int) -> Fraction | float:
    """v >= 0 rounded to the format, ties to even; math.inf past the largest finite value."""
    if v == 0:
        return Fraction(0)
    e = v.numerator.bit_length() - v.denominator.bit_length()   # 2**e <= v < 2**(e+2)
    if Fraction(2) ** e > v:
        e -= 1
    elif Fraction(2) ** (e + 1) <= v:
        e += 1
    ulp = Fraction(2) ** (max(e, emin) - (p - 1))
    r = round(v / ulp) * ulp
    if r > (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax:
        return math.inf
    return r


def stall_value(increment: float, dtype: torch.dtype) -> float:
    """The total at which ``x = round_dtype(x + increment)``, from x = 0, stops changing."""
    if dtype not in _FORMATS:
        raise ValueError(f"dtype must be torch.bfloat16, torch.float16 or torch.float32, got {dtype!r}")
    if isinstance(increment, bool) or not isinstance(increment, (int, float)) or not math.isfinite(increment) \
            or increment <= 0:
        raise ValueError(f"increment must be a finite number > 0, got {increment!r}")
    p, emin, emax = _FORMATS[dtype]
    inc = Fraction(increment)
    x = Fraction(0)

    def step(v):
        return _round(v + inc, p, emin, emax)

    while True:
        x1 = step(x)
        if x1 == math.inf:
            return math.inf
        if x1 == x:
            return float(x)
        d = x1 - x
        x2 = step(x1)
        if x2 == math.inf:
            return math.inf
        if x2 - x1 == d:
            # Same step twice in a row: it stays the same until x + inc leaves x1's binade.
            e = x1.numerator.bit_length() - x1.denominator.bit_length()
            while Fraction(2) ** (e + 1) <= x1:
                e += 1
            while Fraction(2) ** e > x1:
                e -= 1
            top = Fraction(2) ** (max(e, emin) + 1)
            n = math.ceil((top - inc - x1) / d)      # steps from x1 whose sum stays below top
            x = x1 + max(n - 1, 0) * d if n > 1 else x2
        else:
            x = x1


def find_culprit(model, context_len: int, tol: float) -> str:
    """Group testing by halves: upcast half the suspects; the culprit is in the half that fixes it."""
    suspects = list(model.names)
    while len(suspects) > 1:
        half = suspects[: len(suspects) // 2]
        if model.error(context_len, half) > tol:
            suspects = half
        else:
            suspects = suspects[len(half):]
    return suspects[0]


def first_bad_length(model, tol: float, upcast: list[str] | None = None) -> int | None:
    """Smallest L in [1, max_len] with error(L) > tol (bisection on a non-decreasing curve), or None."""
    up = list(upcast or [])
    hi = model.max_len
    if not model.error(hi, up) > tol:
        return None
    lo = 0                     # invariant: error(lo) <= tol (error(0) is 0), error(hi) > tol
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if model.error(mid, up) > tol:
            hi = mid
        else:
            lo = mid
    return hi
