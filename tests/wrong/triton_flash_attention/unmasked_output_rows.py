"""WRONG: stores every row of the last query tile, past n_q."""

import triton
import triton.language as tl


def block_sizes(head_dim: int, causal: bool) -> dict:
    return {"BLOCK_M": 16, "BLOCK_N": 16}


@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,
                           stride_qh, stride_qm, stride_kh, stride_kn, stride_vh, stride_vn,
                           stride_oh, stride_om, stride_lh, n_q, n_k, scale,
                           HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < n_q
    q = tl.load(q_ptr + head * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=row_ok[:, None], other=0.0).to(tl.float32)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    end = n_k
    if CAUSAL:
        # query i sees keys j <= i + (n_k - n_q): later key tiles are never read
        end = tl.minimum(n_k, (pid_m + 1) * BLOCK_M + n_k - n_q)
    for start in range(0, end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        col_ok = offs_n < n_k
        k = tl.load(k_ptr + head * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :],
                    mask=col_ok[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + head * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :],
                    mask=col_ok[:, None], other=0.0).to(tl.float32)
        s = tl.dot(q, tl.trans(k)) * scale
        keep = col_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None] + (n_k - n_q))
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        # a row that has seen only masked keys keeps m = -inf: rescale by 0, not exp(nan)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        p = tl.where(keep, tl.exp(s - m_new[:, None]), 0.0)
        l = alpha * l + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m = m_new
    out = acc / l[:, None]
    tl.store(o_ptr + head * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
             out.to(o_ptr.dtype.element_ty))
    tl.store(lse_ptr + head * stride_lh + offs_m, m + tl.log(l), mask=row_ok)
