"""FlashAttention forward in Triton. Fill in the kernel and its tile sizes; see the statement."""

import triton
import triton.language as tl


def block_sizes(head_dim: int, causal: bool) -> dict:
    """{"BLOCK_M": ..., "BLOCK_N": ...}: powers of two in [16, 128] (query rows and key rows per tile)."""
    raise NotImplementedError


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                           stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn,
                           stride_oh, stride_om, stride_lh, n_q, n_k, scale,
                           HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Program (i, h) computes rows i*BLOCK_M .. (i+1)*BLOCK_M - 1 (those < n_q) of head h.

    q: (heads, n_q, HEAD_DIM), k and v: (heads, n_k, HEAD_DIM), o like q: element [h, r, d] of q
    is at q_ptr + h * stride_qh + r * stride_qm + d (strides in elements; the same for k, v, o).
    lse: (heads, n_q) float32, element [h, r] at lse_ptr + h * stride_lh + r.
    o = softmax(scale * q k^T) v per head; lse = natural-log logsumexp of each row's scores.
    CAUSAL: query r sees key j iff j <= r + n_k - n_q. Grid: (cdiv(n_q, BLOCK_M), heads).
    """
    tl.static_assert(False, "flash_attention_kernel is not written yet")
