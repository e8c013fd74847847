"""Hidden grader for moe-experts-per-step.

Cases: the closed form on DeepSeek-V3, Mixtral and random (E, k, B) including B = 0, B = 1,
k = 1, k = E and huge batches; exact distinct counts on seeded random routings (any integer dtype,
duplicated experts across tokens, k = 1, E = 1, empty batch); step bytes and the cost profile on
real and made-up models (one with no MoE layers, one with empty experts); the smallest batch for
a share of experts. Input checks last: every ValueError of the statement, from each function
that promises it.
"""

from __future__ import annotations

import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail

RTOL = 1e-9
PROFILE_KEYS = ("experts_per_layer", "expert_fraction", "step_bytes", "bytes_per_token", "dense_step_bytes",
                "active_bytes", "bandwidth_saving", "compute_saving")

# (name, E, k, moe_layers, expert_params, always_params, bytes_per_param)
DEEPSEEK_V3 = ("deepseek-v3-fp8", 256, 8, 58, 3 * 7168 * 2048, 16_190_954_496, 1.0)
MIXTRAL = ("mixtral-8x7b-bf16", 8, 2, 32, 3 * 4096 * 14336, 1_474_564_096, 2.0)


def _expect_profile(got, want: dict) -> None:
    if not isinstance(got, dict):
        fail(f"expected a dict, got {type(got).__name__}")
    if set(got) != set(want):
        missing = sorted(set(want) - set(got))
        extra = sorted(map(str, set(got) - set(want)))
        fail(f"dict keys differ: missing {missing}, unexpected {extra}")
    for key in PROFILE_KEYS:
        expect_close(got[key], want[key], name=key, rtol=RTOL)


def _random_routing(gen: torch.Generator, B: int, E: int, k: int, skew: bool) -> torch.Tensor:
    """Seeded top-k routing: k distinct experts per token (skewed: a few experts are popular)."""
    scores = torch.rand(B, E, generator=gen, dtype=torch.float64)
    if skew:
        scores = scores + torch.linspace(0.0, 2.0, E, dtype=torch.float64)  # high ids favoured
    return scores.topk(k, dim=1).indices


def grade(g: Grading) -> None:
    ref = g.reference()
    checks: list[tuple[str, str, tuple]] = []   # (case name, function, args): input checks, run last

    # 1. the closed form
    cases = [(256, 8, 8), (256, 8, 1), (256, 8, 64), (8, 2, 4), (8, 2, 1), (128, 1, 40), (16, 16, 3),
             (16, 16, 0), (1, 1, 5), (160, 6, 0), (300, 7, 100_000)]
    gen = g.rng(11)
    for _ in range(6):
        E = int(torch.randint(2, 600, (1,), generator=gen))
        k = int(torch.randint(1, E + 1, (1,), generator=gen))
        B = int(torch.randint(0, 3000, (1,), generator=gen))
        cases.append((E, k, B))
    for E, k, B in cases:
        with g.case(f"expected-distinct-E{E}-k{k}-B{B}"):
            out = g.call("expected_distinct_experts", E, k, B)
            expect_close(out, ref.expected_distinct_experts(E, k, B), rtol=RTOL)
            if not isinstance(out, float):
                fail(f"expected a float (the statement's return type), got {type(out).__name__}")
    for name, args in [("top-k-above-E", (4, 5, 1)), ("zero-experts", (0, 1, 1)), ("zero-top-k", (8, 0, 1)),
                       ("negative-batch", (8, 2, -1)), ("float-batch", (8, 2, 4.0)), ("bool-top-k", (8, True, 4)),
                       ("bool-batch", (256, 8, True))]:
        checks.append((f"expected-distinct-rejects-{name}", "expected_distinct_experts", args))

    # 2. exact counts of actual routings
    routings = []
    for i, (B, E, k, skew, dtype) in enumerate([(8, 256, 8, False, torch.int64), (5, 8, 2, False, torch.int32),
                                                 (64, 16, 4, True, torch.int64), (3, 4, 4, False, torch.int16),
                                                 (200, 256, 8, True, torch.int32), (1, 10, 3, False, torch.uint8),
                                                 (7, 16, 1, False, torch.int64), (3, 1, 1, False, torch.int64)]):
        ids = _random_routing(g.rng(100 + i), B, E, k, skew).to(dtype)
        routings.append((f"B{B}-E{E}-k{k}-{str(dtype).split('.')[-1]}", ids, E))
    routings.append(("empty-batch", torch.zeros(0, 2, dtype=torch.int64), 8))
    for name, ids, E in routings:
        with g.case(f"distinct-{name}"):
            expect_equal(g.call("distinct_experts", ids.to(g.device), E), ref.distinct_experts(ids, E))
    bad = [("repeat-in-row", torch.tensor([[1, 1], [0, 2]]), 4), ("id-too-large", torch.tensor([[0, 4]]), 4),
           ("negative-id", torch.tensor([[0, -1]]), 4), ("float-ids", torch.tensor([[0.0, 1.0]]), 4),
           ("1-d", torch.tensor([0, 1]), 4), ("k-above-E", torch.tensor([[0, 1, 2]]), 2),
           ("3-d", torch.tensor([[[0, 1]]]), 4), ("bool-ids", torch.tensor([[True, False]]), 4),
           ("zero-columns", torch.zeros(3, 0, dtype=torch.int64), 4),
           ("zero-experts", torch.tensor([[0]]), 0),
           # 2**32 + 1 wraps to 1 in int32: the range check must see the int64 id
           ("id-beyond-int32", torch.tensor([[0, 2**32 + 1]], dtype=torch.int64), 4)]
    for name, ids, E in bad:
        checks.append((f"distinct-rejects-{name}", "distinct_experts", (ids.to(g.device), E)))
    checks += [("distinct-rejects-nested-list", "distinct_experts", ([[0, 2], [2, 1]], 4)),
               ("distinct-rejects-bool-num-experts", "distinct_experts", (torch.tensor([[0]], device=g.device), True))]

    # 3-4. bytes per step and the cost profile
    models = [DEEPSEEK_V3, MIXTRAL, ("made-up-no-always", 64, 4, 12, 1_000_000, 0, 0.5),
              ("made-up-dense-heavy", 32, 1, 3, 7_340_032, 9_000_000_000, 2.0),
              ("made-up-no-moe-layers", 16, 2, 0, 1_000_000, 5_000_000, 2.0),
              ("made-up-zero-expert-params", 8, 2, 4, 0, 1_000_000, 1.0)]
    batches = {"deepseek-v3-fp8": [1, 8, 64, 256], "mixtral-8x7b-bf16": [1, 3, 16],
               "made-up-no-always": [2, 33], "made-up-dense-heavy": [1, 7], "made-up-no-moe-layers": [4],
               "made-up-zero-expert-params": [3]}
    for name, E, k, L, ep, ap, bpp in models:
        for B in batches[name]:
            args = (B, E, k, L, ep, ap, bpp)
            with g.case(f"step-bytes-{name}-B{B}"):
                expect_close(g.call("moe_step_bytes", *args), ref.moe_step_bytes(*args), rtol=RTOL)
            with g.case(f"profile-{name}-B{B}"):
                _expect_profile(g.call("moe_cost_profile", *args), ref.moe_cost_profile(*args))
    for name, args in [("batch-0", (0, 8, 2, 1, 10, 10, 1.0)), ("negative-layers", (1, 8, 2, -1, 10, 10, 1.0)),
                       ("zero-bytes-per-param", (1, 8, 2, 1, 10, 10, 0.0)),
                       ("nan-bytes-per-param", (1, 8, 2, 1, 10, 10, math.nan)),
                       ("infinite-bytes-per-param", (1, 8, 2, 1, 10, 10, math.inf)),
                       ("negative-expert-params", (1, 8, 2, 1, -10, 10, 1.0)),
                       ("negative-always-params", (1, 8, 2, 1, 10, -10, 1.0)),
                       ("float-expert-params", (1, 8, 2, 1, 10.0, 10, 1.0)),
                       ("top-k-above-E", (1, 8, 9, 1, 10, 10, 1.0))]:
        checks.append((f"step-bytes-rejects-{name}", "moe_step_bytes", args))
        checks.append((f"profile-rejects-{name}", "moe_cost_profile", args))
    checks.append(("profile-rejects-empty-model", "moe_cost_profile", (4, 8, 2, 0, 10, 0, 1.0)))

    # 5. smallest batch for a share of the experts
    for E, k, f in [(256, 8, 0.5), (256, 8, 0.9), (256, 8, 0.99), (8, 2, 0.95), (160, 6, 0.3), (64, 64, 0.7),
                    (1000, 1, 0.0015), (40, 3, 0.999999),
                    # binary-exact ties: the share of B = 2, 3, 2, 1 equals fraction exactly ("reaches" is >=)
                    (4, 2, 0.75), (8, 4, 0.875), (4, 1, 0.4375), (4, 2, 0.5)]:
        with g.case(f"batch-for-fraction-E{E}-k{k}-f{f}"):
            expect_equal(g.call("batch_for_expert_fraction", E, k, f), ref.batch_for_expert_fraction(E, k, f))
    for name, args in [("fraction-1", (8, 2, 1.0)), ("fraction-0", (8, 2, 0.0)), ("negative", (8, 2, -0.5)),
                       ("fraction-nan", (8, 2, math.nan)),
                       ("fraction-1-every-expert", (4, 4, 1.0)), ("top-k-above-E", (8, 9, 0.5)),
                       ("bool-experts", (True, 1, 0.5))]:
        checks.append((f"batch-for-fraction-rejects-{name}", "batch_for_expert_fraction", args))

    # Input checks last (a submission that dies on one must not take core cases with it).
    for name, fn, args in checks:
        with g.case(name, group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
