"""WRONG: stores the token index (slot // K) instead of the flat slot index in sorted_token_ids. Killed by align-vllm-example."""

from __future__ import annotations

import math

import torch

CAUSES = ["gather_scatter_copies", "kernel_launches", "padding_rows", "router_topk",
          "small_gemms", "weight_reads"]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_ids(topk_ids, num_experts: int) -> None:
    if not isinstance(topk_ids, torch.Tensor) or topk_ids.dim() != 2:
        raise ValueError("topk_ids must be a 2-D torch.Tensor (tokens, top_k)")
    if topk_ids.dtype.is_floating_point or topk_ids.dtype.is_complex or topk_ids.dtype == torch.bool:
        raise ValueError("topk_ids must have an integer dtype")
    if not _is_int(num_experts) or num_experts < 1:
        raise ValueError("num_experts must be an int >= 1")
    if topk_ids.numel() and (int(topk_ids.min()) < 0 or int(topk_ids.max()) >= num_experts):
        raise ValueError("expert ids must lie in [0, num_experts)")


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int):
    """(sorted_token_ids int32, expert_ids int32, num_tokens_post_padded int), trimmed to the
    padded length. Entries are flat slot indices t*K + k; the sentinel is T*K."""
    _check_ids(topk_ids, num_experts)
    if not _is_int(block_size) or block_size < 1:
        raise ValueError("block_size must be an int >= 1")
    flat = topk_ids.reshape(-1).to("cpu", torch.int64)
    numel = flat.numel()
    order = torch.argsort(flat, stable=True)              # slots grouped by expert, ascending
    counts = torch.bincount(flat, minlength=num_experts).tolist()
    sorted_ids, expert_ids, start = [], [], 0
    for e, c in enumerate(counts):
        if c == 0:
            continue                                       # an expert without tokens gets no block
        blocks = -(-c // block_size)
        sorted_ids += (order[start:start + c] // topk_ids.shape[1]).tolist() + [numel] * (blocks * block_size - c)
        expert_ids += [e] * blocks
        start += c
    dev = topk_ids.device
    return (torch.tensor(sorted_ids, dtype=torch.int32, device=dev),
            torch.tensor(expert_ids, dtype=torch.int32, device=dev), len(sorted_ids))


def _check_forward(x, w1, w2, topk_weights, sorted_token_ids, expert_ids, block_size):
    for name, t in (("x", x), ("w1", w1), ("w2", w2), ("topk_weights", topk_weights),
                    ("sorted_token_ids", sorted_token_ids), ("expert_ids", expert_ids)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor")
    if x.dim() != 2 or w1.dim() != 3 or w2.dim() != 3 or topk_weights.dim() != 2:
        raise ValueError("shapes: x (T, H), w1 (E, 2I, H), w2 (E, H, I), topk_weights (T, K)")
    T, H = x.shape
    E, two_i, h1 = w1.shape
    if h1 != H or two_i % 2 or tuple(w2.shape) != (E, H, two_i // 2) or topk_weights.shape[0] != T:
        raise ValueError("shapes: x (T, H), w1 (E, 2I, H), w2 (E, H, I), topk_weights (T, K)")
    if not _is_int(block_size) or block_size < 1:
        raise ValueError("block_size must be an int >= 1")
    if sorted_token_ids.dim() != 1 or expert_ids.dim() != 1 or \
            sorted_token_ids.numel() != expert_ids.numel() * block_size:
        raise ValueError("sorted_token_ids must hold exactly block_size entries per expert_ids entry")
    numel = T * topk_weights.shape[1]
    ids = sorted_token_ids.to("cpu", torch.int64)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) > numel):
        raise ValueError("sorted_token_ids entries must lie in [0, T*K] (T*K is the padding sentinel)")
    valid = ids[ids < numel]
    if valid.numel() != torch.unique(valid).numel():
        raise ValueError("a slot appears twice in sorted_token_ids")
    eids = expert_ids.to("cpu", torch.int64)
    if eids.numel() and (int(eids.min()) < -1 or int(eids.max()) >= E):
        raise ValueError("expert_ids entries must lie in [-1, E)")


def fused_moe(x, w1, w2, topk_weights, sorted_token_ids, expert_ids, block_size):
    """One pass over the blocks of the layout: every block has one expert; rows are read at
    slot // K, the routing weight at the slot; one output row per slot, summed over K."""
    _check_forward(x, w1, w2, topk_weights, sorted_token_ids, expert_ids, block_size)
    T, H = x.shape
    K = topk_weights.shape[1]
    numel = T * K
    cdt = torch.float32 if x.dtype in (torch.bfloat16, torch.float16) else x.dtype
    xc, w1c, w2c = x.to(cdt), w1.to(cdt), w2.to(cdt)
    wflat = topk_weights.reshape(-1).to(cdt)
    inter = w1.shape[1] // 2
    out_slots = torch.zeros(numel, H, dtype=cdt, device=x.device)   # vLLM's intermediate_cache3
    ids_all = sorted_token_ids.to(torch.int64)
    for b, e in enumerate(expert_ids.tolist()):
        ids = ids_all[b * block_size:(b + 1) * block_size]
        ids = ids[ids < numel]                           # drop the padding sentinels
        if e < 0 or ids.numel() == 0:
            continue                                     # expert on another rank: contributes 0
        gu = xc[ids // K] @ w1c[e].T
        h = torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:]
        out_slots[ids] = (h @ w2c[e].T) * wflat[ids, None]
    return out_slots.view(T, K, H).sum(1).to(x.dtype)


def _check_routing(num_tokens, num_experts, top_k, block_size=1):
    for name, v in (("num_tokens", num_tokens), ("num_experts", num_experts), ("top_k", top_k),
                    ("block_size", block_size)):
        if not _is_int(v):
            raise ValueError(f"{name} must be an int")
    if num_tokens < 1 or num_experts < 1 or top_k < 1 or top_k > num_experts or block_size < 1:
        raise ValueError("need num_tokens >= 1, 1 <= top_k <= num_experts, block_size >= 1")


def _binom_pmf(n: int, p: float) -> torch.Tensor:
    c = torch.arange(n + 1, dtype=torch.float64)
    if p >= 1.0:
        return (c == n).to(torch.float64)
    logp = (math.lgamma(n + 1) - torch.lgamma(c + 1) - torch.lgamma(n - c + 1)
            + c * math.log(p) + (n - c) * math.log1p(-p))
    return torch.exp(logp)


def padding_cost(num_tokens: int, num_experts: int, top_k: int, block_size: int) -> dict:
    """Expected rows the sorted layout holds under uniform routing (c_e ~ Binomial(B, k/E))."""
    _check_routing(num_tokens, num_experts, top_k, block_size)
    real = num_tokens * top_k
    pmf = _binom_pmf(num_tokens, top_k / num_experts)
    c = torch.arange(num_tokens + 1, dtype=torch.float64)
    padded_per_expert = torch.ceil(c / block_size) * block_size
    padded = float(num_experts * (pmf * padded_per_expert).sum())
    return {"real_rows": real, "expected_padded_rows": padded,
            "expected_overhead": padded / real,
            "buffer_rows": real + num_experts * (block_size - 1)}


def loop_overheads(num_tokens: int, num_experts: int, top_k: int, hidden: int,
                   num_moe_layers: int, dtype_bytes: int, kernels_per_expert: int) -> dict:
    """The three costs of a per-expert Python loop, per the statement's model."""
    _check_routing(num_tokens, num_experts, top_k)
    for name, v in (("hidden", hidden), ("num_moe_layers", num_moe_layers),
                    ("dtype_bytes", dtype_bytes), ("kernels_per_expert", kernels_per_expert)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an int >= 1")
    active = num_experts * (1.0 - (1.0 - top_k / num_experts) ** num_tokens)
    routed = num_tokens * top_k
    return {"active_experts": active,
            "launches_per_step": active * kernels_per_expert * num_moe_layers,
            "rows_per_active_expert": routed / active,
            "gather_bytes_per_layer": 2 * routed * hidden * dtype_bytes,
            "scatter_add_bytes_per_layer": 3 * routed * hidden * dtype_bytes}


def slowdown_causes() -> list[str]:
    return ["gather_scatter_copies", "kernel_launches", "small_gemms"]
