"""WRONG: pd_mismatches lower-cases every string field, so 'NHD' and 'nhd' agree although strings compare as given. Killed by pd-strings-differ-only-in-case."""

from __future__ import annotations

import math

from inferprep.specs import GPU


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_size(x, what: str) -> None:
    if not _is_num(x) or not math.isfinite(x) or x < 0:
        raise ValueError(f"{what} must be a finite number >= 0")


def _check_common(util, weight_bytes, reserve, room, gpus_per_node) -> None:
    if not _is_num(util) or not (0 < util <= 1):
        raise ValueError("util outside (0, 1]")
    _check_size(weight_bytes, "weight_bytes")
    _check_size(reserve, "reserve_bytes_per_gpu")
    _check_size(room, "kv_room_bytes_per_gpu")
    if not _is_int(gpus_per_node) or gpus_per_node < 1:
        raise ValueError("gpus_per_node must be an int >= 1")


def _free(gpu, n, W, util, reserve, g):
    return util * gpu.hbm_bytes - W / (g * n) - reserve


def min_nodes(gpu: GPU, weight_bytes: float, util: float, reserve_bytes_per_gpu: float,
              kv_room_bytes_per_gpu: float, gpus_per_node: int = 8, power_of_two: bool = True) -> int:
    _check_common(util, weight_bytes, reserve_bytes_per_gpu, kv_room_bytes_per_gpu, gpus_per_node)
    W, R, K, g = weight_bytes, reserve_bytes_per_gpu, kv_room_bytes_per_gpu, gpus_per_node
    cap = util * gpu.hbm_bytes - R - K
    if W == 0:
        if cap >= 0:
            return 1
        raise ValueError("no node count fits")
    if cap <= 0:
        raise ValueError("no node count fits")

    def fits(n):
        return _free(gpu, n, W, util, R, g) >= K

    if power_of_two:
        n = 1
        while not fits(n):
            n *= 2
        return n
    n = max(1, math.ceil(W / (g * cap)))
    while n > 1 and fits(n - 1):
        n -= 1
    while not fits(n):
        n += 1
    return n


def assign_roles(pools: dict, weight_bytes: float, util: float, reserve_bytes_per_gpu: float,
                 kv_room_bytes_per_gpu: float, gpus_per_node: int = 8, power_of_two: bool = True) -> dict:
    if not isinstance(pools, dict) or len(pools) != 2:
        raise ValueError("pools must map exactly two names")
    nodes = {name: min_nodes(gpu, weight_bytes, util, reserve_bytes_per_gpu, kv_room_bytes_per_gpu,
                             gpus_per_node, power_of_two) for name, gpu in pools.items()}
    order = sorted(pools, key=lambda nm: (nodes[nm], -pools[nm].hbm_bytes_per_s, nm))
    dec, pre = order
    return {"decode": dec, "prefill": pre, "decode_nodes": nodes[dec], "prefill_nodes": nodes[pre]}


def decode_step_ms(gpu: GPU, nodes: int, weight_bytes: float, kv_bytes_per_gpu: float,
                   bandwidth_efficiency: float, moe_layers: int, dispatch_us: float, combine_us: float,
                   gpus_per_node: int = 8) -> float:
    if not _is_int(nodes) or nodes < 1:
        raise ValueError("nodes must be an int >= 1")
    if not _is_int(gpus_per_node) or gpus_per_node < 1:
        raise ValueError("gpus_per_node must be an int >= 1")
    if not _is_num(bandwidth_efficiency) or not (0 < bandwidth_efficiency <= 1):
        raise ValueError("bandwidth_efficiency outside (0, 1]")
    for x, w in ((weight_bytes, "weight_bytes"), (kv_bytes_per_gpu, "kv_bytes_per_gpu"),
                 (dispatch_us, "dispatch_us"), (combine_us, "combine_us")):
        _check_size(x, w)
    if not _is_int(moe_layers) or moe_layers < 0:
        raise ValueError("moe_layers must be an int >= 0")
    hbm = 1e3 * (weight_bytes / (gpus_per_node * nodes) + kv_bytes_per_gpu) / (
        gpu.hbm_bytes_per_s * bandwidth_efficiency)
    if nodes > 1:
        hbm += moe_layers * (dispatch_us + combine_us) / 1e3
    return float(hbm)


def pool_sizes(requests_per_s: float, prompt_tokens: int, output_tokens: int,
               prefill_tokens_per_s_per_instance: float, decode_tokens_per_s_per_instance: float,
               prefill_nodes_per_instance: int, decode_nodes_per_instance: int) -> dict:
    if not _is_num(requests_per_s) or not math.isfinite(requests_per_s) or requests_per_s < 0:
        raise ValueError("bad load")
    for t in (prompt_tokens, output_tokens):
        if not _is_int(t) or t < 1:
            raise ValueError("token counts must be ints >= 1")
    for r in (prefill_tokens_per_s_per_instance, decode_tokens_per_s_per_instance):
        if not _is_num(r) or math.isnan(r) or r <= 0:
            raise ValueError("per-instance rate must be > 0")
    for n in (prefill_nodes_per_instance, decode_nodes_per_instance):
        if not _is_int(n) or n < 1:
            raise ValueError("nodes per instance must be ints >= 1")
    pd = float(requests_per_s) * prompt_tokens
    dd = float(requests_per_s) * output_tokens
    pi = math.ceil(pd / prefill_tokens_per_s_per_instance)
    di = math.ceil(dd / decode_tokens_per_s_per_instance)
    return {"prefill_tokens_per_s": pd, "decode_tokens_per_s": dd,
            "prefill_instances": pi, "decode_instances": di,
            "prefill_nodes": pi * prefill_nodes_per_instance,
            "decode_nodes": di * decode_nodes_per_instance}


_KEYS = {"model", "weight_format", "kv_cache_dtype", "kv_scale", "block_size", "kv_layout",
         "tp_head_split", "rope_scaling", "hybrid_kv_manager"}
_DTYPES = {"auto": "bf16", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8_e4m3",
           "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
_FP8 = {"fp8_e4m3", "fp8_e5m2"}


def _norm(cfg) -> dict:
    if not isinstance(cfg, dict) or set(cfg) != _KEYS:
        raise ValueError("config must have exactly the nine keys")
    dt = cfg["kv_cache_dtype"]
    if not isinstance(dt, str) or dt not in _DTYPES:
        raise ValueError(f"unknown kv_cache_dtype {dt!r}")
    out = {k: (v.lower() if isinstance(v, str) else v) for k, v in cfg.items()}
    out["kv_cache_dtype"] = _DTYPES[dt]
    out["kv_scale"] = 1.0 if cfg["kv_scale"] is None else cfg["kv_scale"]
    out["rope_scaling"] = None if cfg["rope_scaling"] in (None, {}) else cfg["rope_scaling"]
    return out


def pd_mismatches(prefill_cfg: dict, decode_cfg: dict) -> list[str]:
    a, b = _norm(prefill_cfg), _norm(decode_cfg)
    bad = []
    for key in sorted(_KEYS):
        if key == "kv_scale":
            if a["kv_cache_dtype"] in _FP8 and b["kv_cache_dtype"] in _FP8 and a[key] != b[key]:
                bad.append(key)
        elif a[key] != b[key]:
            bad.append(key)
    return bad
