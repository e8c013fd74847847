"""An error that grows with context: bisect to the state in the wrong dtype (see statement.md).

The model proxy you receive (the grader's ``inferprep.sim.running_sum_model.RunningSumModel``):
    model.names: list[str]                 state names, e.g. "layers.2.softmax_denominator"
    model.max_len: int                     longest context error() accepts
    model.error(context_len, upcast) -> float
        largest |output - float64 output| over the first context_len tokens with the states in
        upcast (a list of names) held in float32; non-decreasing in context_len; may be inf.
        Every call is counted.
"""

from __future__ import annotations

import torch


def stall_value(increment: float, dtype: torch.dtype) -> float:
    """The value at which ``x = round_dtype(x + increment)`` (from x = 0) stops changing.

    The sum is exact and rounded once to ``dtype`` (nearest, ties to even, subnormals kept);
    ``increment`` is not rounded first.

    Args:
        increment: finite, > 0.
        dtype: torch.bfloat16, torch.float16 or torch.float32.

    Returns:
        The stall value as a Python float (exact); ``math.inf`` if the sum overflows first;
        0.0 if the first step rounds to 0. Example: (1.0, torch.bfloat16) -> 256.0.

    Raises:
        ValueError: increment <= 0, NaN or inf; any other dtype.
    """
    raise NotImplementedError


def find_culprit(model, context_len: int, tol: float) -> str:
    """Name of the one state held in the wrong dtype.

    Guarantee: ``model.error(context_len, S) <= tol`` iff S contains the culprit.
    Budget: at most ceil(log2(len(model.names))) + 1 calls to ``model.error``.
    """
    raise NotImplementedError


def first_bad_length(model, tol: float, upcast: list[str]) -> int | None:
    """Smallest L in [1, model.max_len] with ``model.error(L, upcast) > tol``; None if none.

    Budget: at most ceil(log2(model.max_len)) + 2 calls to ``model.error``.
    """
    raise NotImplementedError
