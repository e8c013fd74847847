"""adaptive-draft-length: replay a recorded trace under a draft-length policy.

A trace is a list of requests ``{"cls": str, "q": [float], "m": [int]}`` (see the statement):
``q[t]`` is the drafter's confidence in its draft for position t, ``m[t]`` is 1 iff the target
accepts that draft. Costs are in units of one plain target forward.
"""

from __future__ import annotations


def simulate(trace: list[dict], policy: dict, c: float, batch: int = 1, knee_tokens: float = 256,
             gmax: int = 10) -> dict:
    """Replay ``trace`` on ``batch`` slots under ``policy``.

    ``policy``: ``{"kind": "fixed", "g": int}``, ``{"kind": "per_class", "g": {cls: int}}`` or
    ``{"kind": "confidence"}``. ``c``: one draft forward, in target forwards.

    Returns ``{"cost": float, "steps": int, "drafted": int, "accepted": int}``.

    Raises:
        ValueError: a malformed trace or policy, or a parameter out of range (see the statement).
    """
    raise NotImplementedError


def study(trace: list[dict], c: float, batch: int = 1, knee_tokens: float = 256,
          gmax: int = 10) -> dict:
    """Best fixed g, best g per class (each class swept alone), and the three policies' costs.

    Returns ``{"g_fixed": int, "g_class": {cls: int}, "cost_off", "cost_fixed", "cost_class",
    "cost_conf", "speedup_fixed", "gain_class", "gain_conf": float}``.

    Raises:
        ValueError: a malformed trace or a parameter out of range (see the statement).
    """
    raise NotImplementedError
