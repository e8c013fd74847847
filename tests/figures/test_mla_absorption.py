"""Every figure quoted by mla-absorption's statement and editorial, from the reference and specs."""

import dataclasses
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
    assert (B200.bf16_dense_flops, B200.hbm_bytes_per_s) == (2.25e15, 7.7e12)
    assert round(b200["ridge"], 1) == 292.2 and b200["regime"] == "memory-bound"


def test_against_stored_kv_mha():
    stored = R.stored_kv_cost(DEEPSEEK_V3)
    absorbed = R.mla_decode_cost(DEEPSEEK_V3, "absorbed")
    assert stored["flops_per_cached_token"] == 81_920 and stored["bytes_per_cached_token"] == 81_920.0
    assert stored["intensity"] == 1.0
    assert round(absorbed["flops_per_cached_token"] / stored["flops_per_cached_token"], 1) == 3.4
    assert round(stored["bytes_per_cached_token"] / absorbed["bytes_per_cached_token"]) == 71
    # the naive column is the stored-KV FLOPs plus decompression
    naive = R.mla_decode_cost(DEEPSEEK_V3, "naive")
    assert naive["flops_per_cached_token"] == 2 * 512 * 128 * 256 + 81_920


def test_crossover():
    t = R.absorb_crossover_q_len(DEEPSEEK_V3)
    assert round(t, 1) == 170.7 and 33_554_432 / 196_608 == t
    assert 278_528 - 81_920 == 196_608
    for q_len, cheaper in ((170, "absorbed"), (171, "naive")):
        n = R.mla_decode_cost(DEEPSEEK_V3, "naive", q_len=q_len)["flops_per_cached_token"]
        a = R.mla_decode_cost(DEEPSEEK_V3, "absorbed", q_len=q_len)["flops_per_cached_token"]
        assert (a < n) == (cheaper == "absorbed")


def test_tensor_parallel():
    for tp, flops, intensity, share in ((8, 34_816, 30.2, 10), (4, 69_632, 60.4, 20)):
        shard = dataclasses.replace(DEEPSEEK_V3, n_heads=128 // tp)
        c = R.mla_decode_cost(shard, "absorbed")
        assert c["flops_per_cached_token"] == flops and c["bytes_per_cached_token"] == 1152.0
        assert round(c["intensity"], 1) == intensity
        assert round(100 * R.mla_regime(shard, H100_SXM, "absorbed")["intensity"] / 295.343283582) == share


def test_overflow_case():
    G = load_module(ROOT / "graders" / "mla_absorption.py", "_fig_mla_grader")
    t, lens, hot = G.overflow_inputs(995)
    a = R.mla_decode_absorbed(*t, cache_lens=lens)
    assert torch.isfinite(a).all()
    assert not torch.isfinite(R.mla_decode_naive(*t, cache_lens=lens)).all()
    assert float(t[2].abs().max()) > 1e150 and float(t[4].abs().max()) > 1e200
    assert float(t[2].abs().max()) * float(t[4].abs().max()) == float("inf")
    # the hot tokens get weight exactly 0: the answer is attention over the other tokens
    clean = [x.clone() for x in t]
    clean[2][:, :, 32:] = 0.0
    assert torch.allclose(R.mla_decode_naive(*clean, cache_lens=lens), a, rtol=1e-12, atol=1e-14)
    assert 0 < int(hot.sum()) < int(lens.sum())
    # the ridge tie of the grader: 30.0 on both sides, exactly
    tie = R.mla_regime(G.TIE_MLA, G.TIE_GPU, "absorbed")
    assert tie["intensity"] == tie["ridge"] == 30.0 and tie["regime"] == "compute-bound"
    assert R.mla_regime(G.TIE_MLA, G.ABOVE_GPU, "absorbed")["regime"] == "memory-bound"


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
