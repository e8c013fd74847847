"""A toy streaming model whose error grows with context when one running state is kept in a
low-precision dtype (the bf16-running-sum exercise; public code).

The model reads one token per step and keeps named states, one per layer and kind
(``"layers.2.softmax_denominator"``). Each state is updated once per token and read out as one
output term, normalised so that in exact arithmetic every term stays O(1) at any length:

================================  =====================================  ===========================
kind                              update at token t (x, s from the       output term
                                  input stream, ``scale`` per state)
================================  =====================================  ===========================
``position``                      ``p = p + 1``                          ``p / (t + 1)``
``softmax_denominator``           ``d = d + exp(s)``                     ``d / (t + 1)``
``softmax_numerator``             ``n = n + exp(s) * (1 + x / 2)``       ``n / (t + 1)``
``sum_sq``                        ``q = q + (scale * x) ** 2``           ``sqrt(q / (t + 1)) / scale``
``ema``                           ``m = 0.9 * m + 0.1 * x``              ``m``
``last_token``                    ``h = x``                              ``h``
``running_max``                   ``M = max(M, s)``                      ``M``
================================  =====================================  ===========================

The first four are running sums: held in bf16 or fp16 they stop taking increments once an
increment falls below half a unit in the last place of the total (bf16 stops adding 1 at 256,
fp16 at 2048), and ``sum_sq`` in fp16 overflows past 65504 (onnxruntime#28442). The last three
are bounded and harmless in bf16: their error stays near bf16's rounding error whatever the
length.

Every state is stored in its dtype after every update: the update is computed exactly (in
float64 here, which is exact for these operands up to one final rounding) and rounded once,
round-to-nearest-even, to the state's dtype (``round_to``). The reference output is the same
model in float64 throughout. Input stream (seeded, ``random.Random(seed)``): for token t = 0, 1,
..., in turn, ``x = gauss(0, 1)`` then ``s = uniform(-1, 1)``.

``error(L, upcast)`` is the largest absolute difference between any output term and its float64
value over the first ``L`` tokens, with the states named in ``upcast`` held in float32 instead
of their configured dtype. It is non-decreasing in ``L`` (a running maximum); an infinite or NaN
term makes it ``inf``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

__all__ = ["KINDS", "FORMATS", "StateSpec", "RunningSumModel", "round_to", "demo_model"]

KINDS = ("position", "softmax_denominator", "softmax_numerator", "sum_sq", "ema", "last_token",
         "running_max")

FORMATS = {
    # dtype name: (significand bits incl. the implicit one, min normal exponent, max exponent)
    "bf16": (8, -126, 127),
    "fp16": (11, -14, 15),
    "fp32": (24, -126, 127),
}


def round_to(x: float, dtype: str) -> float:
    """Round a Python float to the nearest ``dtype`` value (ties to even), as a Python float.

    ``dtype`` is ``"bf16"``, ``"fp16"``, ``"fp32"`` or ``"fp64"`` (no rounding). Values beyond the
    format's largest finite number (after rounding) become +-inf; subnormals are kept.
    """
    if dtype == "fp64" or x == 0.0 or not math.isfinite(x):
        return x
    p, emin, emax = FORMATS[dtype]
    _, e = math.frexp(x)                 # |x| = m * 2**e with 0.5 <= m < 1: leading bit 2**(e-1)
    ulp = math.ldexp(1.0, max(e - 1, emin) - (p - 1))
    r = round(x / ulp) * ulp             # x / ulp is exact (a power-of-two scaling); round() ties to even
    if abs(r) > math.ldexp(2.0 - math.ldexp(1.0, 1 - p), emax):
        return math.copysign(math.inf, x)
    return float(r)


@dataclass(frozen=True)
class StateSpec:
    """One state: its name (``layers.<i>.<kind>``), kind (see ``KINDS``), dtype and input scale."""

    name: str
    kind: str
    dtype: str = "fp32"
    scale: float = 1.0


class RunningSumModel:
    """The streaming model. Host it (or build your own) and call ``error``.

    Args:
        states: the states, in order (their names must be unique).
        seed: seed of the input stream.
        max_len: the longest context ``error`` accepts, tokens.
    """

    def __init__(self, states: list[StateSpec], seed: int = 0, max_len: int = 4096):
        names = [s.name for s in states]
        if len(set(names)) != len(names):
            raise ValueError("state names must be unique")
        for s in states:
            if s.kind not in KINDS:
                raise ValueError(f"unknown kind {s.kind!r}")
            if s.dtype not in FORMATS and s.dtype != "fp64":
                raise ValueError(f"unknown dtype {s.dtype!r}")
        self.states = list(states)
        self.names = names
        self.seed = seed
        self.max_len = max_len
        self.calls = 0
        rng = random.Random(seed)
        self._x, self._s = [], []
        for _ in range(max_len):            # token by token, so a prefix does not depend on max_len
            self._x.append(rng.gauss(0.0, 1.0))
            self._s.append(rng.uniform(-1.0, 1.0))
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    # -- one state's output term over the whole stream ------------------------------------------
    def term(self, name: str, dtype: str) -> np.ndarray:
        """The output term of state ``name`` held in ``dtype``, for t = 0 .. max_len - 1."""
        key = (name, dtype)
        if key not in self._cache:
            spec = self.states[self.names.index(name)]
            self._cache[key] = _simulate(spec.kind, spec.scale, dtype, self._x, self._s)
        return self._cache[key]

    def error_curve(self, upcast=()) -> np.ndarray:
        """error(L, upcast) for L = 1 .. max_len (index L - 1)."""
        up = set(upcast)
        worst = np.zeros(self.max_len)
        for spec in self.states:
            got = self.term(spec.name, "fp32" if spec.name in up else spec.dtype)
            err = np.abs(got - self.term(spec.name, "fp64"))
            err[~np.isfinite(err)] = np.inf
            worst = np.maximum(worst, err)
        return np.maximum.accumulate(worst)

    def error(self, context_len: int, upcast: list[str] | tuple[str, ...] = ()) -> float:
        """Largest |term - float64 term| over the first ``context_len`` tokens, with the states in
        ``upcast`` held in float32. Raises ValueError for a length outside [1, max_len] or an
        unknown state name."""
        self.calls += 1
        if isinstance(context_len, bool) or not isinstance(context_len, int) or not 1 <= context_len <= self.max_len:
            raise ValueError(f"context_len must be an int in [1, {self.max_len}], got {context_len!r}")
        if isinstance(upcast, str) or not isinstance(upcast, (list, tuple)):
            raise ValueError("upcast must be a list of state names")
        unknown = [u for u in upcast if u not in self.names]
        if unknown:
            raise ValueError(f"unknown state name(s): {unknown[:3]}")
        return float(self.error_curve(upcast)[context_len - 1])


def _simulate(kind: str, scale: float, dtype: str, xs: list[float], ss: list[float]) -> np.ndarray:
    r = lambda v: round_to(v, dtype)  # noqa: E731
    out = np.empty(len(xs))
    if kind == "position":
        p = 0.0
        for t in range(len(xs)):
            p = r(p + 1.0)
            out[t] = p / (t + 1)
    elif kind == "softmax_denominator":
        d = 0.0
        for t, s in enumerate(ss):
            d = r(d + math.exp(s))
            out[t] = d / (t + 1)
    elif kind == "softmax_numerator":
        n = 0.0
        for t, (x, s) in enumerate(zip(xs, ss)):
            n = r(n + math.exp(s) * (1.0 + 0.5 * x))
            out[t] = n / (t + 1)
    elif kind == "sum_sq":
        q = 0.0
        for t, x in enumerate(xs):
            q = r(q + (scale * x) ** 2)
            out[t] = math.sqrt(q / (t + 1)) / scale if math.isfinite(q) else math.inf
    elif kind == "ema":
        m = 0.0
        for t, x in enumerate(xs):
            m = r(0.9 * m + 0.1 * x)
            out[t] = m
    elif kind == "last_token":
        for t, x in enumerate(xs):
            out[t] = r(x)
    elif kind == "running_max":
        big = -math.inf
        for t, s in enumerate(ss):
            big = r(max(big, s))
            out[t] = big
    return out


def demo_model(max_len: int = 4096) -> RunningSumModel:
    """The model of the exercise's statement: 3 layers, 12 states, one of them the culprit."""
    specs = []
    layout = {
        0: [("position", "fp32"), ("ema", "bf16"), ("sum_sq", "fp32"), ("last_token", "bf16")],
        1: [("softmax_denominator", "fp32"), ("softmax_numerator", "fp32"), ("running_max", "bf16"),
            ("ema", "bf16")],
        2: [("softmax_denominator", "bf16"), ("softmax_numerator", "fp32"), ("sum_sq", "fp32"),
            ("last_token", "bf16")],
    }
    for layer, kinds in layout.items():
        for kind, dtype in kinds:
            specs.append(StateSpec(f"layers.{layer}.{kind}", kind, dtype))
    return RunningSumModel(specs, seed=3, max_len=max_len)
