"""kv-quant-keys-values: KIVI's group quantizer, the KIVI cache and the two error roads.

All arithmetic in float64. Shapes: ``x`` (..., L, D) = (..., tokens, channels). Full rules in
the statement.
"""

from __future__ import annotations

import torch


def quantize_groups(x: torch.Tensor, bits: int, group: int, layout: str):
    """Asymmetric min/max quantization of groups of ``group`` consecutive elements.

    ``layout="per_channel"``: groups of consecutive tokens of one channel (keys);
    scale/zero (..., L // group, D). ``layout="per_token"``: groups of consecutive channels of one
    token (values); scale/zero (..., L, D // group).
    Returns ``(codes: uint8 like x, scale: float64, zero: float64)`` with
    scale = (max - min) / (2^bits - 1), zero = min, code = round_half_even(clamp((x - min) / scale,
    0, 2^bits - 1)); a constant group has scale 0 and codes 0.

    Raises:
        ValueError: bad tensor, bits outside [1, 8], group < 1, unknown layout, grouped axis not a
            positive multiple of group.
    """
    raise NotImplementedError


def dequantize_groups(codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, group: int,
                      layout: str) -> torch.Tensor:
    """``codes * scale + zero`` per group, float64, the shape of ``codes``."""
    raise NotImplementedError


def kivi_decode(k_prefill: torch.Tensor, v_prefill: torch.Tensor, q_steps: torch.Tensor,
                k_steps: torch.Tensor, v_steps: torch.Tensor, bits_k: int, bits_v: int,
                group: int, residual: int) -> dict:
    """Prefill a KIVI cache with ``k_prefill, v_prefill: (H, L0, D)``, then run ``S`` decode steps
    (``q_steps, k_steps, v_steps: (S, H, D)``): append, attend (softmax(q K^T / sqrt(D)) V over
    decoded + full tokens), then flush keys when the buffer holds exactly ``residual`` tokens,
    values' oldest token when it holds ``residual + 1``.

    Returns ``{"outputs": (S, H, D) float64, "counts": [[k_quant, k_full, v_quant, v_full]] * (S+1),
    "nbytes": [float] * (S+1), "k_hat": (H, L0+S, D) float64, "v_hat": (H, L0+S, D) float64}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def error_roads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_hat: torch.Tensor,
                v_hat: torch.Tensor, sm_scale: float) -> dict:
    """``q: (Q, D)``, ``k, v, k_hat, v_hat: (L, D)``. Returns ``{"k_only", "v_only", "k_linear",
    "v_linear", "entropy": float}`` (relative output errors, first-order roads, mean entropy in nats).

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError
