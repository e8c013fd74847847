"""Paged decode attention in Triton. Fill in the kernel; see the statement."""

import triton
import triton.language as tl


@triton.jit
def paged_decode_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, o_ptr,
                        stride_qb, stride_qh, stride_kb, stride_kt, stride_kh,
                        stride_vb, stride_vt, stride_vh, stride_bt, stride_ob, stride_oh,
                        scale, num_queries_per_kv,
                        HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr):
    """Program (b, h): o[b, h] = softmax(scale * K_b q[b, h]) V_b over sequence b's seq_lens[b] tokens.

    q, o: (batch, heads, HEAD_DIM); element [b, h, d] at q_ptr + b * stride_qb + h * stride_qh + d.
    k_cache, v_cache: (num_blocks, PAGE_SIZE, kv_heads, HEAD_DIM); element [blk, t, g, d] at
        k_cache_ptr + blk * stride_kb + t * stride_kt + g * stride_kh + d (the same for v).
    block_tables: (batch, max_blocks) int32; row b lists sequence b's physical blocks in order:
        position p lives in block block_tables[b, p // PAGE_SIZE], slot p % PAGE_SIZE.
    seq_lens: (batch,) int32, >= 1. Query head h reads KV head h // num_queries_per_kv.
    Grid: (batch, heads). Strides are in elements.
    """
    tl.static_assert(False, "paged_decode_kernel is not written yet")
