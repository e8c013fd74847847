"""Pins how the installed torch casts float32 to the two OCP FP8 formats, which the FP8 exercises'
references and graders rely on.

What the platform relies on: after clamping to +-max (as every reference does before a cast,
and as vLLM's ``scaled_fp8_conversion`` does: ``fmaxf(-max, fminf(x, max))``), the cast rounds to
the nearest representable value, ties to the even mantissa, subnormals included. This file
checks that against an exact rational oracle on every tie midpoint and on random values.

What it only records: torch's behaviour for values beyond max without a clamp changed across
versions (older eager builds gave NaN for e4m3fn, pytorch/pytorch#145357; saturating since
pytorch/pytorch#178817). ``pyproject.toml`` pins the torch range this file has passed on; a
torch outside it must pass this file before the range is widened.
"""

from __future__ import annotations

import bisect
import math
import random
from fractions import Fraction

import pytest
import torch

FORMATS = {
    # name: (dtype, mantissa bits, exponent bias, max finite, smallest normal exponent)
    "e4m3fn": (torch.float8_e4m3fn, 3, 7, 448.0, -6),
    "e5m2": (torch.float8_e5m2, 2, 15, 57344.0, -14),
}


def _grid(name: str) -> list[Fraction]:
    """Every non-negative finite value of the format, exactly, ascending."""
    _, m, _, mx, emin = FORMATS[name]
    vals = {Fraction(0)}
    for k in range(1, 2**m):                                # subnormals: k/2^m * 2^emin
        vals.add(Fraction(k, 2**m) * Fraction(2) ** emin)
    e = emin
    while True:
        for k in range(2**m):
            v = (1 + Fraction(k, 2**m)) * Fraction(2) ** e
            if v > mx:
                return sorted(vals)
            vals.add(v)
        e += 1


def _rne(x: Fraction, grid: list[Fraction], mantissa_bits: int) -> Fraction:
    """Round |x| <= max to the nearest grid value; a tie goes to the even mantissa."""
    sign = -1 if x < 0 else 1
    a = abs(x)
    i = bisect.bisect_right(grid, a) - 1                    # grid[i] <= a < grid[i + 1]
    lo, hi = grid[i], grid[min(i + 1, len(grid) - 1)]
    if a - lo < hi - a:
        return sign * lo
    if hi - a < a - lo:
        return sign * hi
    # tie: the neighbour whose mantissa's last bit is 0 (its index on the grid is even)
    return sign * (lo if i % 2 == 0 else hi)


def _cast(values: list[float], dtype) -> list[float]:
    return torch.tensor(values, dtype=torch.float32).to(dtype).to(torch.float32).tolist()


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_finfo_and_code_counts(name):
    dtype, m, _, mx, emin = FORMATS[name]
    fi = torch.finfo(dtype)
    assert fi.max == mx and fi.tiny == 2.0**emin
    grid = _grid(name)
    codes = torch.arange(256, dtype=torch.uint8).view(dtype).to(torch.float32)
    finite = sorted({Fraction(v) for v in codes[torch.isfinite(codes)].abs().tolist()})
    assert finite == grid, "the format's finite values are the grid the oracle rounds to"
    assert grid[1] == Fraction(2) ** (emin - m)          # smallest subnormal: 2^-9, 2^-16


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_clamped_cast_is_round_to_nearest_even(name):
    dtype, m, _, mx, _ = FORMATS[name]
    grid = _grid(name)
    # every midpoint between neighbours (the ties), the neighbours themselves, a hair either side
    probes: list[Fraction] = []
    for a, b in zip(grid, grid[1:]):
        mid = (a + b) / 2
        eps = (b - a) / 1024
        probes += [a, mid, mid - eps, mid + eps]
    rng = random.Random(1)
    probes += [Fraction(rng.uniform(0, mx)) for _ in range(5000)]
    probes += [-p for p in probes]
    values = [float(p) for p in probes]
    assert all(Fraction(v) == p for v, p in zip(values, probes)), "probes are exact in float32"
    got = _cast(values, dtype)
    want = [float(_rne(p, grid, m)) for p in probes]
    bad = [(v, g, w) for v, g, w in zip(values, got, want) if g != w]
    assert not bad, f"{len(bad)} casts differ from round-to-nearest-even, e.g. {bad[:3]}"


def test_known_ties_and_subnormals():
    e4 = torch.float8_e4m3fn
    assert _cast([1.0625, 1.1875, 2.0**-10, 1.5 * 2.0**-10], e4) == [1.0, 1.25, 0.0, 2.0**-9]
    # 240 is the e4m3fnuz maximum (AMD), not e4m3fn's: it is representable, 448 is the max
    assert _cast([240.0, 448.0, 464.0 - 2.0**-6], e4) == [240.0, 448.0, 448.0]


def test_overflow_without_a_clamp_is_recorded():
    """References never rely on this (they clamp first); it says which behaviour this torch has."""
    got = _cast([449.0, 500.0, 1e4, math.inf, -math.inf], torch.float8_e4m3fn)
    nan = _cast([math.nan], torch.float8_e4m3fn)
    assert math.isnan(nan[0])
    assert got == [448.0, 448.0, 448.0, 448.0, -448.0], (
        f"torch {torch.__version__} no longer saturates e4m3fn overflow: {got}; the references "
        "clamp first, so they are unaffected, but say so in pyproject's torch range")
    e5 = _cast([60000.0, 61440.0, math.inf], torch.float8_e5m2)
    assert e5[0] == 57344.0 and math.isinf(e5[1]) and math.isinf(e5[2])
