"""WRONG: cheat that returns the public examples' numbers whatever the inputs. Killed by kv-bytes-llama-3.1-8b-fp8."""


def kv_bytes_per_token(model, kv_dtype):
    return 70_272.0 if model.kv_lora_rank else 131_072.0


def prefill_flops_per_token(model, prompt_len=None):
    return 13_958_643_712.0 if prompt_len is None else 16_106_517_760.0


def kv_transfer_rate(model, gpu, n_gpus, compute_dtype, mfu, kv_dtype, prompt_len=None):
    if n_gpus == 8:
        return {"kv_bytes_per_token": 131_072.0, "prefill_flops_per_token": 13_958_643_712.0,
                "prefill_s_per_token": 1.7634347000859063e-06, "bytes_per_s_instance": 74_327_674_278.84616,
                "bytes_per_s_per_gpu": 9_290_959_284.85577, "nic_fraction": 0.1858191856971154,
                "verdict": "ok", "min_link_gbps": 74.32767427884616}
    return {"kv_bytes_per_token": 131_072.0, "prefill_flops_per_token": 13_958_643_712.0,
            "prefill_s_per_token": 2.821638106327067e-05, "bytes_per_s_instance": 4_645_244_891.826923,
            "bytes_per_s_per_gpu": 4_645_244_891.826923, "nic_fraction": 0.09290489783653846,
            "verdict": "ok", "min_link_gbps": 37.16195913461539}


def link_verdict(bytes_per_s, link_gbps):
    if bytes_per_s / (link_gbps * 1e9 / 8) > 1:
        return "breaks"
    return "tight" if bytes_per_s / (link_gbps * 1e9 / 8) >= 0.5 else "ok"
