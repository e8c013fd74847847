"""Hidden cases for moe-dispatch-bytes: payloads of tabled and made-up MoE models (down to one
expert) in both dispatch formats with and without the low-latency header; group-limited routing
on explicit score matrices (float and dyadic scores with ties, group scores where the top-2 sum
and the max disagree, groups smaller than k, one-group and no-group models); the
NIC/NVLink/local split of explicit routing traces in both modes over 1 to 32 nodes; then the
input checks. Some score rows differ only below float32 resolution (every score is compared
exactly as given)."""

from __future__ import annotations

import dataclasses
import math
import random

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import ModelConfig

RTOL = 1e-12
PAYLOAD_KEYS = ("dispatch_copy_bytes", "combine_copy_bytes", "per_token_per_layer", "moe_layers",
                "per_token_per_step")
LINK_KEYS = ("nic_copies", "nvlink_copies", "local_copies", "nic_bytes", "nvlink_bytes")

DS3 = specs.DEEPSEEK_V3
# Made-up MoE configs (attention fields are irrelevant here).
SMALL = ModelConfig(name="moe-small", n_layers=28, hidden_size=2048, n_heads=16, n_kv_heads=16,
                    head_dim=128, ffn_size=10944, vocab_size=102400, n_routed_experts=64,
                    n_shared_experts=2, experts_per_token=6, moe_ffn_size=1408, first_dense_layers=1,
                    n_expert_groups=8, topk_expert_groups=3)
WIDE = ModelConfig(name="moe-wide", n_layers=48, hidden_size=5120, n_heads=40, n_kv_heads=8,
                   head_dim=128, ffn_size=0, vocab_size=151936, n_routed_experts=128,
                   n_shared_experts=0, experts_per_token=4, moe_ffn_size=1536, first_dense_layers=0)
ODD_D = ModelConfig(name="moe-odd-width", n_layers=24, hidden_size=3000, n_heads=24, n_kv_heads=8,
                    head_dim=125, ffn_size=8000, vocab_size=50000, n_routed_experts=32,
                    n_shared_experts=1, experts_per_token=2, moe_ffn_size=1000, first_dense_layers=2)
TOY = ModelConfig(name="moe-toy", n_layers=6, hidden_size=256, n_heads=4, n_kv_heads=4, head_dim=64,
                  ffn_size=1024, vocab_size=1000, n_routed_experts=16, n_shared_experts=1,
                  experts_per_token=3, moe_ffn_size=128, first_dense_layers=1,
                  n_expert_groups=4, topk_expert_groups=2)
# one routed expert chosen by every token (E = k = 1, the smallest model the statement allows)
SINGLE = dataclasses.replace(TOY, name="moe-single-expert", n_routed_experts=1, experts_per_token=1,
                             n_expert_groups=1, topk_expert_groups=1)
# groups of 2 experts, fewer than k = 3: the 3 kept groups hold the k experts between them
PAIRS = dataclasses.replace(TOY, name="moe-toy-pairs", n_expert_groups=8, topk_expert_groups=3)
# Edges of the payload rules: width 1 (BF16 only), every layer dense (no MoE layer), a width of
# 128 x 128 (128 scales: d // 128 and d // 127 differ from here on).
WIDTH_1 = dataclasses.replace(TOY, name="moe-width-1", hidden_size=1)
ALL_DENSE = dataclasses.replace(TOY, name="moe-all-layers-dense", first_dense_layers=6)
WIDTH_16K = dataclasses.replace(TOY, name="moe-width-16384", hidden_size=16384)
# Edges of the group limit: two groups keeping one (G = 2, T = 1), every group kept (T = G), and
# k filling the kept groups exactly (k = T E / G).
TWO_GROUPS = dataclasses.replace(TOY, name="moe-toy-two-groups-keep-one", n_expert_groups=2, topk_expert_groups=1)
ALL_GROUPS = dataclasses.replace(TOY, name="moe-toy-keep-every-group", topk_expert_groups=4)
K_FILLS = dataclasses.replace(TOY, name="moe-toy-k-fills-kept-groups", n_expert_groups=8, topk_expert_groups=2,
                              experts_per_token=4)
PAYLOAD_MODELS = [DS3, specs.KIMI_K2, specs.MIXTRAL_8X7B, SMALL, WIDE, ODD_D, TOY, SINGLE, WIDTH_1, ALL_DENSE,
                  WIDTH_16K]


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def _check_dict(out, exp, keys, int_keys=()) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    for k in keys:
        if k in int_keys:
            expect_equal(out[k], exp[k], name=f"[{k!r}]")
        else:
            expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _float_scores(seed: int, n: int, e: int) -> list[list[float]]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, e, generator=g, dtype=torch.float64).tolist()


def _dyadic_scores(seed: int, n: int, e: int, levels: int = 16) -> list[list[float]]:
    """Scores on a coarse binary grid: many exact ties between experts and between groups."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, levels, (n, e), generator=g).double() / levels).tolist()


# Hand-made toy rows (16 experts, 4 groups of 4, keep 2 groups, top-3).
TOY_ROWS = [
    # max says group 0 (1.0) and 3 (0.875); top-2 sums say groups 1 (1.5) and 2 (1.25)
    [1.0, 0, 0, 0, 0.75, 0.75, 0, 0, 0.625, 0.625, 0, 0, 0.875, 0.0625, 0, 0],
    # every group sums to 1.0: the two lowest-indexed groups win; expert ties go to the lower id
    [0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 0.75, 0.25, 0, 0, 1.0, 0, 0, 0],
    # the global top-3 sit in three different groups; the limit keeps the two best groups
    [0.9375, 0, 0, 0, 0.875, 0.5, 0, 0, 0.8125, 0.6875, 0, 0, 0, 0, 0, 0.25],
    # a group with one huge expert and a group with two medium ones, sum of all would differ
    [0.5, 0.5, 0.5, 0.5, 0.25, 0.875, 0.25, 0, 0.5, 0.625, 0, 0, 0, 0, 0, 0],
    # all equal: groups 0 and 1, experts 0, 1, 2
    [0.25] * 16,
    # negative scores are allowed (biased scores can be negative)
    [-0.5, -0.25, -1, -1, -0.125, -2, -2, -2, -0.0625, -3, -3, -3, -1, -1, -1, -1],
]


# Scores that differ only below float32 resolution: every score is compared exactly as given,
# so rounding to float32 (torch.tensor's default dtype) before ranking turns them into ties.
MIXTRAL_SUBF32_ROWS = [
    [0.1, 0.1 + 2**-40, 0.3, 0.3 + 2**-30, 0, 0, 0, 0],              # [3, 2]; float32: [2, 3]
    [0.5, 0.5 + 2**-30, 0.5 + 2**-29, 0.25, 0, 0, 0, 0],              # [2, 1]; float32: [0, 1]
    [-0.25 - 2**-35, -0.25, -1, -1, -1, -1, -2, -0.25 - 2**-36],      # [1, 7]; float32: [0, 1]
]
TOY_SUBF32_ROWS = [
    # float32-exact scores whose top-2 sums tie in float32 (1.0) but not exactly: group 3 sums
    # to 1 + 2**-30 and wins, then group 0 by the tie rule: [12, 0, 1]; float32 sums keep 0 and 1
    [0.5, 0.5, 0, 0, 0.75, 0.25, 0, 0, 0.625, 0.375, 0, 0, 1.0, 2**-30, 0, 0],
    # sums 1, 1 + 2**-40, 1 + 2**-39, 0.5: groups 2 and 1; float32 sums keep groups 0 and 1
    [0.5, 0.5, 0, 0, 0.75, 0.25 + 2**-40, 0, 0, 0.5 + 2**-39, 0.5, 0, 0, 0.25, 0.25, 0, 0],
]


def _subf32_scores(seed: int, n: int, e: int, levels: int = 4) -> list[list[float]]:
    """A coarse grid plus distinct perturbations far below float32 resolution (multiples of
    2**-45): exact ranking follows the perturbations, float32 sees ties broken by index."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randint(0, levels, (n, e), generator=g).double() / levels
    tiny = torch.randint(0, 2**12, (n, e), generator=g).double() * 2.0**-45
    return (base + tiny).tolist()


def _grade_payloads(g: Grading, ref) -> None:
    for m in PAYLOAD_MODELS:
        for fmt in ("fp8_block128", "bf16"):
            if fmt == "fp8_block128" and m.hidden_size % 128:
                continue
            for ll in (False, True):
                with g.case(f"payload-{_slug(m.name)}-{fmt}-{'ll' if ll else 'normal'}"):
                    _check_dict(g.call("payload_bytes", m, fmt, ll), ref.payload_bytes(m, fmt, ll),
                                PAYLOAD_KEYS, int_keys=("moe_layers",))
    with g.case("payload-defaults-are-fp8-normal"):
        _check_dict(g.call("payload_bytes", DS3), ref.payload_bytes(DS3), PAYLOAD_KEYS, ("moe_layers",))


def _grade_routing(g: Grading, ref) -> None:
    cases = [
        ("route-deepseek-v3-float", DS3, _float_scores(11, 48, 256)),
        ("route-deepseek-v3-dyadic", DS3, _dyadic_scores(12, 48, 256)),
        ("route-deepseek-v3-coarse-ties", DS3, _dyadic_scores(13, 32, 256, levels=4)),
        ("route-small-float", SMALL, _float_scores(14, 40, 64)),
        ("route-small-dyadic", SMALL, _dyadic_scores(15, 40, 64, levels=8)),
        ("route-single-expert", SINGLE, [[0.5], [-1.0]]),
        ("route-two-groups-keep-one", TWO_GROUPS, _dyadic_scores(32, 20, 16, levels=4)),
        ("route-keep-every-group", ALL_GROUPS, _dyadic_scores(33, 20, 16, levels=4)),
        ("route-k-fills-kept-groups", K_FILLS, _dyadic_scores(34, 20, 16, levels=4)),
        ("route-toy-hand-made", TOY, TOY_ROWS),
        ("route-toy-dyadic", TOY, _dyadic_scores(16, 60, 16, levels=4)),
        ("route-toy-groups-smaller-than-k", PAIRS, _dyadic_scores(31, 30, 16, levels=4)),
        ("route-kimi-k2-one-group", specs.KIMI_K2, _dyadic_scores(17, 16, 384)),
        ("route-mixtral-no-groups", specs.MIXTRAL_8X7B, _dyadic_scores(18, 20, 8, levels=4)),
        ("route-mixtral-below-float32", specs.MIXTRAL_8X7B, MIXTRAL_SUBF32_ROWS),
        ("route-toy-group-sums-below-float32", TOY, TOY_SUBF32_ROWS),
        ("route-deepseek-v3-below-float32", DS3, _subf32_scores(19, 32, 256)),
    ]
    rng = random.Random(f"moe-dispatch-bytes:{g.salt}")
    salted = [[rng.randrange(32) / 32 for _ in range(256)] for _ in range(24)]
    cases.append(("route-deepseek-v3-salted", DS3, salted))
    for name, m, scores in cases:
        for limited in (True, False):
            with g.case(f"{name}-{'limited' if limited else 'unrestricted'}"):
                out = g.call("route_experts", m, scores, limited)
                exp = ref.route_experts(m, scores, limited)
                if not isinstance(out, list) or len(out) != len(exp):
                    fail(f"expected a list of {len(exp)} rows")
                for i, (row, e) in enumerate(zip(out, exp)):
                    if not isinstance(row, list) or len(row) != len(e):
                        fail(f"row {i}: expected a list of {len(e)} expert ids")
                    if all(isinstance(x, int) for x in row) and sorted(row) != sorted(e):
                        fail(f"row {i}: not the set of experts the rule selects")
                    expect_equal(row, e, name=f"row {i} (order: highest score first, ties lower id)")


def _trace(seed: int, m: ModelConfig, n_tokens: int, n_gpus: int, limited: bool, ref):
    scores = _float_scores(seed, n_tokens, m.n_routed_experts)
    ids = ref.route_experts(m, scores, limited)
    g = torch.Generator().manual_seed(seed + 1)
    src = [int(x) for x in torch.randint(0, n_gpus, (n_tokens,), generator=g)]
    return ids, src


def _grade_links(g: Grading, ref) -> None:
    cases = []
    worked = [[0, 17, 18, 130, 131, 200, 250, 255]]
    cases.append(("links-worked-example", DS3, worked, [3], 16, 8, "fp8_block128"))
    # experts on the source GPU, on the entry GPU of a remote node (local rank 5), and elsewhere
    cases.append(("links-entry-gpu-and-local", DS3,
                  [[80, 81, 0, 1, 208, 209, 224, 240], [16, 32, 48, 64, 80, 96, 112, 128],
                   [176, 177, 178, 179, 180, 181, 182, 183]], [5, 5, 11], 16, 8, "fp8_block128"))
    cases.append(("links-one-node", DS3, *_trace(21, DS3, 40, 8, True, ref), 8, 8, "fp8_block128"))
    for seed, n_gpus, limited in ((22, 32, True), (23, 64, True), (24, 64, False), (25, 128, True),
                                  (26, 256, False)):
        ids, src = _trace(seed, DS3, 64, n_gpus, limited, ref)
        cases.append((f"links-deepseek-v3-ep{n_gpus}-{'limited' if limited else 'unrestricted'}",
                      DS3, ids, src, n_gpus, 8, "fp8_block128"))
    ids, src = _trace(27, DS3, 48, 64, True, ref)
    cases.append(("links-deepseek-v3-ep64-bf16-dispatch", DS3, ids, src, 64, 8, "bf16"))
    ids, src = _trace(28, SMALL, 48, 16, True, ref)
    cases.append(("links-small-16-gpus-4-per-node", SMALL, ids, src, 16, 4, "fp8_block128"))
    ids, src = _trace(29, WIDE, 40, 32, False, ref)
    cases.append(("links-wide-32-gpus-2-per-node", WIDE, ids, src, 32, 2, "bf16"))
    ids, src = _trace(35, DS3, 16, 4, True, ref)
    cases.append(("links-one-gpu-per-node", DS3, ids, src, 4, 1, "fp8_block128"))
    ids, src = _trace(30, specs.KIMI_K2, 40, 96, False, ref)
    cases.append(("links-kimi-k2-ep96", specs.KIMI_K2, ids, src, 96, 8, "fp8_block128"))
    for name, m, ids, src, n_gpus, gpn, fmt in cases:
        for mode in ("per_expert", "node_dedup"):
            with g.case(f"{name}-{mode}"):
                _check_dict(g.call("link_traffic", m, ids, src, n_gpus, gpn, mode, fmt),
                            ref.link_traffic(m, ids, src, n_gpus, gpn, mode, fmt), LINK_KEYS,
                            int_keys=("nic_copies", "nvlink_copies", "local_copies"))


def grade(g: Grading) -> None:
    ref = g.reference()
    _grade_payloads(g, ref)
    _grade_routing(g, ref)
    _grade_links(g, ref)
    # Input checks.
    row = [0, 17, 18, 130, 131, 200, 250, 255]
    checks = [
        ("payload-dense-model", "payload_bytes", (specs.LLAMA_3_1_8B, "fp8_block128", False)),
        ("payload-fp8-width-not-multiple-of-128", "payload_bytes", (ODD_D, "fp8_block128", False)),
        ("payload-unknown-format", "payload_bytes", (DS3, "fp8", False)),
        ("route-row-wrong-length", "route_experts", (DS3, [[0.5] * 255], True)),
        ("route-nan-score", "route_experts", (TOY, [[math.nan] + [0.0] * 15], True)),
        ("route-empty-scores", "route_experts", (DS3, [], True)),
        ("route-groups-cannot-hold-k", "route_experts",
         (dataclasses.replace(TOY, topk_expert_groups=1, experts_per_token=5), [[0.0] * 16], True)),
        ("route-groups-of-one-expert", "route_experts",
         (dataclasses.replace(TOY, n_expert_groups=16, topk_expert_groups=4), [[0.0] * 16], True)),
        ("payload-zero-experts-per-token", "payload_bytes",
         (dataclasses.replace(specs.MIXTRAL_8X7B, experts_per_token=0), "bf16", False)),
        ("payload-more-dense-layers-than-layers", "payload_bytes",
         (dataclasses.replace(TOY, first_dense_layers=7), "bf16", False)),
        ("links-gpus-not-an-int", "link_traffic", (DS3, [row], [0], 16.0, 8, "per_expert")),
        ("links-zero-gpus-per-node", "link_traffic", (DS3, [row], [0], 16, 0, "node_dedup")),
        ("links-zero-gpus", "link_traffic", (DS3, [row], [0], 0, 8, "per_expert")),
        ("links-duplicate-expert", "link_traffic", (DS3, [[0, 0, 1, 2, 3, 4, 5, 6]], [0], 16, 8, "per_expert")),
        ("links-expert-out-of-range", "link_traffic", (DS3, [row[:7] + [256]], [0], 16, 8, "per_expert")),
        ("links-too-few-experts", "link_traffic", (DS3, [row[:7]], [0], 16, 8, "node_dedup")),
        ("links-source-gpu-out-of-range", "link_traffic", (DS3, [row], [16], 16, 8, "node_dedup")),
        ("links-gpus-do-not-divide-experts", "link_traffic", (DS3, [row], [0], 24, 8, "node_dedup")),
        ("links-partial-node", "link_traffic", (DS3, [row], [0], 16, 32, "node_dedup")),
        ("links-unknown-mode", "link_traffic", (DS3, [row], [0], 16, 8, "dedup")),
        ("links-length-mismatch", "link_traffic", (DS3, [row, row], [0], 16, 8, "per_expert")),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
