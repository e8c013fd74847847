"""WRONG: cheat: a lookup table for Llama 3.1 70B and DeepSeek-V3 in BF16 (per-token bytes at full TP copies), 2 bytes per element otherwise. Killed by per-gpu-llama-31-70b-tp1-dcp1-bf16."""

TABLE = {"Llama 3.1 70B": 40_960.0, "DeepSeek-V3": 70_272.0}


def kv_bytes_per_token_per_gpu(model, tp, kv_dtype, dcp=1):
    return TABLE.get(model.name, 65_536.0) / dcp


def max_request_tokens(model, tp, kv_dtype, free_kv_bytes_per_gpu, dcp=1):
    return dcp * int(free_kv_bytes_per_gpu // (TABLE.get(model.name, 65_536.0)))


def which_fits(request_tokens, deployments):
    return [request_tokens <= max_request_tokens(d["model"], d["tp"], d["kv_dtype"],
                                                 d["free_kv_bytes_per_gpu"], d.get("dcp", 1))
            for d in deployments]
