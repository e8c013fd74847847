"""The shared step-time model: every formula of its docstring on exact numbers, the figures the
serving and decoding notes quote, its errors, and the wire."""

from __future__ import annotations

import dataclasses

import pytest

from inferprep import specs
from inferprep.runner import wire
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

# Powers of two everywhere, so every time below is an exact binary fraction.
TOY = ModelConfig(name="toy", n_layers=2, hidden_size=8, n_heads=4, n_kv_heads=2, head_dim=2,
                  ffn_size=16, vocab_size=32)
TOY_GPU = dataclasses.replace(specs.H100_SXM, name="toy-gpu", hbm_bytes_per_s=2.0**10,
                              bf16_dense_flops=2.0**14, fp8_dense_flops=2.0**15)


def toy(**kw) -> StepModel:
    return StepModel(TOY, TOY_GPU, **kw)


def test_counts_by_hand():
    sm = toy()
    # attention 8*4*2 + 2*8*2*2 + 4*2*8 = 64 + 64 + 64; MLP 3*8*16 = 384; two layers
    assert sm.body_params == 2 * (192 + 384) == 1152
    assert sm.head_params == 32 * 8 == 256
    assert sm.weight_bytes == 2 * (1152 + 256)
    assert sm.kv_bytes_per_token == 2 * 2 * 2 * 2 * 2 == 32
    assert sm.attn_flops_per_key == 2 * 2 * 4 * 4 == 64
    assert (sm.flops_per_s, sm.bytes_per_s) == (2.0**14, 2.0**10)
    assert toy(n_gpus=4, mfu=0.5, mbu=0.25).flops_per_s == 4 * 2.0**14 * 0.5
    assert toy(n_gpus=4, mfu=0.5, mbu=0.25).bytes_per_s == 4 * 2.0**10 * 0.25
    assert toy(dtype=DType.FP8).flops_per_s == 2.0**15
    assert toy(dtype=DType.FP8).weight_bytes == 1152 + 256


def test_step_terms_exact():
    sm = toy(t_fixed_s=0.5)
    # decode of two sequences with 3 and 7 cached tokens
    rows = [(1, 3, 1), (1, 7, 1)]
    b = sm.breakdown(rows)
    gemm_mem = 2816 / 1024
    gemm_flops = (2 * 1152 * 2 + 2 * 256 * 2) / 2.0**14
    assert b["gemm_s"] == max(gemm_mem, gemm_flops) == gemm_mem and b["gemm_bound"] == "memory"
    att = sum(max(32 * (c + 1) / 1024, 64 * (c + 1) / 2.0**14) for c in (3, 7))
    assert b["attention_s"] == att == (32 * 4 + 32 * 8) / 1024
    assert b["step_s"] == 0.5 + gemm_mem + att == sm.step_s(rows)
    assert (b["tokens"], b["logit_rows"], b["fixed_s"]) == (2, 2, 0.5)
    assert sm.decode_step_s([4, 8]) == b["step_s"]


def test_prefill_chunk_is_causal_and_can_be_compute_bound():
    sm = toy()
    q, c = 64, 32
    flops = 64 * (q * c + q * (q + 1) // 2)
    assert sm.attention_s(q, c) == max(32 * (q + c) / 1024, flops / 2.0**14) == flops / 2.0**14
    # a chunk that does not complete its prompt needs no logits: the LM head multiplies nothing
    b = sm.breakdown([(q, c, 0)])
    assert b["gemm_s"] == max(2816 / 1024, 2 * 1152 * q / 2.0**14) == 2 * 1152 * q / 2.0**14
    assert b["gemm_bound"] == "compute" and b["logit_rows"] == 0


def test_knee_tie_and_empty_step():
    sm = toy()
    knee = sm.gemm_knee_tokens()
    assert knee == 2816 / 1024 * 2.0**14 / (2 * 1152)
    assert sm.breakdown([])["step_s"] == 0.0 == toy(t_fixed_s=1.0).step_s([])
    # memory time == compute time is "memory": 2816 B / 1024 B/s = 2.75 s, and at F = 2^13 FLOP/s
    # that is 22528 FLOPs = 2*1152*T + 2*256*R with T = R = 8
    tie = toy(mfu=0.5)
    flops_needed = 2816 / 1024 * 2.0**13
    assert flops_needed == 22528 == 2 * 1152 * 8 + 2 * 256 * 8
    b = tie.breakdown([(8, 0, 8)])
    assert b["gemm_bound"] == "memory"
    assert tie.breakdown([(8, 0, 8), (1, 0, 1)])["gemm_bound"] == "compute"


def test_the_notes_figures():
    # ../shared/notes/serving-decoding/out/stepmodel.txt (scripts/stepmodel.py)
    s8 = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM)
    s70 = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, n_gpus=8)
    assert (s8.body_params, s8.head_params) == (6_979_321_856, 525_336_576)
    assert (s70.body_params, s70.head_params) == (68_451_041_280, 1_050_673_152)
    assert (s8.attn_flops_per_key, s8.kv_bytes_per_token) == (524_288, 131_072)
    assert (s70.attn_flops_per_key, s70.kv_bytes_per_token) == (2_621_440, 327_680)
    assert s70.weight_bytes == 139_003_428_864
    assert s70.weight_bytes / s70.bytes_per_s * 1e3 == pytest.approx(5.186695106865671, rel=1e-12)
    assert s70.gemm_knee_tokens() == pytest.approx(299.8765858208955, rel=1e-12)
    spec = dataclasses.replace(s70, mfu=0.6, mbu=0.8)
    assert spec.gemm_knee_tokens() == pytest.approx(224.9, abs=0.05)
    # decode attention stays bandwidth-bound: GQA-8 intensity ~ 8 FLOP/B, far below the ridge
    assert s70.attention_s(1, 100_000) == s70.kv_bytes_per_token * 100_001 / s70.bytes_per_s


@pytest.mark.parametrize("kw, match", [
    (dict(model=specs.DEEPSEEK_V3), "dense"),
    (dict(model=specs.MIXTRAL_8X7B), "dense"),
    (dict(model=dataclasses.replace(TOY, n_kv_heads=3)), "multiple"),
    (dict(n_gpus=0), "n_gpus"),
    (dict(n_gpus=True), "n_gpus"),
    (dict(n_gpus=2.0), "n_gpus"),
    (dict(mfu=0.0), "mfu"),
    (dict(mfu=1.5), "mfu"),
    (dict(mbu=float("nan")), "mbu"),
    (dict(t_fixed_s=-1e-3), "t_fixed_s"),
    (dict(t_fixed_s=float("inf")), "t_fixed_s"),
    (dict(dtype=DType.INT4), "tensor-core"),
    (dict(dtype="bf16"), "DType"),
    (dict(kv_dtype="bf16"), "DType"),
    (dict(gpu="H100"), "GPU"),
])
def test_invalid_fields(kw, match):
    args = dict(model=TOY, gpu=TOY_GPU)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        StepModel(**args)


@pytest.mark.parametrize("rows", [
    (1, 0, 1),                      # a row, not a list of rows
    [(0, 5, 0)],                    # no new token
    [(1, -1, 1)],
    [(2, 0, 3)],                    # more logit rows than new tokens
    [(1, 0)],
    [(1.0, 0, 1)],
    [(True, 0, 1)],
    "rows",
])
def test_invalid_rows(rows):
    with pytest.raises(ValueError):
        toy().step_s(rows)


def test_invalid_decode_contexts():
    for bad in ([0], [1.5], 5, [True]):
        with pytest.raises(ValueError):
            toy().decode_step_s(bad)


def test_crosses_the_wire():
    sm = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, n_gpus=8, mfu=0.6, mbu=0.8,
                   t_fixed_s=3e-3)
    head, buffers = wire.encode(sm)
    back = wire.decode(head, buffers)
    assert back == sm and back.step_s([(1, 4095, 1)]) == sm.step_s([(1, 4095, 1)])
