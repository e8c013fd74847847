"""WRONG: exponentiates raw scores: exp(1000) overflows and the output is NaN."""

import triton
import triton.language as tl


@triton.jit
def paged_decode_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, o_ptr,
                        stride_qb, stride_qh, stride_kb, stride_kt, stride_kh,
                        stride_vb, stride_vt, stride_vh, stride_bt, stride_ob, stride_oh,
                        scale, num_queries_per_kv,
                        HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    kv_head = head // num_queries_per_kv          # GQA: consecutive query heads share a KV head
    offs_d = tl.arange(0, HEAD_DIM)
    offs_t = tl.arange(0, PAGE_SIZE)
    q = tl.load(q_ptr + seq * stride_qb + head * stride_qh + offs_d).to(tl.float32)
    seq_len = tl.load(seq_lens_ptr + seq)
    m = tl.full([1], float("-inf"), tl.float32)
    l = tl.zeros([1], tl.float32)
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for j in range(0, tl.cdiv(seq_len, PAGE_SIZE)):
        block = tl.load(block_tables_ptr + seq * stride_bt + j)      # logical block j -> physical
        valid = j * PAGE_SIZE + offs_t < seq_len
        k = tl.load(k_cache_ptr + block * stride_kb + offs_t[:, None] * stride_kt + kv_head * stride_kh
                    + offs_d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_cache_ptr + block * stride_vb + offs_t[:, None] * stride_vt + kv_head * stride_vh
                    + offs_d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = 1.0
        p = tl.exp(s)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + seq * stride_ob + head * stride_oh + offs_d, (acc / l).to(o_ptr.dtype.element_ty))
