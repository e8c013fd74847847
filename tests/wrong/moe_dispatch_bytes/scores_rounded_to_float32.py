"""WRONG: rounds every score to float32 (as torch.tensor would) before ranking groups and experts, so scores that differ below float32 resolution tie. Killed by route-mixtral-below-float32-limited."""

from __future__ import annotations

import math

from inferprep.specs import ModelConfig

_FORMATS = ("fp8_block128", "bf16")
_MODES = ("per_expert", "node_dedup")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_model(model: ModelConfig) -> None:
    E = model.n_routed_experts
    k = model.experts_per_token
    if not _is_int(E) or E < 1:
        raise ValueError("model has no routed experts")
    if not _is_int(k) or k < 1 or k > E:
        raise ValueError("experts_per_token outside [1, E]")
    if not (0 <= model.first_dense_layers <= model.n_layers):
        raise ValueError("first_dense_layers outside [0, n_layers]")


def _check_format(model: ModelConfig, dispatch_format: str) -> None:
    if dispatch_format not in _FORMATS:
        raise ValueError(f"unknown dispatch_format {dispatch_format!r}")
    if dispatch_format == "fp8_block128" and model.hidden_size % 128 != 0:
        raise ValueError("fp8_block128 needs hidden_size divisible by 128")


def payload_bytes(model: ModelConfig, dispatch_format: str = "fp8_block128",
                  low_latency: bool = False) -> dict:
    _check_model(model)
    _check_format(model, dispatch_format)
    d = model.hidden_size
    if dispatch_format == "fp8_block128":
        dispatch = d + 4 * (d // 128)
    else:
        dispatch = 2 * d
    if low_latency:
        dispatch += 16
    combine = 2 * d
    per_layer = model.experts_per_token * (dispatch + combine)
    moe_layers = int(model.n_layers - model.first_dense_layers)
    return {
        "dispatch_copy_bytes": dispatch,
        "combine_copy_bytes": combine,
        "per_token_per_layer": per_layer,
        "moe_layers": moe_layers,
        "per_token_per_step": per_layer * moe_layers,
    }


def _is_finite_number(x) -> bool:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    return math.isfinite(x)


def route_experts(model: ModelConfig, scores: list[list[float]], group_limited: bool) -> list[list[int]]:
    _check_model(model)
    E = model.n_routed_experts
    k = model.experts_per_token
    G = model.n_expert_groups
    T = model.topk_expert_groups
    if not isinstance(scores, (list, tuple)) or len(scores) == 0:
        raise ValueError("scores must be a non-empty list")
    limited = bool(group_limited) and G > 1
    if limited:
        if E % G != 0:
            raise ValueError("E not divisible by G")
        per = E // G
        if per < 2:
            raise ValueError("groups of fewer than 2 experts")
        if T < 1 or T > G:
            raise ValueError("topk_expert_groups outside [1, G]")
        if k > T * per:
            raise ValueError("k > T * E / G")
    out = []
    for row in scores:
        if not isinstance(row, (list, tuple)) or len(row) != E:
            raise ValueError("row of wrong length")
        for s in row:
            if not _is_finite_number(s):
                raise ValueError("score not a finite number")
        import struct
        row = [struct.unpack('f', struct.pack('f', float(x)))[0] for x in row]
        if limited:
            per = E // G
            gscores = []
            for j in range(G):
                grp = sorted(row[j * per:(j + 1) * per], reverse=True)
                gscores.append(grp[0] + grp[1])
            groups = sorted(range(G), key=lambda j: (-gscores[j], j))[:T]
            eligible = [e for j in groups for e in range(j * per, (j + 1) * per)]
        else:
            eligible = list(range(E))
        chosen = sorted(eligible, key=lambda e: (-row[e], e))[:k]
        out.append([int(e) for e in chosen])
    return out


def link_traffic(model: ModelConfig, topk_ids: list[list[int]], src_gpus: list[int], n_gpus: int,
                 gpus_per_node: int, mode: str, dispatch_format: str = "fp8_block128") -> dict:
    _check_model(model)
    _check_format(model, dispatch_format)
    if mode not in _MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if not _is_int(n_gpus) or n_gpus < 1:
        raise ValueError("n_gpus must be an int >= 1")
    if not _is_int(gpus_per_node) or gpus_per_node < 1:
        raise ValueError("gpus_per_node must be an int >= 1")
    if n_gpus % gpus_per_node != 0:
        raise ValueError("n_gpus not a multiple of gpus_per_node")
    E = model.n_routed_experts
    k = model.experts_per_token
    if E % n_gpus != 0:
        raise ValueError("E not divisible by n_gpus")
    if len(topk_ids) != len(src_gpus):
        raise ValueError("topk_ids and src_gpus lengths differ")
    epg = E // n_gpus
    g = gpus_per_node
    nic = nvl = loc = 0
    for row, src in zip(topk_ids, src_gpus):
        if not _is_int(src) or not (0 <= src < n_gpus):
            raise ValueError("source GPU out of range")
        if len(row) != k or any(not _is_int(e) or not (0 <= e < E) for e in row) or len(set(row)) != k:
            raise ValueError("bad topk row")
        src_node = src // g
        if mode == "per_expert":
            for e in row:
                dst = e // epg
                if dst == src:
                    loc += 1
                elif dst // g == src_node:
                    nvl += 1
                else:
                    nic += 1
        else:
            dsts = {e // epg for e in row}
            nodes = {}
            for dst in dsts:
                nodes.setdefault(dst // g, set()).add(dst)
            for node, gpus in nodes.items():
                if node == src_node:
                    for dst in gpus:
                        if dst == src:
                            loc += 1
                        else:
                            nvl += 1
                else:
                    nic += 1
                    entry = node * g + src % g
                    nvl += sum(1 for dst in gpus if dst != entry)
    p = payload_bytes(model, dispatch_format, low_latency=(mode == "per_expert"))
    per_copy = p["dispatch_copy_bytes"] + p["combine_copy_bytes"]
    return {
        "nic_copies": nic,
        "nvlink_copies": nvl,
        "local_copies": loc,
        "nic_bytes": nic * per_copy,
        "nvlink_bytes": nvl * per_copy,
    }
