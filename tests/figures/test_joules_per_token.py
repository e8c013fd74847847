"""Every figure quoted by joules-per-token's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import H100_SXM, LLAMA_3_1_8B as M, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "joules_per_token.py", "_fig_joules_per_token")

D = M.hidden_size
PARAMS = M.n_layers * (2 * D * M.n_heads * M.head_dim + 2 * D * M.n_kv_heads * M.head_dim
                       + 3 * D * M.ffn_size) + D * M.vocab_size
KV = 2 * M.n_layers * M.n_kv_heads * M.head_dim * 2
CTX = 1024
FLOPS = 2 * PARAMS + 4 * M.n_layers * M.n_heads * M.head_dim * CTX
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]


def curve():
    return ref.energy_curve(H100_SXM, DType.BF16, 2 * PARAMS, KV, CTX, FLOPS, BATCHES, 350.0, 0.0)


def test_inputs():
    assert round(2 * PARAMS / 1e9, 1) == 15.0 and KV == 131072 and round(FLOPS / 1e9, 1) == 15.5
    assert 350.0 == H100_SXM.tdp_w / 2


def test_table():
    r = curve()
    rows = {1: (221, 351, 1.588), 8: (1666, 359, 0.216), 32: (5553, 381, 0.069), 128: (13321, 423, 0.032)}
    for b, (x, p, j) in rows.items():
        i = BATCHES.index(b)
        assert round(r["tokens_per_s"][i]) == x
        assert round(r["power_w"][i]) == p
        assert round(r["joules_per_token"][i], 3) == j


def test_spreads():
    r = curve()
    assert round(r["power_spread"], 2) == 1.21
    assert round(r["throughput_spread"]) == 60
    assert round(r["joules_spread"]) == 50
    assert r["moved_by"] == "throughput"
    assert max(r["power_w"]) < H100_SXM.tdp_w


def test_batch_128_memory_bound():
    r = curve()
    t_cmp = 128 * FLOPS / H100_SXM.dense_flops(DType.BF16)
    assert round(t_cmp * 1e3, 2) == 2.01
    assert round(r["step_time_s"][-1] * 1e3, 1) == 9.6


def test_group():
    assert ref.joules_per_token(700.0, 14000.0, 8) == 0.4
    assert 8 * 700 == 5600
