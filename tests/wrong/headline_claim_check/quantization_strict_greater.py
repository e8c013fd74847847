"""WRONG: lists "quantization" only when max_weight_bytes_per_param > 0.5; the statement's condition is >= 0.5
(INT4 weights at exactly 0.5 bytes make the claim physical)."""
import math
from inferprep.specs import ModelConfig, GPU, DType

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _isnum(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

def decode_weight_params(model):
    if not isinstance(model, ModelConfig):
        raise ValueError("model")
    m = model
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * H * qk if m.q_lora_rank > 0 else d * H * qk
        attn = q + d * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim) + H * m.v_head_dim * d
    else:
        attn = d * H * m.head_dim + 2 * d * m.n_kv_heads * m.head_dim + H * m.head_dim * d
    dense = 3 * d * m.ffn_size
    if m.n_routed_experts > 0:
        nd = m.first_dense_layers
        moe = d * m.n_routed_experts + (m.experts_per_token + m.n_shared_experts) * 3 * d * m.moe_ffn_size
        mlp = nd * dense + (m.n_layers - nd) * moe
    else:
        mlp = m.n_layers * dense
    return m.n_layers * attn + mlp + d * m.vocab_size

def kv_bytes_per_token(model, kv_dtype):
    if not isinstance(model, ModelConfig) or not isinstance(kv_dtype, DType):
        raise ValueError("types")
    m = model
    if m.kv_lora_rank > 0:
        return float(m.n_layers * (m.kv_lora_rank + m.qk_rope_head_dim) * kv_dtype.bytes_per_element)
    return float(m.n_layers * 2 * m.n_kv_heads * m.head_dim * kv_dtype.bytes_per_element)

def check_claim(model, gpu, claimed_tokens_per_s, context_len, weight_dtype, kv_dtype, n_gpus,
                max_gpus, max_tokens_per_step):
    if not isinstance(model, ModelConfig) or not isinstance(gpu, GPU) or not isinstance(weight_dtype, DType) or not isinstance(kv_dtype, DType):
        raise ValueError("types")
    N = claimed_tokens_per_s
    if not _isnum(N) or N <= 0:
        raise ValueError("N")
    if not _isint(context_len) or context_len < 0:
        raise ValueError("ctx")
    if not _isint(n_gpus) or n_gpus < 1 or not _isint(max_gpus) or max_gpus < 1:
        raise ValueError("gpus")
    if not _isnum(max_tokens_per_step) or max_tokens_per_step < 1:
        raise ValueError("mtps")
    P = decode_weight_params(model)
    W = P * weight_dtype.bytes_per_element
    K = context_len * kv_bytes_per_token(model, kv_dtype)
    BW = n_gpus * gpu.hbm_bytes_per_s
    frac = N * (W + K) / BW
    physical = frac <= 1
    mwb = max(0.0, (BW / N - K) / P)
    mtps = max(1.0, frac)
    min_gpus = math.ceil(N * (W + K) / gpu.hbm_bytes_per_s)
    if N * K < BW:
        min_batch = max(1, math.ceil(N * W / (BW - N * K)))
    else:
        min_batch = 0
    conds = []
    if not physical:
        if min_batch >= 1 and W + min_batch * K <= n_gpus * gpu.hbm_bytes:
            conds.append("batch")
        if mwb > 0.5:
            conds.append("quantization")
        if frac <= max_tokens_per_step:
            conds.append("speculation")
        if min_gpus <= max_gpus:
            conds.append("tensor_parallel")
    return {"bytes_per_token": float(W + K), "implied_bytes_per_s": float(N * (W + K)),
            "fraction_of_peak": float(frac), "physical": bool(physical),
            "max_weight_bytes_per_param": float(mwb), "min_tokens_per_step": float(mtps),
            "min_gpus": int(min_gpus), "min_batch": int(min_batch), "conditions": conds}
