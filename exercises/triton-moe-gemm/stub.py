"""The fused MoE GEMM in Triton. Fill in the kernel and its tile sizes; see the statement."""

import triton
import triton.language as tl


def block_sizes(num_tokens: int, n: int, k: int) -> dict:
    """{"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"}: powers of two in [16, 128]. The grader
    builds the sorted layout with blocks of BLOCK_SIZE_M."""
    raise NotImplementedError


@triton.jit
def moe_gemm_kernel(a_ptr, b_ptr, c_ptr, topk_weights_ptr, sorted_token_ids_ptr, expert_ids_ptr,
                    num_tokens_post_padded, num_valid_slots, top_k, N, K,
                    stride_am, stride_be, stride_bn, stride_cm,
                    MUL_ROUTED_WEIGHT: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    """Program (i, j): rows of layout block i, columns j*BLOCK_SIZE_N .. (j+1)*BLOCK_SIZE_N - 1.

    a: (T, K) token activations, row t at a_ptr + t * stride_am. b: (E, N, K) expert weights,
    element [e, n, k] at b_ptr + e * stride_be + n * stride_bn + k. c: (T * top_k, N), row s at
    c_ptr + s * stride_cm. topk_weights: (T * top_k,) float32. sorted_token_ids: int32 slots, the
    sentinel num_valid_slots (= T * top_k) pads each expert's run; expert_ids: int32, one per block,
    -1 for an expert on another rank. For each real slot s of block i with e = expert_ids[i]:
    c[s, :] = a[s // top_k] @ b[e]^T, times topk_weights[s] if MUL_ROUTED_WEIGHT (0 if e == -1).
    Grid: (num_tokens_post_padded // BLOCK_SIZE_M, cdiv(N, BLOCK_SIZE_N)). Strides in elements.
    """
    tl.static_assert(False, "moe_gemm_kernel is not written yet")
