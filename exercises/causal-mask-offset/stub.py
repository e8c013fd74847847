"""Causal attention with a KV cache. See the statement for every rule."""

from __future__ import annotations

import torch


def causal_mask(t: int, s: int, device: str = "cpu") -> torch.Tensor:
    """Which keys each new query may attend to.

    Args:
        t: number of new queries T (>= 0), the last T tokens of the sequence.
        s: number of keys S (>= 0): the S - T cached tokens followed by the T new ones.
        device: where to put the result ("cpu", "cuda", ...).

    Returns:
        (T, S) torch.bool tensor, True where query i may see key j.

    Raises:
        ValueError: t or s negative.
    """
    raise NotImplementedError


def attention_with_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         scale: float | None = None) -> torch.Tensor:
    """Softmax attention of T new queries over S keys (cache plus new), causal by position.

    Args:
        q: (B, H, T, d); k, v: (B, H, S, d); one floating dtype (float16, bfloat16, float32,
           float64), one device. T may exceed S; S may be 0.
        scale: multiplies q k^T; None means 1/sqrt(d); any other value (0.0 too) is used as given.

    Returns:
        (B, H, T, d) in q's dtype on q's device; a query that may see no key outputs zeros.

    Raises:
        ValueError: a tensor not 4-D; k and v shapes differ; q and k differ in B, H or d;
                    dtypes differ or are not one of the four floating dtypes (integer tensors too).

    PyTorch's fused attention (scaled_dot_product_attention, torch.ops.aten's kernels) raises when graded.
    """
    raise NotImplementedError
