"""Every figure of the gqa-attention-intensity statement and editorial, from the reference."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "gqa_attention_intensity.py", "ref_gqa_attention_intensity")
H100, BF16, FP8 = specs.H100_SXM, DType.BF16, DType.FP8


@pytest.mark.parametrize("m, intensity, share", [
    (specs.LLAMA_3_1_8B, 4.0, 1.35), (specs.LLAMA_3_1_70B, 8.0, 2.71),
    (specs.MIXTRAL_8X7B, 4.0, 1.35), (specs.DEEPSEEK_V3, 241.8, 81.9),
])
def test_table(m, intensity, share):
    r = ref.attention_regime(m, H100, BF16, BF16)
    assert round(r["intensity"], 1) == intensity
    assert round(100 * r["fraction_of_ridge"], 2 if share < 10 else 1) == share
    assert r["bound"] == "memory"


def test_batch_and_context_do_not_move_it():
    m = specs.LLAMA_3_1_8B
    vals = {ref.decode_attention_intensity(m, BF16, b, L) for b in (1, 4096) for L in (1, 8192, 10**6)}
    assert vals == {4.0}
    assert ref.decode_weight_gemm_intensity(64, BF16) == 64.0


def test_group_sizes():
    assert ref.heads_per_kv_head_for_ridge(H100, BF16, BF16) == 296
    assert ref.heads_per_kv_head_for_ridge(H100, FP8, BF16) == 148
    assert round(ref.attention_regime(specs.LLAMA_3_1_8B, H100, BF16, BF16)["ridge"], 1) == 295.3


def test_mla():
    d = specs.DEEPSEEK_V3
    assert (d.kv_lora_rank, d.qk_rope_head_dim, d.n_heads) == (512, 64, 128)
    assert 2 * 128 * 1088 / (576 * 2) == pytest.approx(ref.decode_attention_intensity(d, BF16, 1, 1))
    r8 = ref.attention_regime(d, H100, FP8, BF16)
    assert round(r8["intensity"], 1) == 483.6 and round(r8["fraction_of_ridge"], 2) == 1.64
    assert r8["bound"] == "compute"
    r88 = ref.attention_regime(d, H100, FP8, FP8)
    assert round(100 * r88["fraction_of_ridge"], 1) == 81.9 and r88["bound"] == "memory"
