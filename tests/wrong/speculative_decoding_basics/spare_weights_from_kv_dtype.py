"""WRONG: weight bytes and the GEMM peak taken from kv_dtype, not dtype. Killed by spare-fp8-weights-bf16-kv-8b-odd-gpu-g0."""

from __future__ import annotations

import math
from fractions import Fraction

from inferprep.sim.step_model import StepModel


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


# -- 1. tokens per step ------------------------------------------------------------------------

def expected_tokens(alpha: float, g: int) -> float:
    """Mean tokens one verification step emits: (1 - alpha^(g+1)) / (1 - alpha); g + 1 at 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
    _check_int("g", g, 0)
    if alpha == 1:
        return float(g + 1)
    return (1 - alpha ** (g + 1)) / (1 - alpha)


# -- 2. the losslessness identity --------------------------------------------------------------

def _parse_distribution(name: str, xs) -> list[Fraction]:
    if not isinstance(xs, (list, tuple)) or len(xs) == 0:
        raise ValueError(f"{name} must be a non-empty list of fraction strings")
    out = []
    for x in xs:
        if not isinstance(x, str):
            raise ValueError(f"{name}: every probability is a string such as '3/10', got {x!r}")
        try:
            f = Fraction(x)
        except (ValueError, ZeroDivisionError) as e:
            raise ValueError(f"{name}: {x!r} is not a fraction") from e
        if f < 0:
            raise ValueError(f"{name}: negative probability {x}")
        out.append(f)
    if sum(out) != 1:
        raise ValueError(f"{name} sums to {sum(out)}, not exactly 1")
    return out


def emitted_distribution(p: list[str], q: list[str]) -> dict:
    """The exact distribution of the token one draft-then-verify position emits.

    Returns {"alpha", "accepted", "resampled", "emitted"}: alpha = sum_i min(p_i, q_i);
    accepted[i] = q_i * min(1, p_i/q_i) = min(p_i, q_i) (draft proposes i and it is kept);
    resampled[i] = (1 - alpha) * max(0, p_i - q_i) / sum_j max(0, p_j - q_j) (0 when alpha = 1);
    emitted = accepted + resampled, which equals p exactly. Every value is str(Fraction).
    """
    P = _parse_distribution("p", p)
    Q = _parse_distribution("q", q)
    if len(P) != len(Q):
        raise ValueError(f"p has {len(P)} entries and q has {len(Q)}")
    accepted = [min(pi, qi) for pi, qi in zip(P, Q)]
    alpha = sum(accepted, Fraction(0))
    residual = [max(Fraction(0), pi - qi) for pi, qi in zip(P, Q)]
    z = sum(residual, Fraction(0))          # = 1 - alpha, so z == 0 exactly when q == p
    resampled = [(1 - alpha) * r / z if z else Fraction(0) for r in residual]
    emitted = [a + r for a, r in zip(accepted, resampled)]
    return {"alpha": str(alpha), "accepted": [str(x) for x in accepted],
            "resampled": [str(x) for x in resampled], "emitted": [str(x) for x in emitted]}


# -- 3. where spare compute runs out -----------------------------------------------------------

def spare_compute_batch(step_model: StepModel, g: int) -> dict:
    """Largest batch whose verification step keeps the weight GEMMs memory-bound.

    A verification row of g drafts is (g + 1 new tokens, c cached, g + 1 logit rows); the weight
    GEMMs of b such rows do 2 (P_body + P_head) b (g + 1) FLOPs and read W bytes, so they are
    memory-bound (a tie counts as memory-bound) while that FLOP count / F <= W / BW.
    Returns {"knee_tokens": W / BW * F / (2 (P_body + P_head)), "max_batch": int >= 0}.
    """
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")
    _check_int("g", g, 0)
    sm = step_model
    per_token = 2 * (sm.body_params + sm.head_params)           # FLOPs per token with logits
    memory_s = sm.kv_dtype.bytes_per_element * (sm.body_params + sm.head_params) / sm.bytes_per_s  # WRONG: s_w from kv_dtype
    F = sm.n_gpus * sm.gpu.dense_flops(sm.kv_dtype) * sm.mfu  # WRONG: peak of kv_dtype
    knee = memory_s * F / per_token

    def memory_bound(b: int) -> bool:                          # StepModel.breakdown's test
        return per_token * b * (g + 1) / F <= memory_s

    b = max(0, math.floor(knee / (g + 1)))
    while b > 0 and not memory_bound(b):                       # settle float rounding either way
        b -= 1
    while memory_bound(b + 1):
        b += 1
    return {"knee_tokens": knee, "max_batch": b}
