"""Every figure of the flops-per-token statement and editorial, computed by the reference."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import ModelConfig

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "flops_per_token.py", "ref_flops_per_token")


def test_llama_8b():
    m = specs.LLAMA_3_1_8B
    p = ref.param_counts(m)
    assert p["total"] == 8_030_261_248
    assert p["active_matmul"] == 7_504_658_432
    assert p["embedding"] == 525_336_576
    f = ref.flops_per_token(m, 8192)
    assert (f["weights"], f["attention"], f["total"]) == (15_009_316_864, 4_294_967_296,
                                                          19_304_284_160)
    assert round(f["weights"] / (2 * p["total"]), 2) == 0.93
    assert ref._attention_flops_per_key(m) == 524_288
    assert ref.attention_crossover_context(m) == 28_628
    assert round(ref.flops_per_token(m, 131072)["attention"] / f["weights"], 2) == 4.58
    assert round(p["embedding"] / p["total"], 2) == 0.07


@pytest.mark.parametrize("m, total, active, gflops, ratio, cross", [
    (specs.LLAMA_3_1_8B, 8_030_261_248, 7_504_658_432, 15.01, 0.93, 28_628),
    (specs.LLAMA_3_1_70B, 70_553_706_496, 69_501_714_432, 139.0, 0.99, 53_026),
    (specs.MIXTRAL_8X7B, 46_702_792_704, 12_748_587_008, 25.50, 0.27, 48_632),
    (specs.DEEPSEEK_V3, 671_026_404_352, 36_624_596_992, 73.25, 0.055, 14_659),
])
def test_table(m, total, active, gflops, ratio, cross):
    p = ref.param_counts(m)
    assert p["total"] == total and p["active_matmul"] == active
    w = ref.flops_per_token(m, 1)["weights"]
    assert w / 1e9 == pytest.approx(gflops, abs=0.006 if gflops < 100 else 0.06)
    assert w / (2 * total) == pytest.approx(ratio, abs=0.005 if ratio > 0.1 else 0.0005)
    assert ref.attention_crossover_context(m) == cross


def test_70b_embedding_share():
    p = ref.param_counts(specs.LLAMA_3_1_70B)
    assert round(100 * p["embedding"] / p["total"], 1) == 1.5


def test_toy():
    toy = ModelConfig(name="toy", n_layers=2, hidden_size=64, n_heads=4, n_kv_heads=2, head_dim=16,
                      ffn_size=128, vocab_size=100, tied_embeddings=True)
    p = ref.param_counts(toy)
    assert p["total"] == 80_448 and p["active_matmul"] == 80_128
    assert ref.flops_per_token(toy, 10)["total"] == 165_376
    assert ref.attention_crossover_context(toy) == 313
