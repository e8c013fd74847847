"""WRONG: when n_nodes does not divide n_groups, falls back to one node but keeps the groups (heaviest group first) instead of the global policy. Killed by "4 groups on 3 nodes, one slot per GPU: the global policy keeps expert order" and "3 groups on 2 nodes, tied integer loads: the global policy, not the groups heaviest first"."""

from __future__ import annotations

import math

from inferprep.specs import DType, GPU


# -- checks -------------------------------------------------------------------------------------
def _int(name: str, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


def _positive(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    return float(v)


def _loads(name: str, xs, n: int | None = None) -> list[float]:
    if not isinstance(xs, (list, tuple)) or len(xs) == 0:
        raise ValueError(f"{name} must be a non-empty list of numbers")
    if n is not None and len(xs) != n:
        raise ValueError(f"{name} has {len(xs)} entries, expected {n}")
    out = []
    for x in xs:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise ValueError(f"{name} entries must be finite numbers >= 0, got {x!r}")
        out.append(float(x))
    return out


def _rate(gpu: GPU, dtype: DType) -> float:
    if dtype not in (DType.BF16, DType.FP16, DType.FP8):
        raise ValueError(f"expert GEMMs run in BF16, FP16 or FP8, not {dtype}")
    return gpu.dense_flops(dtype)               # ValueError for FP8 on a GPU without FP8 tensor cores


# -- 1. step time = the busiest GPU ---------------------------------------------------------------
def expert_time(tokens: float, gpu: GPU, dtype: DType, expert_bytes: float, flops_per_token: float) -> float:
    """Roofline time of one expert's grouped GEMM: its weights are read once, its tokens computed."""
    if tokens == 0:
        return 0.0                              # an expert with no tokens is skipped
    return max(tokens * flops_per_token / _rate(gpu, dtype), expert_bytes / gpu.hbm_bytes_per_s)


def gpu_step_time(counts, gpu_of, n_gpus: int, gpu: GPU, dtype: DType, expert_bytes: float,
                  flops_per_token: float) -> dict:
    """``counts[i]``: tokens of physical expert i this step; ``gpu_of[i]``: the GPU holding it."""
    _int("n_gpus", n_gpus, 1)
    counts = _loads("counts", counts)
    if not isinstance(gpu_of, (list, tuple)) or len(gpu_of) != len(counts):
        raise ValueError("gpu_of must be a list with one GPU index per physical expert")
    for g in gpu_of:
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < n_gpus:
            raise ValueError(f"gpu_of entries must be ints in [0, n_gpus), got {g!r}")
    _positive("expert_bytes", expert_bytes)
    _positive("flops_per_token", flops_per_token)
    _rate(gpu, dtype)
    per_gpu = [0.0] * n_gpus
    for c, g in zip(counts, gpu_of):
        per_gpu[g] += expert_time(c, gpu, dtype, expert_bytes, flops_per_token)
    step = max(per_gpu)
    return {"per_gpu_s": per_gpu, "step_s": step, "busiest_gpu": per_gpu.index(step)}


# -- 2. when skew starts to cost compute ----------------------------------------------------------
def skew_threshold(expert_counts, top_k: int, gpu: GPU, dtype: DType, expert_bytes: float,
                   flops_per_token: float) -> dict:
    """Tokens per step at which the hottest expert's GEMM turns compute-bound."""
    counts = _loads("expert_counts", expert_counts)
    _int("top_k", top_k, 1)
    if top_k > len(counts):
        raise ValueError("top_k cannot exceed the number of experts")
    total = sum(counts)
    if total == 0:
        raise ValueError("expert_counts are all zero: no routing statistics")
    _positive("expert_bytes", expert_bytes)
    _positive("flops_per_token", flops_per_token)
    ridge = expert_bytes * _rate(gpu, dtype) / (flops_per_token * gpu.hbm_bytes_per_s)
    pi_max = max(counts) / total               # share of routing slots the hottest expert gets
    return {"ridge_tokens_per_expert": ridge, "hot_share": pi_max, "threshold_batch": ridge / (top_k * pi_max)}


# -- 3. EPLB ----------------------------------------------------------------------------------------
def balanced_packing(weights: list[float], n_packs: int) -> tuple[list[int], list[int]]:
    """Each pack gets exactly len(weights) / n_packs items: heaviest item first (ties: lower
    index first) into the lightest pack that still has room (ties: lower pack). With one item
    per pack, item i goes to pack i. Returns (pack of each item, arrival rank in its pack)."""
    per = len(weights) // n_packs
    if per == 1:
        return list(range(len(weights))), [0] * len(weights)
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    load, items = [0.0] * n_packs, [0] * n_packs
    pack, rank = [-1] * len(weights), [-1] * len(weights)
    for i in order:
        p = min((j for j in range(n_packs) if items[j] < per), key=lambda j: (load[j], j))
        pack[i], rank[i] = p, items[p]
        load[p] += weights[i]
        items[p] += 1
    return pack, rank


def replicate_experts(load: list[float], n_phys: int) -> tuple[list[int], list[int]]:
    """Physical slot i < len(load) is expert i; each extra slot goes to the expert with the largest
    load per replica (ties: lower index). Returns (phy2log, replica count per expert)."""
    cnt = [1] * len(load)
    phy2log = list(range(len(load)))
    for _ in range(n_phys - len(load)):
        e = max(range(len(load)), key=lambda j: (load[j] / cnt[j], -j))
        phy2log.append(e)
        cnt[e] += 1
    return phy2log, cnt


def rebalance(load, num_physical: int, n_gpus: int, n_groups: int = 1, n_nodes: int = 1) -> dict:
    """EPLB: hierarchical policy when n_nodes divides n_groups, else global (one group, one node).
    Physical slot s lives on GPU s // (num_physical // n_gpus)."""
    load = _loads("load", load)
    E = len(load)
    _int("num_physical", num_physical, 1)
    _int("n_gpus", n_gpus, 1)
    _int("n_groups", n_groups, 1)
    _int("n_nodes", n_nodes, 1)
    if num_physical < E:
        raise ValueError("num_physical must be >= the number of experts")
    if num_physical % n_gpus:
        raise ValueError("num_physical must be a multiple of n_gpus")
    if n_gpus % n_nodes:
        raise ValueError("n_gpus must be a multiple of n_nodes")
    if E % n_groups:
        raise ValueError("the number of experts must be a multiple of n_groups")
    if n_groups % n_nodes:                      # EPLB falls back to the global policy
        n_nodes = 1                            # BUG: keeps the groups, heaviest group first
    group_size, groups_per_node = E // n_groups, n_groups // n_nodes
    # 1. groups -> nodes; node n's local ("mlog") experts: its groups in arrival order, experts in order
    group_load = [sum(load[g * group_size:(g + 1) * group_size]) for g in range(n_groups)]
    gpack, grank = balanced_packing(group_load, n_nodes)
    local = [[0] * (groups_per_node * group_size) for _ in range(n_nodes)]
    for g in range(n_groups):
        for j in range(group_size):
            local[gpack[g]][grank[g] * group_size + j] = g * group_size + j
    # 2. replicate inside each node; 3. pack each node's replicas onto its GPUs
    phys_per_node, gpus_per_node = num_physical // n_nodes, n_gpus // n_nodes
    per_gpu = num_physical // n_gpus
    phy2log = [-1] * num_physical
    count = [0] * E
    for n in range(n_nodes):
        node_load = [load[e] for e in local[n]]
        p2m, cnt = replicate_experts(node_load, phys_per_node)
        pack, rank = balanced_packing([node_load[m] / cnt[m] for m in p2m], gpus_per_node)
        for i, m in enumerate(p2m):
            phy2log[n * phys_per_node + pack[i] * per_gpu + rank[i]] = local[n][m]
        for m, e in enumerate(local[n]):
            count[e] = cnt[m]
    gpu_load = [0.0] * n_gpus
    for s, e in enumerate(phy2log):
        gpu_load[s // per_gpu] += load[e] / count[e]
    return {"phy2log": phy2log, "replica_count": count, "gpu_load": gpu_load}


# -- 4. a plan fit to one day, served on the next ones ----------------------------------------------
def plan_step_time(phy2log, load, n_gpus: int, gpu: GPU, dtype: DType, expert_bytes: float,
                   flops_per_token: float) -> float:
    """Step time when today's tokens of expert e split evenly over the plan's replicas of e."""
    count = [0] * len(load)
    for e in phy2log:
        count[e] += 1
    per_gpu = len(phy2log) // n_gpus
    counts = [load[e] / count[e] for e in phy2log]
    return gpu_step_time(counts, [s // per_gpu for s in range(len(phy2log))], n_gpus, gpu, dtype,
                         expert_bytes, flops_per_token)["step_s"]


def decay_curve(daily_loads, num_physical: int, n_gpus: int, gpu: GPU, dtype: DType, expert_bytes: float,
                flops_per_token: float, n_groups: int = 1, n_nodes: int = 1) -> list[float]:
    """ratio[d] = step time of day d's tokens under the plan fit to day 0, over the step time under
    the plan fit to day d itself."""
    if not isinstance(daily_loads, (list, tuple)) or len(daily_loads) == 0:
        raise ValueError("daily_loads must be a non-empty list of per-expert loads")
    days = [_loads(f"daily_loads[{d}]", x, len(daily_loads[0]) if isinstance(daily_loads[0], (list, tuple)) else None)
            for d, x in enumerate(daily_loads)]
    plan = rebalance(days[0], num_physical, n_gpus, n_groups, n_nodes)["phy2log"]
    out = []
    for today in days:
        if sum(today) == 0:
            raise ValueError("a day with no tokens has no step time to compare")
        fresh = rebalance(today, num_physical, n_gpus, n_groups, n_nodes)["phy2log"]
        args = (n_gpus, gpu, dtype, expert_bytes, flops_per_token)
        out.append(plan_step_time(plan, today, *args) / plan_step_time(fresh, today, *args))
    return out
