"""Rotary position embedding. See the statement for every rule."""

from __future__ import annotations

import torch


def rope_cos_sin(positions: torch.Tensor, head_dim: int,
                 base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotation angles p * base^(-2k/head_dim), k = 0 .. head_dim/2 - 1.

    Args:
        positions: integer tensor of any shape (...), values >= 0 (absolute token positions).
        head_dim: even Python int >= 2 (a float such as 8.0, or a bool, is rejected).
        base: rope_theta (> 0); 10000 for GPT-NeoX / Llama 2, 500000 for Llama 3.

    Returns:
        (cos, sin): float32 tensors of shape (..., head_dim // 2) on positions' device.

    Raises:
        ValueError: positions not an integer tensor (float or bool) or negative; head_dim odd, < 2 or
                    not an int; base <= 0.
    """
    raise NotImplementedError


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0,
               interleaved: bool = False) -> torch.Tensor:
    """Rotate each pair of x's last dimension by its token's angle.

    Args:
        x: (B, H, L, D) floating tensor, D even.
        positions: (B, L) integer tensor: the absolute position of every token of every row.
        base: rope_theta.
        interleaved: False = half-split pairs (k, k + D/2) (GPT-NeoX, Hugging Face rotate_half);
                     True = interleaved pairs (2k, 2k + 1) (GPT-J, Meta's Llama code).

    Returns:
        (B, H, L, D) tensor, x's dtype and device.

    Raises:
        ValueError: x not a 4-D floating tensor; D odd; positions not integer (float or bool), negative,
                    or not of shape (B, L) (a 1-D (L,) tensor is not broadcast).
    """
    raise NotImplementedError


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids of a padded batch: (B, L) int64, cumsum(mask) - 1 on real tokens, 1 on pads.

    The mask may be integer, bool or floating (a floating mask must hold exactly 0.0 and 1.0).
    Raises ValueError if the mask is not 2-D or holds anything other than 0 and 1 (0.5, NaN, 2, -1).
    """
    raise NotImplementedError


def packed_positions(num_computed: list[int], num_scheduled: list[int], device: str = "cpu") -> torch.Tensor:
    """Positions of a packed (varlen) batch: sequence i contributes num_computed[i] + 0 .. num_scheduled[i] - 1.

    Returns a 1-D int64 tensor of length sum(num_scheduled) on device.
    Raises ValueError if the lists differ in length or hold anything but ints >= 0.
    """
    raise NotImplementedError
