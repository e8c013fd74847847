"""Every figure quoted by mla-absorption's statement and editorial, from the reference and specs."""

from pathlib import Path

import torch

from inferprep.grading import load_module
from inferprep.specs import A100_SXM_80GB, B200, DEEPSEEK_V3, H100_SXM, H200_SXM, LLAMA_3_1_70B, DType

ROOT = Path(__file__).resolve().parents[2]
R = load_module(ROOT / "reference" / "mla_absorption.py", "_fig_mla_absorption")


def test_deepseek_v3_dims_from_config():
    m = DEEPSEEK_V3
    assert (m.n_heads, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim) == (128, 512, 128, 64, 128)


def test_bill_per_cached_token():
    naive = R.mla_decode_cost(DEEPSEEK_V3, "naive")
    absorbed = R.mla_decode_cost(DEEPSEEK_V3, "absorbed")
    assert naive["flops_per_cached_token"] == 33_636_352
    assert absorbed["flops_per_cached_token"] == 278_528
    assert naive["bytes_per_cached_token"] == absorbed["bytes_per_cached_token"] == 1152.0
    assert round(naive["intensity"]) == 29_198 and round(absorbed["intensity"], 1) == 241.8
    assert absorbed["flops_per_query_token"] == 33_554_432 and naive["flops_per_query_token"] == 0
    assert round(naive["flops_per_cached_token"] / absorbed["flops_per_cached_token"], 1) == 120.8
    # absorption's per-query cost equals decompressing one cached token
    assert absorbed["flops_per_query_token"] == 2 * 512 * 128 * (128 + 128)


def test_regimes():
    h100 = R.mla_regime(DEEPSEEK_V3, H100_SXM, "absorbed")
    assert round(h100["ridge"], 1) == 295.3 and h100["regime"] == "memory-bound"
    assert round(h100["intensity"] / h100["ridge"], 2) == 0.82
    assert R.mla_regime(DEEPSEEK_V3, H100_SXM, "naive")["regime"] == "compute-bound"
    mtp = R.mla_regime(DEEPSEEK_V3, H100_SXM, "absorbed", q_len=2)
    assert round(mtp["intensity"], 1) == 483.6 and mtp["regime"] == "compute-bound"
    assert R.mla_regime(DEEPSEEK_V3, H100_SXM, "absorbed", kv_dtype=DType.FP8)["regime"] == "compute-bound"
    fp8 = R.mla_regime(DEEPSEEK_V3, H100_SXM, "absorbed", kv_dtype=DType.FP8, math_dtype=DType.FP8)
    assert round(fp8["ridge"], 1) == 590.7 and fp8["regime"] == "memory-bound"
    h200 = R.mla_regime(DEEPSEEK_V3, H200_SXM, "absorbed")
    assert round(h200["ridge"], 1) == 206.1 and h200["regime"] == "compute-bound"
    a100 = R.mla_regime(DEEPSEEK_V3, A100_SXM_80GB, "absorbed")
    assert round(a100["ridge"], 1) == 153.0 and a100["regime"] == "compute-bound"
    b200 = R.mla_regime(DEEPSEEK_V3, B200, "absorbed")
    assert round(b200["ridge"]) == 281 and b200["regime"] == "memory-bound"


def test_gqa_comparison():
    m = LLAMA_3_1_70B
    assert (m.n_heads, m.n_kv_heads, m.head_dim) == (64, 8, 128)
    flops = 2 * m.n_heads * 2 * m.head_dim
    nbytes = 2 * m.n_kv_heads * m.head_dim * 2
    assert (flops, nbytes, flops / nbytes) == (32_768, 4_096, 8.0)
    assert round(R.mla_regime(DEEPSEEK_V3, H100_SXM, "absorbed")["ridge"] / 8) == 37


def test_long_cache_memory():
    assert 12288 * 128 * 128 * 4 == 768 * 2 ** 20 > 512 * 2 ** 20
    assert round(12288 * 512 * 4 / 1e6, 1) == 25.2 and round(128 * 12288 * 4 / 1e6, 1) == 6.3


def test_naive_equals_absorbed_and_hand_example():
    g = torch.Generator().manual_seed(0)
    B, H, dn, dr, dv, r, S = 2, 4, 16, 8, 12, 32, 21
    t = [torch.randn(*s, generator=g, dtype=torch.float64) for s in
         [(B, H, dn), (B, H, dr), (B, S, r), (B, S, dr), (H, dn, r), (H, dv, r)]]
    lens = torch.tensor([21, 4])
    a = R.mla_decode_naive(*t, cache_lens=lens)
    b = R.mla_decode_absorbed(*t, cache_lens=lens)
    assert torch.allclose(a, b, rtol=1e-12, atol=1e-12)
    ex = load_module(ROOT / "exercises" / "mla-absorption" / "examples.py", "_fig_mla_examples")
    got = R.mla_decode_absorbed(*ex._small("cpu"), cache_lens=torch.tensor([2]))
    assert torch.allclose(got, ex._expected("cpu"), atol=1e-12)
