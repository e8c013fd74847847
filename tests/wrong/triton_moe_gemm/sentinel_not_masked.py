"""WRONG: treats the padding sentinel as a slot: stores a row past the end of C."""

import triton
import triton.language as tl


def block_sizes(num_tokens: int, n: int, k: int) -> dict:
    return {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32}


@triton.jit
def moe_gemm_kernel(a_ptr, b_ptr, c_ptr, topk_weights_ptr, sorted_token_ids_ptr, expert_ids_ptr,
                    num_tokens_post_padded, num_valid_slots, top_k, N, K,
                    stride_am, stride_be, stride_bn, stride_cm,
                    MUL_ROUTED_WEIGHT: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    if pid_m * BLOCK_SIZE_M < num_tokens_post_padded:
        offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        slots = tl.load(sorted_token_ids_ptr + offs_m)
        real = slots <= num_valid_slots
        expert = tl.load(expert_ids_ptr + pid_m)       # one expert per block of the layout
        offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        rows = slots // top_k                          # slot t*top_k + k belongs to token t
        acc = tl.zeros([BLOCK_SIZE_M, BLOCK_SIZE_N], dtype=tl.float32)
        if expert >= 0:                                # -1: the expert lives on another rank
            for k0 in range(0, K, BLOCK_SIZE_K):
                kk = k0 + offs_k
                a = tl.load(a_ptr + rows[:, None] * stride_am + kk[None, :],
                            mask=real[:, None] & (kk[None, :] < K), other=0.0)
                b = tl.load(b_ptr + expert * stride_be + offs_n[None, :] * stride_bn + kk[:, None],
                            mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
                acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
            if MUL_ROUTED_WEIGHT:
                w = tl.load(topk_weights_ptr + slots, mask=real, other=0.0)
                acc = acc * w[:, None]
        tl.store(c_ptr + slots[:, None] * stride_cm + offs_n[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=real[:, None] & (offs_n[None, :] < N))
