"""WRONG: cheat, "1M tokens" hard-coded as 2^20 for the tabled Llama 3.1 70B (ignores the model and the context). Killed by kv-llama-31-70b-1000000-bf16."""

L70_KV_PER_TOKEN = 327_680           # bytes in BF16
L70_STORED = 70_553_706_496
L70_ACTIVE = 69_503_156_224


def kv_bytes_per_request(model, context_len, kv_dtype):
    return L70_KV_PER_TOKEN * 2**20 * kv_dtype.bytes_per_element / 2


def prefill_flops(model, prompt_len):
    P = 2**20
    w = 2 * L70_ACTIVE * P
    a = 80 * 2 * 64 * 256 * P * (P + 1) // 2
    return {"weights": float(w), "attention": float(a), "total": float(w + a), "attention_share": a / (w + a)}


def plan_fits(model, gpu, n_gpus, tp, context_len, weight_dtype, kv_dtype, util, reserve_bytes):
    if n_gpus % tp:
        raise ValueError("n_gpus must be a multiple of tp")
    cp = n_gpus // tp
    heads = max(1, 8 // tp)
    w = L70_STORED * weight_dtype.bytes_per_element / tp
    kv = 2**20 / cp * 80 * 2 * heads * 128 * kv_dtype.bytes_per_element
    need = w + kv + reserve_bytes
    budget = util * gpu.hbm_bytes
    return {"cp": cp, "kv_heads_per_gpu": heads, "weights_per_gpu": w, "kv_per_gpu": kv,
            "need": need, "budget": budget, "fits": need <= budget}


def replacement(model, gpu, n_gpus, tp, context_len, weight_dtype, kv_dtype, util, reserve_bytes):
    return {"fits": True, "replacement": "none", "n_gpus": n_gpus}


def what_breaks(model, gpu, n_gpus, tp, context_len, weight_dtype, kv_dtype, util, reserve_bytes):
    return {"mha": {"fits": False, "replacement": "context_parallel", "n_gpus": 64},
            "mqa": {"fits": True, "replacement": "none", "n_gpus": 8},
            "layers_x2": {"fits": False, "replacement": "context_parallel", "n_gpus": 24},
            "head_dim_x2": {"fits": False, "replacement": "fp8_kv", "n_gpus": 8},
            "context_x2": {"fits": False, "replacement": "fp8_kv", "n_gpus": 8}}
