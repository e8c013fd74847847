"""FlashAttention backward. See the statement for every rule."""

from __future__ import annotations

import torch


def flash_attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                             lse: torch.Tensor, do: torch.Tensor, causal: bool = False,
                             block_q: int = 64, block_k: int = 64,
                             scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of O = softmax(scale * q k^T [+ causal mask]) v with respect to q, k, v.

    Args:
        q, k, v: (B, H, N, d) inputs of the forward; float16, bfloat16, float32 or float64.
        o: (B, H, N, d) the forward's output, same dtype.
        lse: (B, H, N) the forward's natural-log logsumexp of the *scaled* masked scores;
             float32 (float64 when the inputs are float64).
        do: (B, H, N, d) gradient of the loss with respect to o, same dtype as q.
        causal: query i sees keys 0..i.
        block_q, block_k: tile heights (>= 1); they need not divide N.
        scale: None means 1/sqrt(d); any other value (0.0 too) is used as given.

    Returns:
        (dq, dk, dv): each (B, H, N, d), q's dtype and device.

    Raises:
        ValueError: a tensor not 4-D or of another shape/dtype than q; lse not (B, H, N);
                    unsupported dtype; block_q or block_k < 1 (0 or negative).

    Compute in float32 (float64 for float64 inputs), D included; cast once at the end. PyTorch's
    fused attention kernels (forward and backward, torch.ops.aten's too) raise when graded.

    Memory: never allocate anything of size N x N (the grader runs N = 12288 under 384 MiB).
    """
    raise NotImplementedError
