"""Hidden cases for expert-load-balance.

Core cases, in order: per-GPU step times (hot and cold experts, zero-token experts, BF16 vs FP8
peaks, a made-up GPU, ties); the skew threshold (uniform, Zipf-skewed, unnormalized counts,
varied top-k and GPUs); EPLB placements compared slot by slot (both layers of the deepseek-ai/EPLB
README example, the global policy, group/node fallbacks, one replica per GPU, equal loads, Zipf
loads of DeepSeek-V3's 256 experts); decay curves of a plan fit to day 0 on hidden log-random-walk
traces. Integer loads are scaled by lcm(1..max replicas) so every load per replica and every GPU
sum is an exact float64 integer: ties are exact ties, never rounding accidents; other loads are
continuous random floats (no near-ties). Then the input checks.
"""

from __future__ import annotations

import dataclasses
import math
import random

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType

RTOL = 1e-12
FP8, BF16 = DType.FP8, DType.BF16
H100 = specs.H100_SXM
# DeepSeek-V3 routed expert: gate, up (7168 x 2048) and down (2048 x 7168), FP8 weights
DSV3_BYTES, DSV3_FLOPS = 3 * 7168 * 2048, 2 * 3 * 7168 * 2048
ODD_GPU = dataclasses.replace(H100, name="made-up", bf16_dense_flops=700e12, fp8_dense_flops=1500e12,
                              hbm_bytes_per_s=2.2e12)
README_W = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
            [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]


def _zipf(rnd: random.Random, E: int, alpha: float, total: float) -> list[float]:
    w = [(i + 1) ** -alpha for i in range(E)]
    rnd.shuffle(w)
    s = sum(w)
    return [total * x / s for x in w]


def _expect_floats(got, want: list[float], name: str, rtol: float = RTOL) -> None:
    if not isinstance(got, (list, tuple)) or len(got) != len(want):
        fail(f"{name}: expected a list of {len(want)} numbers, got {type(got).__name__}"
             + (f" of length {len(got)}" if isinstance(got, (list, tuple)) else ""))
    scale = max((abs(w) for w in want), default=0.0)
    for i, (a, b) in enumerate(zip(got, want)):
        expect_close(a, b, name=f"{name}[{i}]", rtol=rtol, atol=1e-15 * scale)


def _check_keys(out, keys) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {sorted(keys)}")


# -- step time -----------------------------------------------------------------------------------
def _step(g: Grading, ref, case: str, counts, gpu_of, n_gpus, gpu, dtype, eb=DSV3_BYTES, fl=DSV3_FLOPS):
    with g.case(case):
        out = g.call("gpu_step_time", counts, gpu_of, n_gpus, gpu, dtype, eb, fl)
        want = ref.gpu_step_time(counts, gpu_of, n_gpus, gpu, dtype, eb, fl)
        _check_keys(out, want)
        _expect_floats(out["per_gpu_s"], want["per_gpu_s"], "['per_gpu_s']")
        expect_close(out["step_s"], want["step_s"], name="['step_s']", rtol=RTOL)
        expect_equal(out["busiest_gpu"], want["busiest_gpu"], name="['busiest_gpu']")


def _step_cases(g: Grading, ref) -> None:
    rnd = random.Random(3401)
    E, G = 64, 8
    counts = _zipf(rnd, E, 1.0, 4096 * 8)
    for i in rnd.sample(range(E), 3):
        counts[i] = 0.0
    _step(g, ref, "step time: 64 DeepSeek-V3 experts on 8 GPUs in FP8, hot, cold and idle experts",
          counts, [i // 8 for i in range(E)], G, H100, FP8)
    counts = [float(rnd.randint(0, 900)) for _ in range(40)]
    gpu_of = [rnd.randrange(6) for _ in range(40)]
    _step(g, ref, "step time: made-up GPU, BF16 math, uneven placement", counts, gpu_of, 6, ODD_GPU, BF16)
    # the FP8 and BF16 peaks differ by 2x: one hot expert per GPU, between the two ridges
    counts = [400.0, 5.0, 5.0, 5.0] * 4
    _step(g, ref, "step time: H100, BF16 math, experts between the BF16 and FP8 ridges",
          counts, [i // 4 for i in range(16)], 4, H100, BF16)
    _step(g, ref, "step time: H100, FP8 math, experts between the BF16 and FP8 ridges",
          counts, [i // 4 for i in range(16)], 4, H100, FP8)
    # memory-bound everywhere: the busiest GPU is the one holding the most experts with tokens
    counts = [3.0] * 10 + [0.0] * 6
    _step(g, ref, "step time: all experts memory-bound, idle experts cost nothing",
          counts, [0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 2], 4, specs.H200_SXM, FP8)
    _step(g, ref, "step time: equal GPUs (ties go to the lowest GPU)", [700.0] * 12, [i % 4 for i in range(12)],
          4, specs.B200, FP8)
    _step(g, ref, "step time: a GPU that holds no expert", [10.0, 2000.0, 0.0, 50.0], [2, 2, 0, 0], 5, H100, FP8)
    _step(g, ref, "step time: one expert on one GPU", [37.0], [0], 1, H100, FP8)
    _step(g, ref, "step time: tiny made-up expert (0.5 B of weights, 0.5 FLOP per token)", [3.0, 1.0], [0, 1], 2,
          H100, FP8, 0.5, 0.5)
    # binary-exact ridge: F = 2^50, BW = 2^40, 2^10 FLOP/token, 2^20 bytes -> ridge at 2^20 tokens
    exact = dataclasses.replace(H100, name="binary", fp8_dense_flops=2.0 ** 50, hbm_bytes_per_s=2.0 ** 40)
    _step(g, ref, "step time: experts at, below and above the ridge exactly", [2.0 ** 20, 2.0 ** 19, 2.0 ** 21, 1.0],
          [0, 1, 1, 0], 2, exact, FP8, 2.0 ** 20, 2.0 ** 10)


# -- skew threshold --------------------------------------------------------------------------------
def _skew(g: Grading, ref, case, counts, k, gpu, dtype, eb=DSV3_BYTES, fl=DSV3_FLOPS):
    with g.case(case):
        out = g.call("skew_threshold", counts, k, gpu, dtype, eb, fl)
        want = ref.skew_threshold(counts, k, gpu, dtype, eb, fl)
        _check_keys(out, want)
        for key in ("ridge_tokens_per_expert", "hot_share", "threshold_batch"):
            expect_close(out[key], want[key], name=f"[{key!r}]", rtol=RTOL)


def _skew_cases(g: Grading, ref) -> None:
    rnd = random.Random(3402)
    _skew(g, ref, "skew threshold: uniform routing, 256 experts, top-8, H100 FP8", [1000] * 256, 8, H100, FP8)
    z6 = [round(x) for x in _zipf(rnd, 256, 0.6, 8 * 65536)]
    _skew(g, ref, "skew threshold: Zipf-skewed counts of 256 experts, top-8, H100 FP8", z6, 8, H100, FP8)
    _skew(g, ref, "skew threshold: Zipf-skewed counts, top-8, H100 BF16 math", z6, 8, H100, BF16)
    z1 = [round(x) for x in _zipf(rnd, 64, 1.0, 6 * 1_000_003)]
    _skew(g, ref, "skew threshold: 64 experts, top-6, counts over many steps, made-up GPU", z1, 6, ODD_GPU, FP8,
          3 * 2048 * 1408 * 2, 2 * 3 * 2048 * 1408)
    _skew(g, ref, "skew threshold: 8 experts, top-1", [5.5, 1.0, 2.0, 0.0, 3.25, 1.0, 7.0, 0.25], 1, H100, FP8)
    _skew(g, ref, "skew threshold: top_k = E (every expert every token)", [3.0, 1.0, 2.0, 2.0], 4, H100, FP8)
    _skew(g, ref, "skew threshold: 8 experts, top-2, H200 BF16", [5.5, 1.0, 2.0, 0.0, 3.25, 1.0, 7.0, 0.25], 2,
          specs.H200_SXM, BF16, 3 * 4096 * 14336 * 2, 2 * 3 * 4096 * 14336)


# -- EPLB --------------------------------------------------------------------------------------------
def _scaled(ref, load: list[int], P: int, G: int, groups: int, nodes: int) -> list[int]:
    """Scale integer loads by lcm(1..max replica count): the plan is unchanged (the rule is scale
    free) and every load per replica and every GPU sum becomes an exact float64 integer."""
    m = max(ref.rebalance(load, P, G, groups, nodes)["replica_count"])
    return [x * math.lcm(*range(1, m + 1)) for x in load]


def _plan(g: Grading, ref, case: str, load, P, G, groups=1, nodes=1, fixture=None):
    with g.case(case):
        want = ref.rebalance(load, P, G, groups, nodes)
        if fixture is not None and want["phy2log"] != fixture:      # the grader's own sanity check
            raise AssertionError("reference disagrees with the EPLB README fixture")
        out = g.call("rebalance", load, P, G, groups, nodes)
        _check_keys(out, want)
        expect_equal(out["replica_count"], want["replica_count"], name="['replica_count']")
        got = out["phy2log"]
        if not isinstance(got, list) or len(got) != P:
            fail(f"['phy2log']: expected a list of {P} expert ids")
        per = P // G
        loads = [0.0] * G
        for s, e in enumerate(got):
            if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e < len(load):
                fail(f"['phy2log'][{s}] is not an expert id")
        counts = [got.count(e) for e in range(len(load))]
        if counts != want["replica_count"]:
            fail("['phy2log'] does not hold each expert as many times as the replica counts say")
        for s, e in enumerate(got):
            loads[s // per] += load[e] / counts[e]
        if max(loads) > max(want["gpu_load"]) * (1 + 1e-9):
            fail(f"['phy2log']: the busiest GPU carries {max(loads):.6g}, more than the greedy rule gives")
        bad = [s for s in range(P) if got[s] != want["phy2log"][s]]
        if bad:
            fail(f"['phy2log'] differs from the pinned greedy rule in {len(bad)} of {P} slots "
                 f"(first: slot {bad[0]}, on GPU {bad[0] // per})")
        _expect_floats(out["gpu_load"], want["gpu_load"], "['gpu_load']")


def _plan_cases(g: Grading, ref) -> None:
    fx1 = [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1]
    _plan(g, ref, "EPLB README example, layer 1 (4 groups, 2 nodes, 8 GPUs, 16 replicas)", README_W[1], 16, 8, 4, 2, fx1)
    _plan(g, ref, "README weights, global policy (1 group, 1 node)", README_W[0], 16, 8)
    _plan(g, ref, "README weights, 3 groups on 2 nodes: EPLB falls back to the global policy", README_W[1], 16, 8, 3, 2)
    # the fallback is the global policy, not "every group on one node": with one slot per GPU and
    # with tied integer loads the group order (heaviest group first) would move experts
    _plan(g, ref, "4 groups on 3 nodes, one slot per GPU: the global policy keeps expert order",
          _scaled(ref, [4, 1, 1, 1, 1, 8, 2, 8], 9, 9, 4, 3), 9, 9, 4, 3)
    _plan(g, ref, "3 groups on 2 nodes, tied integer loads: the global policy, not the groups heaviest first",
          _scaled(ref, [3, 3, 1, 1, 2, 2], 12, 4, 3, 2), 12, 4, 3, 2)
    rnd = random.Random(f"expert-load-balance:{g.salt}")
    configs = [  # (E, P, G, groups, nodes, alpha)
        (32, 48, 8, 1, 1, 1.0), (64, 80, 16, 8, 2, 0.6), (32, 40, 8, 8, 4, 1.0), (24, 32, 8, 4, 4, 0.3)]
    for k, (E, P, G, groups, nodes, alpha) in enumerate(configs):
        base = [max(0, round(x)) for x in _zipf(rnd, E, alpha, 40 * E)]
        if k == 0:
            base[rnd.randrange(E)] = 0
        load = _scaled(ref, base, P, G, groups, nodes)
        _plan(g, ref, f"integer loads, {E} experts, {P} slots, {G} GPUs, {groups} group(s), {nodes} node(s)",
              load, P, G, groups, nodes)
    _plan(g, ref, "equal loads: every choice is a tie (lowest index wins)",
          _scaled(ref, [1000] * 16, 24, 4, 1, 1), 24, 4)
    _plan(g, ref, "ties among unequal loads", _scaled(ref, [6, 6, 3, 3, 12, 6, 3, 12, 1, 1, 6, 3], 16, 4, 1, 1), 16, 4)
    _plan(g, ref, "one slot per GPU: slot i on GPU i, no packing", _scaled(ref, [5, 9, 1, 7, 3, 2, 8, 4], 8, 8, 1, 1), 8, 8)
    _plan(g, ref, "no redundant slots: packing only", [float(x) for x in _zipf(rnd, 32, 0.8, 5000.0)], 32, 4)
    _plan(g, ref, "DeepSeek-V3: 256 experts, 32 redundant, 32 GPUs, Zipf loads",
          _zipf(rnd, 256, 1.0, 32768 * 8.0), 288, 32)
    _plan(g, ref, "DeepSeek-V3 groups: 256 experts in 8 groups on 4 nodes, 32 GPUs",
          _zipf(rnd, 256, 0.8, 32768 * 8.0), 288, 32, 8, 4)


# -- decay ----------------------------------------------------------------------------------------
def _trace(seed: int, E: int, days: int, sigma: float, alpha: float, tokens: float) -> list[list[float]]:
    gen = torch.Generator().manual_seed(seed)
    logp = -alpha * torch.log(torch.arange(1, E + 1, dtype=torch.float64))
    logp = logp[torch.randperm(E, generator=gen)]
    out = []
    for _ in range(days):
        out.append([float(x) for x in torch.softmax(logp, 0) * tokens])
        logp = logp + sigma * torch.randn(E, generator=gen, dtype=torch.float64)
    return out


def _default_cases(g: Grading, ref) -> None:
    """n_groups = n_nodes = 1 by default: the global policy (grouping [1, 4, 4, 4] in 2 groups on one
    node would break the tie between experts 1 and 3 the other way; 3 GPUs cannot form 2 nodes)."""
    with g.case("rebalance: defaults are one group on one node"):
        want = ref.rebalance([1, 4, 4, 4], 6, 1)
        out = g.call("rebalance", [1, 4, 4, 4], 6, 1)
        _check_keys(out, want)
        expect_equal(out["phy2log"], want["phy2log"], name="['phy2log']")
        expect_equal(out["replica_count"], want["replica_count"], name="['replica_count']")
    daily = [[338.0, 1831.0, 2733.0, 2561.0, 2958.0, 2542.0, 2561.0, 183.0],
             [161.0, 2019.0, 494.0, 1842.0, 1235.0, 2539.0, 1868.0, 319.0]]
    with g.case("decay: defaults are one group on one node (8 experts, 12 slots, 3 GPUs)"):
        out = g.call("decay_curve", daily, 12, 3, H100, FP8, DSV3_BYTES, DSV3_FLOPS)
        _expect_floats(out, ref.decay_curve(daily, 12, 3, H100, FP8, DSV3_BYTES, DSV3_FLOPS), "ratio", rtol=1e-9)
    with g.case("decay: a single day (its ratio is 1)"):
        out = g.call("decay_curve", daily[:1], 12, 3, H100, FP8, DSV3_BYTES, DSV3_FLOPS, 1, 1)
        _expect_floats(out, ref.decay_curve(daily[:1], 12, 3, H100, FP8, DSV3_BYTES, DSV3_FLOPS, 1, 1), "ratio",
                       rtol=1e-9)
    _plan(g, ref, "rebalance: one expert, one slot, one GPU", [5.0], 1, 1)


def _decay_cases(g: Grading, ref) -> None:
    cases = [("decay: sigma 0.2/day, 64 experts, 80 slots, 16 GPUs, FP8", 11, 64, 6, 0.2, 1.0, 8 * 16384, 80, 16, 1, 1, H100, FP8),
             ("decay: sigma 0.5/day, 64 experts, 16 groups on 2 nodes", 12, 64, 5, 0.5, 0.8, 8 * 8192, 96, 16, 16, 2, H100, FP8),
             ("decay: small batch, memory-bound experts, made-up GPU, BF16", 13, 32, 4, 0.3, 1.0, 512.0, 40, 8, 1, 1, ODD_GPU, BF16),
             ("decay: DeepSeek-V3 scale, 256 experts, 288 slots, 32 GPUs", 14, 256, 3, 0.5, 1.0, 8 * 32768, 288, 32, 1, 1, H100, FP8)]
    for case, seed, E, days, sigma, alpha, tokens, P, G, groups, nodes, gpu, dt in cases:
        with g.case(case):
            daily = _trace(seed, E, days, sigma, alpha, tokens)
            out = g.call("decay_curve", daily, P, G, gpu, dt, DSV3_BYTES, DSV3_FLOPS, groups, nodes)
            want = ref.decay_curve(daily, P, G, gpu, dt, DSV3_BYTES, DSV3_FLOPS, groups, nodes)
            _expect_floats(out, want, "ratio", rtol=1e-9)


# -- input checks ------------------------------------------------------------------------------------
def _input_checks(g: Grading) -> None:
    eb, fl = DSV3_BYTES, DSV3_FLOPS
    bad = [
        ("step time: gpu_of shorter than counts", "gpu_step_time", ([1.0, 2.0, 3.0], [0, 1], 2, H100, FP8, eb, fl)),
        ("step time: a GPU index >= n_gpus", "gpu_step_time", ([1.0, 2.0], [0, 2], 2, H100, FP8, eb, fl)),
        ("step time: a negative token count", "gpu_step_time", ([1.0, -2.0], [0, 1], 2, H100, FP8, eb, fl)),
        ("step time: a NaN token count", "gpu_step_time", ([1.0, float("nan")], [0, 1], 2, H100, FP8, eb, fl)),
        ("step time: FP8 on an A100", "gpu_step_time", ([1.0, 2.0], [0, 1], 2, specs.A100_SXM_80GB, FP8, eb, fl)),
        ("step time: INT8 math has no peak in the table", "gpu_step_time", ([1.0], [0], 1, H100, DType.INT8, eb, fl)),
        ("step time: expert_bytes = 0", "gpu_step_time", ([1.0], [0], 1, H100, FP8, 0, fl)),
        ("skew threshold: every count is zero", "skew_threshold", ([0, 0, 0, 0], 2, H100, FP8, eb, fl)),
        ("skew threshold: top_k larger than the number of experts", "skew_threshold", ([1, 2, 3], 4, H100, FP8, eb, fl)),
        ("skew threshold: top_k = 0", "skew_threshold", ([1, 2, 3], 0, H100, FP8, eb, fl)),
        ("skew threshold: a negative count", "skew_threshold", ([1, -2, 3], 1, H100, FP8, eb, fl)),
        ("rebalance: slots not a multiple of the GPUs", "rebalance", ([1, 2, 3, 4], 6, 4, 1, 1)),
        ("rebalance: fewer slots than experts", "rebalance", ([1, 2, 3, 4], 2, 2, 1, 1)),
        ("rebalance: experts not a multiple of the groups", "rebalance", ([1, 2, 3, 4, 5, 6], 8, 4, 4, 2)),
        ("rebalance: GPUs not a multiple of the nodes", "rebalance", ([1, 2, 3, 4], 6, 3, 2, 2)),
        ("rebalance: experts not a multiple of the groups, global policy", "rebalance", ([1, 2, 3, 4, 5, 6], 8, 4, 5, 2)),
        ("rebalance: GPUs not a multiple of the nodes, global policy", "rebalance", ([1, 2, 3, 4, 5, 6], 6, 3, 3, 2)),
        ("rebalance: no experts", "rebalance", ([], 4, 2, 1, 1)),
        ("rebalance: load = None", "rebalance", (None, 4, 2, 1, 1)),
        ("rebalance: n_gpus = 0", "rebalance", ([1, 2, 3, 4], 4, 0, 1, 1)),
        ("rebalance: n_groups = 0", "rebalance", ([1, 2, 3, 4], 4, 2, 0, 1)),
        ("rebalance: n_nodes = 0", "rebalance", ([1, 2, 3, 4], 4, 2, 1, 0)),
        ("rebalance: num_physical = 8.0 (a float)", "rebalance", ([1, 2, 3, 4], 8.0, 2, 1, 1)),
        ("rebalance: n_gpus = True (a bool)", "rebalance", ([1, 2, 3, 4], 4, True, 1, 1)),
        ("rebalance: a negative load", "rebalance", ([1, -2, 3, 4], 4, 2, 1, 1)),
        ("decay: no days", "decay_curve", ([], 4, 2, H100, FP8, eb, fl, 1, 1)),
        ("decay: a later day with no tokens", "decay_curve", ([[1.0, 2.0], [0.0, 0.0]], 4, 2, H100, FP8, eb, fl, 1, 1)),
        ("decay: days with different numbers of experts", "decay_curve", ([[1.0, 2.0], [1.0, 2.0, 3.0]], 4, 2, H100, FP8, eb, fl, 1, 1)),
    ]
    for case, fn, args in bad:
        with g.case(case, group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)


def grade(g: Grading) -> None:
    ref = g.reference()
    _step_cases(g, ref)
    _skew_cases(g, ref)
    _plan_cases(g, ref)
    _decay_cases(g, ref)
    _default_cases(g, ref)
    _input_checks(g)
