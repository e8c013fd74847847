"""Every figure quoted by moe-experts-per-step's statement and editorial, from the reference."""

from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "moe_experts_per_step.py", "_fig_moe_experts_per_step")

E, K, MOE_LAYERS = 256, 8, 58                 # DeepSeek-V3 config.json
EXPERT = 3 * 7168 * 2048                       # gate, up, down of one routed expert
H, VOCAB, LAYERS = 7168, 129280, 61


def always_params() -> int:
    """Weights a DeepSeek-V3 decode step reads in full (config.json of deepseek-ai/DeepSeek-V3)."""
    mla = (H * 1536 + 1536 + 1536 * 128 * (128 + 64) + H * (512 + 64) + 512 + 512 * 128 * (128 + 128)
           + 128 * 128 * H + 2 * H)        # q_a, q_a_norm, q_b, kv_a (+rope), kv_a_norm, kv_b, o, 2 norms
    dense_mlp = 3 * H * 18432
    return LAYERS * mla + 3 * dense_mlp + MOE_LAYERS * (EXPERT + 256 * H) + VOCAB * H + H


def profile(b: int) -> dict:
    return ref.moe_cost_profile(b, E, K, MOE_LAYERS, EXPERT, always_params(), 1.0)


@pytest.mark.parametrize("b, want", [(1, 8.0), (8, 57.4), (16, 102.0), (32, 163.3), (64, 222.4),
                                     (128, 251.6), (256, 255.9)])
def test_distinct_experts_table(b, want):
    assert round(ref.expected_distinct_experts(E, K, b), 1) == want


def test_shares():
    assert round(100 * 8 / 256) == 3
    assert [round(100 * ref.expected_distinct_experts(E, K, b) / E) for b in (8, 16, 32, 64, 128)] == \
        [22, 40, 64, 87, 98]


def test_shortcuts():
    assert min(8 * K, E) == 64
    assert round(E * (1 - (1 - 1 / E) ** (8 * K)), 1) == 56.7


def test_monte_carlo_batch_8():
    gen = torch.Generator().manual_seed(0)
    counts = []
    for _ in range(20_000):
        ids = torch.rand(8, E, generator=gen).topk(K, dim=1).indices
        counts.append(ref.distinct_experts(ids, E))
    mean = sum(counts) / len(counts)
    assert abs(mean - ref.expected_distinct_experts(E, K, 8)) < 0.1


def test_batch_for_fraction():
    assert ref.batch_for_expert_fraction(E, K, 0.5) == 22
    assert ref.batch_for_expert_fraction(E, K, 0.9) == 73
    assert ref.batch_for_expert_fraction(E, K, 0.99) == 146


def test_model_sizes():
    assert round(EXPERT / 1e6, 1) == 44.0
    assert round(always_params() / 1e9, 1) == 16.2
    assert round(profile(1)["dense_step_bytes"] / 1e9) == 670
    assert round((always_params() + VOCAB * H + MOE_LAYERS * E * EXPERT) / 1e9) == 671  # the paper's 671 B
    assert round(profile(1)["active_bytes"] / 1e9, 1) == 36.6


@pytest.mark.parametrize("b, step_gb, per_token_gb, saving", [(1, 36.6, 36.6, 18.3), (8, 162.9, 20.4, 4.1),
                                                              (64, 584.4, 9.1, 1.15), (256, 669.9, 2.6, 1.0)])
def test_bytes_table(b, step_gb, per_token_gb, saving):
    p = profile(b)
    assert round(p["step_bytes"] / 1e9, 1) == step_gb
    assert round(p["bytes_per_token"] / 1e9, 1) == per_token_gb
    assert round(p["bandwidth_saving"], 2 if saving == 1.15 else 1) == saving


def test_compute_saving_and_ratio():
    assert round(profile(8)["compute_saving"], 1) == 18.3
    assert round(profile(8)["step_bytes"] / profile(1)["step_bytes"], 2) == 4.45
    assert round(100 * profile(64)["expert_fraction"]) == 87


def test_statement_examples():
    assert ref.distinct_experts(torch.tensor([[0, 2], [2, 1], [0, 2]]), 4) == 3


def _group_limited(gen: torch.Generator, batch: int) -> torch.Tensor:
    """DeepSeek-V3-style group-limited top-8: 8 groups of 32, a group scored by its two best
    experts, the 4 best groups kept, then the top 8 experts among them (random scores)."""
    scores = torch.rand(batch, E, generator=gen)
    group_scores = scores.view(batch, 8, 32).topk(2, dim=-1).values.sum(-1)
    keep = torch.zeros(batch, 8, dtype=torch.bool)
    keep.scatter_(1, group_scores.topk(4, dim=-1).indices, True)
    scores = scores.masked_fill(~keep.repeat_interleave(32, dim=1), -1.0)
    return scores.topk(K, dim=1).indices


def test_group_limited_routing_keeps_the_uniform_count():
    assert 4 / 8 * 8 / 128 == K / E                       # each expert's probability is unchanged
    gen = torch.Generator().manual_seed(1)
    counts = [ref.distinct_experts(_group_limited(gen, 8), E) for _ in range(20_000)]
    assert abs(sum(counts) / len(counts) - ref.expected_distinct_experts(E, K, 8)) < 0.1


def test_non_uniform_routing_moves_the_count_both_ways():
    uniform = [[K / E] * E]
    # marginals alone: the uniform rows give the closed form
    assert abs(ref.expected_distinct_from_probs(uniform * 8) - ref.expected_distinct_experts(E, K, 8)) < 1e-9
    popular = [[3 / 64] * 128 + [1 / 64] * 128]
    assert sum(popular[0]) == K
    assert round(ref.expected_distinct_from_probs(popular * 8), 1) == 56.0
    assert round(ref.expected_distinct_from_probs(popular * 32), 1) == 151.1
    halves = [[1 / 16] * 128 + [0.0] * 128, [0.0] * 128 + [1 / 16] * 128]
    assert round(ref.expected_distinct_from_probs(halves * 4), 1) == 58.2
    assert round(ref.expected_distinct_from_probs(halves * 16), 1) == 164.8
    assert round(ref.expected_distinct_experts(E, K, 32), 1) == 163.3
    assert min(8 * K, E) == 64
    disjoint = [[1.0 if K * b <= e < K * (b + 1) else 0.0 for e in range(E)] for b in range(8)]
    assert ref.expected_distinct_from_probs(disjoint) == 64.0
