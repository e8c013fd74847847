"""continuous-batching-gain: static vs continuous batching on an explicit trace of output lengths.

Definitions, conventions and errors are in the statement. ``StepModel`` is the shared step-time
model (``inferprep.sim.step_model``); you may call its methods.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def schedule(lengths: list[int], b: int) -> dict:
    """Busy slots per decode step of both schedules.

    Returns ``{"static_active": [n_1, n_2, ...], "continuous_active": [...]}`` (ints, one per step).

    Raises:
        ValueError: ``lengths`` not a non-empty list/tuple of ints >= 1; ``b`` not an int >= 1.
    """
    raise NotImplementedError


def batching_gain(lengths: list[int], b: int, a: float, c: float) -> dict:
    """Both schedules timed with t(n) = a + c*n seconds per step of n busy slots.

    Returns ``{"static_s", "continuous_s", "gain": float, "static_steps", "continuous_steps": int}``.

    Raises:
        ValueError: as ``schedule``; ``a`` or ``c`` negative or not finite; ``a + c == 0``.
    """
    raise NotImplementedError


def step_model_gain(lengths: list[int], b: int, step_model: StepModel, context: int) -> dict:
    """Both schedules timed with ``step_model.decode_step_s([context] * n)`` per step of n busy slots.

    Returns the keys of ``batching_gain``.

    Raises:
        ValueError: as ``schedule``; ``step_model`` not a StepModel; ``context`` not an int >= 1.
    """
    raise NotImplementedError


def length_statistic(lengths: list[int], b: int) -> float:
    """b x (sum over static groups of the group's longest length) / sum(lengths).

    Raises:
        ValueError: as ``schedule``.
    """
    raise NotImplementedError


def harmonic_gain(b: int) -> float:
    """E[max of b] / E[L] for i.i.d. exponential lengths (H_b).

    Raises:
        ValueError: ``b`` not an int >= 1.
    """
    raise NotImplementedError


def token_budget_point(step_model: StepModel, budget_tokens: int) -> dict:
    """Where a per-step token budget sits on the weight-GEMM roofline.

    Returns ``{"knee_tokens": float, "bound": "memory" | "compute", "gemm_s": float,
    "compute_utilization": float}``.

    Raises:
        ValueError: ``step_model`` not a StepModel; ``budget_tokens`` not an int >= 1.
    """
    raise NotImplementedError
