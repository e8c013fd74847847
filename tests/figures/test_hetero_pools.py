"""Every figure of the hetero-pools statement and editorial, computed by the reference."""

import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "hetero_pools.py", "ref_hetero_pools")
K2 = specs.KIMI_K2
KV_TOK = K2.n_layers * (K2.kv_lora_rank + K2.qk_rope_head_dim) * 2
ROOM = 131072 * KV_TOK
W, UTIL, RES = 1.0e12, 0.9, 4e9
B200, H100, H200 = specs.B200, specs.H100_SXM, specs.H200_SXM
MOE_LAYERS = K2.n_layers - K2.first_dense_layers


def free(gpu, n):
    return UTIL * gpu.hbm_bytes - W / (8 * n) - RES


def decode(gpu, n, ctx=8192, eff=0.8):
    seq = ctx * KV_TOK
    batch = int(free(gpu, n) * 8 * n // seq)
    kv = batch * seq / (8 * n)
    step = ref.decode_step_ms(gpu, n, W, kv, eff, MOE_LAYERS, 155.0, 273.0)
    hbm = ref.decode_step_ms(gpu, n, W, kv, eff, 0, 0.0, 0.0)
    return batch, kv, hbm, step, 1e3 * batch / step


def test_kv_room():
    assert KV_TOK == 70_272 and ROOM == 9_210_691_584 and round(ROOM / 1e9, 2) == 9.21
    assert MOE_LAYERS == 60


def test_node_counts():
    assert round(free(B200, 1) / 1e9, 1) == 33.0
    assert [round(free(H100, n) / 1e9, 2) for n in (1, 2, 3, 4)] == [-57.0, 5.5, 26.33, 36.75]
    assert [round(free(H200, n) / 1e9, 1) for n in (1, 2)] == [-2.1, 60.4]
    assert round(free(H100, 3) / 1e9, 1) == 26.3
    assert ref.min_nodes(B200, W, UTIL, RES, ROOM, 8, True) == 1
    assert ref.min_nodes(B200, W, UTIL, RES, ROOM, 8, False) == 1
    assert ref.min_nodes(H100, W, UTIL, RES, ROOM, 8, True) == 4
    assert ref.min_nodes(H100, W, UTIL, RES, ROOM, 8, False) == 3
    assert ref.min_nodes(H100, W, UTIL, RES, ROOM / 2, 8, True) == 2
    assert ref.min_nodes(H100, W, 1.0, 0.0, 0.0, 8, False) == 2
    assert ref.min_nodes(H200, W, UTIL, RES, ROOM, 8, True) == 2
    assert ref.min_nodes(H200, W, UTIL, RES, ROOM, 8, False) == 2
    assert 8 * B200.hbm_bytes == 1_440e9 and 8 * H100.hbm_bytes == 640e9 and 8 * H200.hbm_bytes == 1_128e9
    assert round(W / 640e9, 2) == 1.56


def test_roles():
    r = ref.assign_roles({"H100": H100, "B200": B200}, W, UTIL, RES, ROOM, 8, True)
    assert r == {"decode": "B200", "prefill": "H100", "decode_nodes": 1, "prefill_nodes": 4}


def test_decode_table():
    b, kv, hbm, step, tps = decode(B200, 1)
    assert (b, round(kv / 1e9, 2), round(hbm, 2), round(step, 2), round(tps / 1e3, 1)) == \
        (458, 32.96, 25.64, 25.64, 17.9)
    b, kv, hbm, step, tps = decode(H100, 4)
    assert (b, round(kv / 1e9, 2), round(hbm, 2), round(step - hbm, 2), round(step, 2),
            round(tps / 1e3, 1), round(tps / 4e3, 1)) == (2042, 36.73, 25.37, 25.68, 51.05, 40.0, 10.0)
    assert round(MOE_LAYERS * (155 + 273) / 1e3, 2) == 25.68


def test_statement_example():
    s = ref.decode_step_ms(H100, 4, W, 36.73e9, 0.8, 60, 155.0, 273.0)
    assert s == pytest.approx(51.045671641791046, rel=1e-12)
    assert round(ref.decode_step_ms(H100, 4, W, 36.73e9, 0.8, 0, 0, 0), 2) == 25.37
    assert round(s, 2) == 51.05


def test_pools():
    pre_h100 = 32 * H100.fp8_dense_flops * 0.4 / (2 * 32e9)
    pre_b200 = 8 * B200.fp8_dense_flops * 0.4 / (2 * 32e9)
    assert round(pre_h100) == 395_780 and round(pre_b200) == 225_000
    dec = decode(B200, 1)[4]
    assert round(dec) == 17_861
    p = ref.pool_sizes(20, 8192, 1024, 395_780, 17_861.06, 4, 1)
    assert (p["prefill_tokens_per_s"], p["decode_tokens_per_s"]) == (163_840, 20_480)
    assert (p["prefill_instances"], p["decode_instances"], p["prefill_nodes"], p["decode_nodes"]) == (1, 2, 4, 2)
    q = ref.pool_sizes(20.0, 8192, 1024, 163840.0, 10240.0, 4, 1)
    assert (q["prefill_instances"], q["decode_instances"], q["prefill_nodes"], q["decode_nodes"]) == (1, 2, 4, 2)


def test_mismatch_example():
    cfg = {"model": "moonshotai/Kimi-K2-Instruct", "weight_format": "fp8_block128",
           "kv_cache_dtype": "fp8_e4m3", "kv_scale": 1.0, "block_size": 64, "kv_layout": "NHD",
           "tp_head_split": 1, "rope_scaling": None, "hybrid_kv_manager": False}
    other = dict(cfg, kv_cache_dtype="fp8", weight_format="nvfp4", kv_scale=0.5)
    assert ref.pd_mismatches(cfg, other) == ["kv_scale", "weight_format"]
    assert ref.pd_mismatches(cfg, dict(cfg, kv_cache_dtype="auto", kv_scale=0.5)) == ["kv_cache_dtype"]
    assert not math.isnan(0.0)
