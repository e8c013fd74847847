"""WRONG: scores a group by the sum of all its experts. Killed by route-deepseek-v3-float-limited."""

from __future__ import annotations

import math

from inferprep.specs import ModelConfig

FORMATS = ("fp8_block128", "bf16")
MODES = ("per_expert", "node_dedup")
LL_HEADER_BYTES = 16          # DeepEP low-latency dispatch: one int4 of source info per message


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_moe(m: ModelConfig) -> None:
    if not _is_int(m.n_routed_experts) or m.n_routed_experts < 1:
        raise ValueError("the model has no routed experts")
    if not _is_int(m.experts_per_token) or not 1 <= m.experts_per_token <= m.n_routed_experts:
        raise ValueError("experts_per_token must be in [1, n_routed_experts]")
    if not _is_int(m.hidden_size) or m.hidden_size < 1:
        raise ValueError("hidden_size must be >= 1")
    if not _is_int(m.n_layers) or not _is_int(m.first_dense_layers) \
            or not 0 <= m.first_dense_layers <= m.n_layers:
        raise ValueError("first_dense_layers must be in [0, n_layers]")


def _copy_bytes(m: ModelConfig, dispatch_format: str, low_latency: bool) -> tuple[int, int]:
    """Bytes of one dispatch copy and of one combine copy of one token."""
    if dispatch_format not in FORMATS:
        raise ValueError(f"dispatch_format must be one of {FORMATS}")
    if not isinstance(low_latency, bool):
        raise ValueError("low_latency must be a bool")
    d = m.hidden_size
    if dispatch_format == "fp8_block128":
        if d % 128:
            raise ValueError("fp8_block128 needs hidden_size divisible by 128")
        dispatch = d + (d // 128) * 4          # FP8 values + one fp32 scale per 128 channels
    else:
        dispatch = 2 * d                       # BF16
    if low_latency:
        dispatch += LL_HEADER_BYTES
    return dispatch, 2 * d                     # combine is always BF16


def payload_bytes(model: ModelConfig, dispatch_format: str = "fp8_block128",
                  low_latency: bool = False) -> dict:
    """Dispatch + combine bytes of one token per MoE layer and per decode step."""
    _check_moe(model)
    disp, comb = _copy_bytes(model, dispatch_format, low_latency)
    k = model.experts_per_token                # routed experts only: the shared expert runs locally
    per_layer = k * (disp + comb)
    moe_layers = model.n_layers - model.first_dense_layers
    return {"dispatch_copy_bytes": disp, "combine_copy_bytes": comb,
            "per_token_per_layer": per_layer, "moe_layers": moe_layers,
            "per_token_per_step": per_layer * moe_layers}


def _ranked(ids, score) -> list[int]:
    """ids ordered by score, highest first; ties: lower id first."""
    return sorted(ids, key=lambda i: (-score[i], i))


def route_experts(model: ModelConfig, scores: list[list[float]], group_limited: bool) -> list[list[int]]:
    """Top-k routed experts of every token, optionally group-limited (DeepSeek-V3 noaux_tc)."""
    _check_moe(model)
    if not isinstance(group_limited, bool):
        raise ValueError("group_limited must be a bool")
    E, k = model.n_routed_experts, model.experts_per_token
    G, TG = model.n_expert_groups, model.topk_expert_groups
    limited = group_limited and G > 1
    if limited:
        if E % G or E // G < 2:
            raise ValueError("routed experts must split into n_expert_groups groups of >= 2")
        if not 1 <= TG <= G or k > TG * (E // G):
            raise ValueError("topk_expert_groups must be in [1, n_expert_groups] and hold k experts")
    if not isinstance(scores, (list, tuple)) or len(scores) == 0:
        raise ValueError("scores must be a non-empty list of rows")
    out = []
    for row in scores:
        if not isinstance(row, (list, tuple)) or len(row) != E:
            raise ValueError(f"every row of scores must hold {E} numbers")
        for s in row:
            if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s):
                raise ValueError("scores must be finite numbers")
        candidates = range(E)
        if limited:
            size = E // G
            group_score = [sum(row[g * size:(g + 1) * size])
                           for g in range(G)]
            keep = _ranked(range(G), group_score)[:TG]
            candidates = [e for g in sorted(keep) for e in range(g * size, (g + 1) * size)]
        out.append(_ranked(candidates, row)[:k])
    return out


def link_traffic(model: ModelConfig, topk_ids: list[list[int]], src_gpus: list[int], n_gpus: int,
                 gpus_per_node: int, mode: str, dispatch_format: str = "fp8_block128") -> dict:
    """Copies and bytes one MoE layer (dispatch + combine) puts on the NIC and on NVLink."""
    _check_moe(model)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    for name, v in (("n_gpus", n_gpus), ("gpus_per_node", gpus_per_node)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an int >= 1")
    E, k = model.n_routed_experts, model.experts_per_token
    if n_gpus % gpus_per_node or E % n_gpus:
        raise ValueError("n_gpus must be a multiple of gpus_per_node and divide the routed experts")
    if not isinstance(topk_ids, (list, tuple)) or not isinstance(src_gpus, (list, tuple)) \
            or len(topk_ids) != len(src_gpus):
        raise ValueError("topk_ids and src_gpus must be lists of the same length")
    disp, comb = _copy_bytes(model, dispatch_format, low_latency=(mode == "per_expert"))
    per_gpu = E // n_gpus
    nic = nvl = local = 0
    for row, src in zip(topk_ids, src_gpus):
        if not _is_int(src) or not 0 <= src < n_gpus:
            raise ValueError("a source GPU is out of range")
        if not isinstance(row, (list, tuple)) or len(row) != k \
                or any(not _is_int(e) or not 0 <= e < E for e in row) or len(set(row)) != k:
            raise ValueError(f"every row of topk_ids must hold {k} distinct expert ids in [0, {E})")
        src_node = src // gpus_per_node
        dst_gpus = [e // per_gpu for e in row]
        if mode == "per_expert":                     # one message per selected expert
            for g in dst_gpus:
                if g == src:
                    local += 1
                elif g // gpus_per_node == src_node:
                    nvl += 1
                else:
                    nic += 1
            continue
        gpus = set(dst_gpus)                         # one copy per destination GPU ...
        nodes = {g // gpus_per_node for g in gpus}
        nic += len(nodes - {src_node})               # ... reaching each remote node once over RDMA
        for g in gpus:
            node = g // gpus_per_node
            entry = src if node == src_node else node * gpus_per_node + src % gpus_per_node
            if g == src:
                local += 1
            elif g != entry:
                nvl += 1                             # NVLink fan-out from the node's entry GPU
    copy = disp + comb                               # combine retraces the dispatch path
    return {"nic_copies": nic, "nvlink_copies": nvl, "local_copies": local,
            "nic_bytes": nic * copy, "nvlink_bytes": nvl * copy}
