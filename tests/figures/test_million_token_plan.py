"""Every figure of the million-token-plan statement and editorial, computed by the reference."""

import dataclasses
from pathlib import Path

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "million_token_plan.py", "ref_million_token_plan")
M, G, BF16, FP8 = specs.LLAMA_3_1_70B, specs.H100_SXM, DType.BF16, DType.FP8
P20 = 2**20
GiB = 2**30
ARGS = (BF16, BF16, 0.9, 4e9)


def test_kv():
    assert ref.kv_bytes_per_request(M, 1, BF16) == 327_680 and 327_680 / 1024 == 320
    kv = ref.kv_bytes_per_request(M, P20, BF16)
    assert kv == 343_597_383_680 and kv / GiB == 320 and round(kv / 1e9, 1) == 343.6
    kv6 = ref.kv_bytes_per_request(M, 10**6, BF16)
    assert round(kv6 / GiB, 2) == 305.18 and round(kv6 / 1e9, 2) == 327.68
    assert round(100 * (1 - 10**6 / P20), 1) == 4.6
    assert round(ref._stored_params(M) * 2 / 1e9, 1) == 141.1


def test_prefill():
    shares = [round(100 * ref.prefill_flops(M, p)["attention_share"], 2) for p in (8192, 32768, 131072, P20)]
    assert shares == [7.17, 23.61, 55.28, 90.82]
    f = ref.prefill_flops(M, P20)
    assert f["attention_share"] == 0.9081512126587589
    assert f"{f['total']:.4e}" == "1.5869e+18"
    per_key = 80 * 2 * 64 * 256
    non_causal = per_key * P20 * P20 / (per_key * P20 * P20 + f["weights"])
    assert round(100 * non_causal, 2) == 95.19
    assert round(f["total"] / (8 * G.bf16_dense_flops), 1) == 200.5
    assert round(f["total"] / (8 * G.bf16_dense_flops * 0.5)) == 401
    # smallest prompt whose attention FLOPs reach the weight FLOPs
    p = next(p for p in range(100_000, 120_000) if ref.prefill_flops(M, p)["attention_share"] >= 0.5)
    assert p == 106_051


def test_plan_and_statement_example():
    r = ref.plan_fits(M, G, 8, 8, P20, *ARGS)
    assert (r["cp"], r["kv_heads_per_gpu"], r["fits"]) == (1, 1, True)
    assert r["weights_per_gpu"] == 17_638_426_624 and round(r["weights_per_gpu"] / 1e9, 2) == 17.64
    assert r["kv_per_gpu"] == 42_949_672_960 and r["kv_per_gpu"] / GiB == 40
    assert round(r["kv_per_gpu"] / 1e9, 2) == 42.95
    assert r["need"] == 64_588_099_584 and round(r["need"] / 1e9, 2) == 64.59 and r["budget"] == 72e9
    # 1e6 vs 2^20 flips fits with a 12 GB reserve
    assert not ref.plan_fits(M, G, 8, 8, P20, BF16, BF16, 0.9, 12e9)["fits"]
    assert ref.plan_fits(M, G, 8, 8, 10**6, BF16, BF16, 0.9, 12e9)["fits"]
    assert round(ref.plan_fits(M, G, 8, 8, P20, BF16, BF16, 0.9, 12e9)["need"] / 1e9, 2) == 72.59
    assert round(ref.plan_fits(M, G, 8, 8, 10**6, BF16, BF16, 0.9, 12e9)["need"] / 1e9, 2) == 70.6


def test_changes():
    b = ref.what_breaks(M, G, 8, 8, P20, *ARGS)
    assert b["mha"] == {"fits": False, "replacement": "context_parallel", "n_gpus": 64}
    assert b["mqa"] == {"fits": True, "replacement": "none", "n_gpus": 8}
    assert b["layers_x2"] == {"fits": False, "replacement": "context_parallel", "n_gpus": 24}
    assert b["head_dim_x2"]["replacement"] == "fp8_kv" and b["context_x2"]["replacement"] == "fp8_kv"
    mha = dataclasses.replace(M, n_kv_heads=64)
    assert ref.kv_bytes_per_request(mha, P20, BF16) / GiB == 2560
    assert ref.plan_fits(mha, G, 8, 8, P20, *ARGS)["kv_per_gpu"] / GiB == 320
    assert ref.replacement(mha, G, 8, 8, P20, BF16, FP8, 0.9, 4e9)["n_gpus"] == 32
    k16 = dataclasses.replace(M, n_kv_heads=16)
    assert ref.plan_fits(k16, G, 8, 8, P20, *ARGS)["kv_per_gpu"] / GiB == 80
    assert ref.replacement(k16, G, 8, 8, P20, *ARGS)["replacement"] == "fp8_kv"
    for k in (4, 1):
        mk = dataclasses.replace(M, n_kv_heads=k)
        assert ref.kv_bytes_per_request(mk, P20, BF16) / GiB == 320 * k / 8
        assert ref.plan_fits(mk, G, 8, 8, P20, *ARGS)["kv_per_gpu"] / GiB == 40
    tp4 = ref.plan_fits(M, G, 8, 4, P20, *ARGS)
    assert (tp4["cp"], tp4["kv_heads_per_gpu"], tp4["kv_per_gpu"] / GiB) == (2, 2, 40)
    l2 = ref.plan_fits(dataclasses.replace(M, n_layers=160), G, 24, 8, P20, *ARGS)
    assert l2["fits"] and round(l2["need"] / 1e9, 1) == 67.4
