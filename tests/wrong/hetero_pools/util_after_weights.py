"""WRONG: applies the utilization cap after subtracting the weights (util x (HBM - weights)). Killed by min-nodes-h100-sxm-1tb-room128k-pow2."""

from __future__ import annotations

import math

from inferprep.specs import GPU

FIELDS = ("model", "weight_format", "kv_cache_dtype", "kv_scale", "block_size", "kv_layout",
          "tp_head_split", "rope_scaling", "hybrid_kv_manager")
KV_DTYPES = {"auto": "bf16", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8_e4m3",
             "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def _num(name: str, v, lo: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo:
        raise ValueError(f"{name} must be a finite number >= {lo}")
    return float(v)


def _pos_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be an int >= 1")
    return v


def min_nodes(gpu: GPU, weight_bytes: float, util: float, reserve_bytes_per_gpu: float,
              kv_room_bytes_per_gpu: float, gpus_per_node: int = 8, power_of_two: bool = True) -> int:
    """Fewest nodes whose GPUs hold an even share of the weights and still have the KV room."""
    W = _num("weight_bytes", weight_bytes)
    reserve = _num("reserve_bytes_per_gpu", reserve_bytes_per_gpu)
    room = _num("kv_room_bytes_per_gpu", kv_room_bytes_per_gpu)
    if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
        raise ValueError("util must be in (0, 1]")
    g = _pos_int("gpus_per_node", gpus_per_node)
    if not isinstance(power_of_two, bool):
        raise ValueError("power_of_two must be a bool")

    def fits(n: int) -> bool:
        return util * (gpu.hbm_bytes - W / (g * n)) - reserve >= room

    spare = util * gpu.hbm_bytes - reserve - room
    spare = spare if spare > 0 else 1.0
    if spare < 0 or (spare == 0 and W > 0):
        raise ValueError("no node count fits: reserve + KV room exceed the usable HBM")
    n = max(1, math.ceil(W / (g * spare))) if spare > 0 else 1
    while n > 1 and fits(n - 1):
        n -= 1
    while not fits(n):
        n += 1
    if power_of_two:
        n = 1 << (n - 1).bit_length()          # smallest power of two >= n (fits is monotone in n)
    return n


def assign_roles(pools: dict, weight_bytes: float, util: float, reserve_bytes_per_gpu: float,
                 kv_room_bytes_per_gpu: float, gpus_per_node: int = 8, power_of_two: bool = True) -> dict:
    """Which of two GPU pools decodes: fewer nodes for the model; then higher HBM bandwidth; then name."""
    if not isinstance(pools, dict) or len(pools) != 2 or not all(isinstance(k, str) for k in pools):
        raise ValueError("pools must map exactly two names to GPUs")
    nodes = {name: min_nodes(gpu, weight_bytes, util, reserve_bytes_per_gpu, kv_room_bytes_per_gpu,
                             gpus_per_node, power_of_two) for name, gpu in pools.items()}
    decode = min(pools, key=lambda n: (nodes[n], -pools[n].hbm_bytes_per_s, n))
    prefill = next(n for n in pools if n != decode)
    return {"decode": decode, "prefill": prefill, "decode_nodes": nodes[decode],
            "prefill_nodes": nodes[prefill]}


def decode_step_ms(gpu: GPU, nodes: int, weight_bytes: float, kv_bytes_per_gpu: float,
                   bandwidth_efficiency: float, moe_layers: int, dispatch_us: float, combine_us: float,
                   gpus_per_node: int = 8) -> float:
    """HBM time of one decode step on `nodes` nodes plus the inter-node all-to-all latency."""
    n = _pos_int("nodes", nodes)
    g = _pos_int("gpus_per_node", gpus_per_node)
    W = _num("weight_bytes", weight_bytes)
    kv = _num("kv_bytes_per_gpu", kv_bytes_per_gpu)
    if isinstance(bandwidth_efficiency, bool) or not isinstance(bandwidth_efficiency, (int, float)) \
            or not 0 < bandwidth_efficiency <= 1:
        raise ValueError("bandwidth_efficiency must be in (0, 1]")
    if isinstance(moe_layers, bool) or not isinstance(moe_layers, int) or moe_layers < 0:
        raise ValueError("moe_layers must be an int >= 0")
    disp, comb = _num("dispatch_us", dispatch_us), _num("combine_us", combine_us)
    hbm_ms = 1e3 * (W / (g * n) + kv) / (gpu.hbm_bytes_per_s * bandwidth_efficiency)
    a2a_ms = moe_layers * (disp + comb) / 1e3 if n > 1 else 0.0
    return hbm_ms + a2a_ms


def pool_sizes(requests_per_s: float, prompt_tokens: int, output_tokens: int,
               prefill_tokens_per_s_per_instance: float, decode_tokens_per_s_per_instance: float,
               prefill_nodes_per_instance: int, decode_nodes_per_instance: int) -> dict:
    """Instances (and nodes) of each pool a steady load needs: ceil(demand / per-instance rate)."""
    lam = _num("requests_per_s", requests_per_s)
    P, O = _pos_int("prompt_tokens", prompt_tokens), _pos_int("output_tokens", output_tokens)
    pre = _num("prefill_tokens_per_s_per_instance", prefill_tokens_per_s_per_instance)
    dec = _num("decode_tokens_per_s_per_instance", decode_tokens_per_s_per_instance)
    if pre <= 0 or dec <= 0:
        raise ValueError("per-instance rates must be > 0")
    pn, dn = _pos_int("prefill_nodes_per_instance", prefill_nodes_per_instance), \
        _pos_int("decode_nodes_per_instance", decode_nodes_per_instance)
    p_inst = math.ceil(lam * P / pre)
    d_inst = math.ceil(lam * O / dec)
    return {"prefill_tokens_per_s": lam * P, "decode_tokens_per_s": lam * O,
            "prefill_instances": p_inst, "decode_instances": d_inst,
            "prefill_nodes": p_inst * pn, "decode_nodes": d_inst * dn}


def _normalized(cfg: dict) -> dict:
    if not isinstance(cfg, dict) or set(cfg) != set(FIELDS):
        raise ValueError(f"a config must have exactly the keys {FIELDS}")
    if cfg["kv_cache_dtype"] not in KV_DTYPES:
        raise ValueError(f"kv_cache_dtype must be one of {sorted(KV_DTYPES)}")
    out = dict(cfg)
    out["kv_cache_dtype"] = KV_DTYPES[cfg["kv_cache_dtype"]]
    out["kv_scale"] = 1.0 if cfg["kv_scale"] is None else float(cfg["kv_scale"])
    out["rope_scaling"] = cfg["rope_scaling"] or {}
    return out


def pd_mismatches(prefill_cfg: dict, decode_cfg: dict) -> list[str]:
    """Fields on which the prefill and decode halves disagree (sorted)."""
    a, b = _normalized(prefill_cfg), _normalized(decode_cfg)
    bad = []
    for f in FIELDS:
        if f == "kv_scale":
            both_fp8 = a["kv_cache_dtype"].startswith("fp8") and b["kv_cache_dtype"].startswith("fp8")
            if both_fp8 and a[f] != b[f]:
                bad.append(f)
        elif a[f] != b[f]:
            bad.append(f)
    return sorted(bad)
