"""WRONG: closed form stall = 2**(ceil(log2(increment)) + p) with math.log2 on the float; the
form is right but math.log2(16 * (1 + 2**-52)) rounds to exactly 4.0, so for an increment just
above a power of two (>= 4) it answers one binade low (4096 instead of 8192 in BF16, and a
finite value where FP16 overflows). An exact exponent (math.frexp) would be fine."""

from __future__ import annotations
import math
from fractions import Fraction
import torch

_FMT = {torch.bfloat16: (8, -126, 127), torch.float16: (11, -14, 15), torch.float32: (24, -126, 127)}

def _ulp(v: Fraction, p, emin):
    # ulp of the grid containing |v| (v >= 0)
    if v == 0:
        return Fraction(2) ** (emin - p + 1)
    e = math.floor(math.log2(v)) if v > 0 else emin
    # correct for float log error
    while Fraction(2) ** e > v: e -= 1
    while Fraction(2) ** (e + 1) <= v: e += 1
    return Fraction(2) ** (max(e, emin) - p + 1)

def _round(v: Fraction, p, emin, emax):
    u = _ulp(v, p, emin)
    q = v / u
    n = math.floor(q); r = q - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1):
        n += 1
    out = n * u
    maxf = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if out > maxf:
        return None  # overflow
    return out

def stall_value(increment: float, dtype: torch.dtype) -> float:
    if isinstance(increment, bool) or not isinstance(increment, (int, float)) or not math.isfinite(increment) or increment <= 0:
        raise ValueError(f"increment must be a finite number > 0, got {increment!r}")
    if dtype not in _FMT:
        raise ValueError(f"unsupported dtype {dtype}")
    p, emin, emax = _FMT[dtype]
    inc = Fraction(increment)
    x = Fraction(0)
    prev_delta = None
    while True:
        nxt = _round(x + inc, p, emin, emax)
        if nxt is None:
            return math.inf
        if nxt == x:
            return float(x)
        delta = nxt - x
        if delta == prev_delta and _ulp(x, p, emin) == _ulp(nxt, p, emin) and x > 0:
            # constant step within the current grid: jump while x + k*delta + inc stays in the same binade
            u = _ulp(nxt, p, emin)
            top = u * 2 ** p  # upper edge of the binade of nxt (for subnormal region: 2^(emin+1))
            k = math.floor((top - inc - nxt) / delta) - 1
            if k > 0:
                nxt = nxt + k * delta
        prev_delta = delta
        x = nxt


def stall_value(increment, dtype):
    if isinstance(increment, bool) or not isinstance(increment, (int, float)) or not math.isfinite(increment) or increment <= 0:
        raise ValueError("bad increment")
    if dtype not in _FMT: raise ValueError("bad dtype")
    p, emin, emax = _FMT[dtype]
    # the sum stalls when increment < ulp(x)/2, i.e. x = 2^ceil(log2 inc) * 2^p
    if increment <= 2.0 ** (emin - p + 1) / 2: return 0.0
    x = 2.0 ** math.ceil(math.log2(increment)) * 2.0 ** p
    if x > (2 - 2.0**(1-p)) * 2.0**emax: return math.inf
    return x

def find_culprit(model, context_len: int, tol: float) -> str:
    cand = list(model.names)
    while len(cand) > 1:
        half = cand[: len(cand) // 2]
        if model.error(context_len, half) <= tol:
            cand = half
        else:
            cand = cand[len(cand) // 2:]
    return cand[0]

def first_bad_length(model, tol: float, upcast: list[str]) -> int | None:
    hi = model.max_len
    if not model.error(hi, list(upcast)) > tol:
        return None
    lo = 1  # answer in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if model.error(mid, list(upcast)) > tol:
            hi = mid
        else:
            lo = mid + 1
    return lo
