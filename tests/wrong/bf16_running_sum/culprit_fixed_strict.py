"""WRONG: find_culprit treats a half as fixed only when error < tol; the guarantee is error <= tol iff the set holds the culprit, so when the error with the culprit upcast equals tol exactly it discards the culprit's half. Passed while every find_culprit case had tol = 0.05, far from the fixed error."""
from __future__ import annotations

import math

import torch

_FORMATS = {torch.bfloat16: (8, -126, 127), torch.float16: (11, -14, 15), torch.float32: (24, -126, 127)}
_S = 1100  # every value is an integer count of 2**-_S: exact for any float increment and any format value


def _round(v: int, p: int, emin: int, emax: int) -> int | float:
    """v >= 0 (in units of 2**-_S) rounded to the format, ties to even; math.inf past the top."""
    if v == 0:
        return 0
    e = v.bit_length() - 1 - _S                       # 2**e <= value < 2**(e + 1)
    ulp = 1 << (max(e, emin) - (p - 1) + _S)
    q, r = divmod(v, ulp)
    if 2 * r > ulp or (2 * r == ulp and q % 2 == 1):
        q += 1
    out = q * ulp
    if out > ((1 << p) - 1) << (emax - p + 1 + _S):
        return math.inf
    return out


def _to_float(v: int) -> float:
    if v == 0:
        return 0.0
    shift = max(0, v.bit_length() - 60)           # a format value has at most 24 significant bits
    return math.ldexp(v >> shift, shift - _S)


def stall_value(increment: float, dtype: torch.dtype) -> float:
    """The total at which ``x = round_dtype(x + increment)``, from x = 0, stops changing."""
    if dtype not in _FORMATS:
        raise ValueError(f"dtype must be torch.bfloat16, torch.float16 or torch.float32, got {dtype!r}")
    if isinstance(increment, bool) or not isinstance(increment, (int, float)) or not math.isfinite(increment) \
            or increment <= 0:
        raise ValueError(f"increment must be a finite number > 0, got {increment!r}")
    p, emin, emax = _FORMATS[dtype]
    num, den = float(increment).as_integer_ratio()    # den is a power of two
    inc = num << (_S - (den.bit_length() - 1))
    x = 0

    def step(v):
        return _round(v + inc, p, emin, emax)

    while True:
        x1 = step(x)
        if x1 == math.inf:
            return math.inf
        if x1 == x:
            return _to_float(x)
        d = x1 - x
        x2 = step(x1)
        if x2 == math.inf:
            return math.inf
        if x2 - x1 == d:
            # The same step twice in a row: it stays the same until x + inc leaves x1's binade.
            e = x1.bit_length() - 1 - _S
            top = 1 << (max(e, emin) + 1 + _S)
            n = -(-(top - inc - x1) // d)             # steps from x1 whose sum stays below top
            x = x1 + (n - 1) * d if n > 1 else x2
        else:
            x = x1


def find_culprit(model, context_len: int, tol: float) -> str:
    """Group testing by halves: upcast half the suspects; the culprit is in the half that fixes it."""
    suspects = list(model.names)
    while len(suspects) > 1:
        half = suspects[: len(suspects) // 2]
        if model.error(context_len, half) < tol:   # WRONG: <= tol means fixed
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
