"""batch-invariance: dynamic activation scales per tensor vs per token, a batch-invariant
quantized linear, and the cross-talk a per-tensor scale causes. Full rules in the statement."""

from __future__ import annotations

import torch

MODES = ["none", "int8_tensor", "int8_token", "fp8_tensor", "fp8_token"]


def quantize_activations(x: torch.Tensor, mode: str) -> torch.Tensor:
    """``x: (T, H)`` float32 -> ``x_hat`` float32: scale = amax / qmax (per tensor or per row;
    qmax 127 INT8, 448 FP8 e4m3fn; amax 0 -> scale 1), code = round(clamp(x / scale, +-qmax)),
    x_hat = code * scale.

    Raises:
        ValueError: unknown mode; x not a 2-D float32 tensor or holding NaN/inf.
    """
    raise NotImplementedError


def quantized_linear(x: torch.Tensor, w: torch.Tensor, mode: str) -> torch.Tensor:
    """``quantize_activations(x, mode) @ w.T`` float32 ``(T, N)``; for ``none`` and the per-token
    modes each row must be bitwise the same whatever the rest of the batch.

    Raises:
        ValueError: as quantize_activations; w not 2-D float32 or a different H.
    """
    raise NotImplementedError


def cross_talk(victims: torch.Tensor, companions: torch.Tensor, w: torch.Tensor, mode: str) -> dict:
    """Each victim's float64 logits alone vs as row 0 of [victim, companions].

    Returns ``{"max_rel_change": float, "flips": int}``.

    Raises:
        ValueError: unknown mode; bad tensors; no victim; mismatched H.
    """
    raise NotImplementedError
