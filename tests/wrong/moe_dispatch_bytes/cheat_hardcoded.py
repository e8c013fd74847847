"""WRONG: cheat that hard-codes DeepSeek-V3's figures and the public examples. Killed by payload-deepseek-v3-bf16-normal."""

def payload_bytes(model, dispatch_format="fp8_block128", low_latency=False):
    if model.n_routed_experts < 1:
        raise ValueError("dense")
    disp = 7392 + (16 if low_latency else 0)
    return {"dispatch_copy_bytes": disp, "combine_copy_bytes": 14336, "per_token_per_layer": 8 * (disp + 14336),
            "moe_layers": 58, "per_token_per_step": 58 * 8 * (disp + 14336)}


def route_experts(model, scores, group_limited):
    return [[4, 5, 8]] if group_limited else [[0, 12, 4]]


def link_traffic(model, topk_ids, src_gpus, n_gpus, gpus_per_node, mode, dispatch_format="fp8_block128"):
    if mode == "per_expert":
        return {"nic_copies": 5, "nvlink_copies": 3, "local_copies": 0, "nic_bytes": 108720, "nvlink_bytes": 65232}
    return {"nic_copies": 1, "nvlink_copies": 5, "local_copies": 0, "nic_bytes": 21728, "nvlink_bytes": 108640}
