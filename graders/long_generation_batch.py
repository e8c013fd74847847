"""Hidden cases for long-generation-batch: tabled and made-up models, GPUs, dtypes and TP
degrees; pools from several utilisations, reserves and block sizes (1 to 128); admission limits
for long, short and one-token outputs with prompts that are and are not block multiples, a zero
pool and max_num_seqs caps; overflow steps at step 1, exactly on a block boundary and never;
preemption prices from 0 to 16,000 generated tokens; staggered TPOTs (two on an MQA model whose
decode attention is compute-bound); the user-speed batch bound by speed, pool and max_num_seqs,
with exact ties (a power-of-two model whose step time is exact in binary, and a pool exactly at
max_num_seqs); one-token prompts and outputs, a pool the prompts fill exactly, a fractional
weight share per GPU (odd FP8 weights on TP 2), a target between two integers, a cap of one
request that misses the target, and an empty pool; then the input checks (a free memory of
exactly 0 included)."""

from __future__ import annotations

import dataclasses
import math

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
COST_KEYS = ("recompute_tokens", "recompute_s", "swap_bytes", "swap_s")
SPEED_KEYS = ("batch", "binding", "tokens_per_s_per_user", "throughput_tokens_per_s")

MHA = ModelConfig(name="mha-7b", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=612e12,
                              fp8_dense_flops=1224e12, hbm_bytes=48_000_000_000,
                              hbm_bytes_per_s=2.1e12)
# Power-of-two model and GPU: every step time below is exact in binary.
TINY = ModelConfig(name="tiny-pow2", n_layers=1, hidden_size=64, n_heads=1, n_kv_heads=1,
                   head_dim=64, ffn_size=64, vocab_size=448)
POW2_GPU = dataclasses.replace(specs.H100_SXM, name="pow2", bf16_dense_flops=2.0 ** 50,
                               fp8_dense_flops=2.0 ** 51, hbm_bytes_per_s=2.0 ** 40)
# 5 staggered requests, prompt 100, output 50: contexts 150+140+130+120+110 = 650 keys;
# weights 114,688 B and 256 B of KV per key at 2^40 B/s; a fixed part that makes the step 2^-10 s.
TIE_TFIXED = (2.0 ** 30 - 114_688 - 256 * 650) / 2.0 ** 40
TIE_SM = StepModel(TINY, POW2_GPU, 1, mfu=1.0, mbu=1.0, t_fixed_s=TIE_TFIXED)

# A made-up MQA model (64 query heads per KV head, INT4 KV) on a slow-compute GPU: the FLOP side
# of decode attention, A*context/F, beats the KV read kvb*context/BW.
MQA64 = ModelConfig(name="mqa-64", n_layers=24, hidden_size=4096, n_heads=64, n_kv_heads=1,
                    head_dim=64, ffn_size=11008, vocab_size=50304)
SLOW_GPU = dataclasses.replace(specs.H100_SXM, name="slow-compute", hbm_bytes_per_s=4.0e12,
                               bf16_dense_flops=100e12, fp8_dense_flops=200e12)
MQA64_SM = StepModel(MQA64, SLOW_GPU, 2, kv_dtype=DType.INT4, mfu=0.3, mbu=0.9, t_fixed_s=0.001)

# A made-up model with an odd FP8 weight count (105 B) on TP 2: W / n = 52.5 B per GPU, and a
# made-up HBM of 6,052 B makes n * free = 11,999 B, one byte short of 1,000 blocks of 12 B.
ODD_FP8 = ModelConfig(name="odd-fp8", n_layers=1, hidden_size=3, n_heads=1, n_kv_heads=1,
                      head_dim=3, ffn_size=5, vocab_size=8)
ODD_SHARE_SM = StepModel(ODD_FP8, dataclasses.replace(specs.H100_SXM, name="odd-share", hbm_bytes=6052),
                         2, dtype=DType.FP8)

S8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
STEP_MODELS = [
    ("8b-h100-s8b", S8B),
    ("70b-tp8-h100", StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8,
                               t_fixed_s=0.003)),
    ("8b-h200-fp8", StepModel(specs.LLAMA_3_1_8B, specs.H200_SXM, 1, dtype=DType.FP8,
                              kv_dtype=DType.FP8, mfu=0.45, mbu=0.85, t_fixed_s=0.0015)),
    ("mha7b-madeup-tp2", StepModel(MHA, ODD_GPU, 2, mfu=0.7, mbu=0.9, t_fixed_s=0.0)),
    ("70b-tp4-b200-fp8kv", StepModel(specs.LLAMA_3_1_70B, specs.B200, 4, kv_dtype=DType.FP8,
                                     mfu=0.55, mbu=0.75, t_fixed_s=0.004)),
]


def _same(out, exp, name: str) -> None:
    """Exact comparison (ints, None, str, dicts of ints) that never prints the hidden answer."""
    if type(out) is not type(exp) or out != exp:
        fail(f"{name}: got {out!r}, which is wrong")


def _check_dict(out, exp, keys, int_keys) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    for k in keys:
        if k in int_keys or exp[k] is None or isinstance(exp[k], str):
            _same(out[k], exp[k], f"[{k!r}]")
        else:
            expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def grade(g: Grading) -> None:
    ref = g.reference()

    for mname, sm in STEP_MODELS:
        for bs, u, reserve in ((16, 0.9, 4e9), (32, 0.85, 2e9), (1, 0.95, 0), (128, 0.9, 6e9)):
            with g.case(f"pool-{mname}-bs{bs}-u{u}-reserve{reserve:g}"):
                _same(g.call("kv_pool_blocks", sm, bs, u, reserve),
                      ref.kv_pool_blocks(sm, bs, u, reserve), "pool_blocks")

    # one byte free per GPU (HBM = the TINY weights + 1 B, u = 1, no reserve): valid, and 0 blocks
    one_byte = StepModel(TINY, dataclasses.replace(POW2_GPU, name="one-byte-spare", hbm_bytes=114_688 + 1), 1)
    with g.case("pool-one-byte-free-per-gpu"):
        _same(g.call("kv_pool_blocks", one_byte, 1, 1.0, 0), ref.kv_pool_blocks(one_byte, 1, 1.0, 0), "pool_blocks")

    # half a byte of weights per GPU: the fractional share decides the 1,000th block
    with g.case("pool-fractional-weight-share-tp2"):
        _same(g.call("kv_pool_blocks", ODD_SHARE_SM, 1, 1.0, 0),
              ref.kv_pool_blocks(ODD_SHARE_SM, 1, 1.0, 0), "pool_blocks")

    loads = [(1000, 1, 100, 16, 1024), (25267, 512, 16384, 16, 1024), (25267, 500, 16000, 16, 1024), (25267, 512, 16384, 16, 1),
             (5000, 100, 4096, 16, 256), (123457, 1000, 33, 32, 1024),
             (4000, 17, 1, 7, 1024), (100, 9, 8, 16, 1024), (900, 64, 2048, 1, 64), (0, 512, 16384, 16, 1024),
             (25267, 512, 16384, 16, 8), (77777, 3000, 30000, 64, 512)]
    for pool, p, o, bs, mns in loads:
        with g.case(f"admission-pool{pool}-p{p}-o{o}-bs{bs}-max{mns}"):
            out = g.call("admission_limits", pool, p, o, bs, mns)
            exp = ref.admission_limits(pool, p, o, bs, mns)
            if not isinstance(out, dict) or set(out) != set(exp):
                fail(f"expected a dict with exactly the keys {sorted(exp)}")
            for k in ("reserved", "staggered", "current"):
                _same(out[k], exp[k], f"[{k!r}]")

    overflows = [(100, 10, 150, 50, 16),   # prompts fill the pool exactly (valid): step 11
                 (25267, 789, 512, 16384, 16), (25267, 45, 512, 16384, 16),
                 (25267, 23, 512, 16384, 16), (25267, 1, 512, 16384, 16),
                 (5000, 30, 100, 4096, 16), (5000, 30, 100, 2000, 16),
                 (600, 10, 95, 100, 16),     # 60 blocks = 960 tokens each: first overflow at step 866
                 (600, 10, 95, 865, 16), (600, 10, 95, 866, 16),
                 (1000, 7, 10, 500, 1), (123457, 1000, 1000, 33, 32)]
    for pool, b, p, o, bs in overflows:
        with g.case(f"overflow-pool{pool}-b{b}-p{p}-o{o}-bs{bs}"):
            _same(g.call("overflow_step", pool, b, p, o, bs), ref.overflow_step(pool, b, p, o, bs),
                  "overflow_step")

    for i, (mname, sm) in enumerate(STEP_MODELS):
        for p, gen, pcie in ((1, 0, 25e9), (512, 0, 25e9), (512, 1024, 25e9), (512, 8192, 64e9),
                             (2000, 16000, 25e9)):
            with g.case(f"preemption-{mname}-p{p}-after{gen}-pcie{pcie:g}"):
                _check_dict(g.call("preemption_cost", sm, p, gen, pcie),
                            ref.preemption_cost(sm, p, gen, pcie), COST_KEYS, ("recompute_tokens",))

    for mname, sm in STEP_MODELS:
        for b, p, o in ((3, 1, 1), (1, 512, 16384), (7, 100, 4096), (45, 512, 16384), (300, 64, 333)):
            with g.case(f"tpot-{mname}-b{b}-p{p}-o{o}"):
                expect_close(g.call("staggered_tpot", sm, b, p, o), ref.staggered_tpot(sm, b, p, o),
                             name="tpot", rtol=RTOL)
    for b, p, o in ((8, 512, 4096), (64, 2000, 16000)):
        with g.case(f"tpot-mqa64-slow-int4kv-compute-bound-attention-b{b}-p{p}-o{o}"):
            expect_close(g.call("staggered_tpot", MQA64_SM, b, p, o),
                         ref.staggered_tpot(MQA64_SM, b, p, o), name="tpot", rtol=RTOL)

    speed = [(m, sm, 25267, 512, 16384, 16, t, 1024) for m, sm in STEP_MODELS[:1]
             for t in (60.0, 60.5, 50.0, 40.0, 30.0, 200.0)]
    speed += [("8b-h100-s8b", S8B, 25267, 512, 16384, 16, 200.0, 1),    # cap 1 misses: speed
              ("8b-h100-s8b", S8B, 0, 512, 16384, 16, 30.0, 1024),      # empty pool: kv_pool
              ("8b-h100-s8b", S8B, 25267, 1, 16384, 16, 30.0, 1)]
    speed += [("8b-h100-s8b", S8B, 25014, 512, 16384, 16, 30.0, 45),    # pool limit == max: kv_pool
              ("8b-h100-s8b", S8B, 25558, 512, 16384, 16, 30.0, 45),    # pool limit 46 > 45
              ("8b-h100-s8b", S8B, 25267, 512, 16384, 16, 30.0, 16),
              ("8b-h100-s8b", S8B, 1000, 512, 16384, 16, 30.0, 1024),   # one peak does not fit
              ("8b-h100-s8b", S8B, 25267, 512, 16384, 1, 45.0, 1024)]
    speed += [(m, sm, 400_000, 1000, 8000, 16, t, 1024) for m, sm in STEP_MODELS[1:]
              for t in (20.0, 45.0)]
    speed += [("tiny-pow2-tie", TIE_SM, 10_000, 100, 50, 16, 1024.0, 64),
              ("tiny-pow2-tie-pool5", TIE_SM, 50, 100, 50, 16, 1024.0, 64),
              ("tiny-pow2-just-above", TIE_SM, 10_000, 100, 50, 16, 1024.5, 64)]
    for mname, sm, pool, p, o, bs, target, mns in speed:
        with g.case(f"speed-{mname}-pool{pool}-p{p}-o{o}-bs{bs}-target{target:g}-max{mns}"):
            _check_dict(g.call("batch_for_user_speed", sm, pool, p, o, bs, target, mns),
                        ref.batch_for_user_speed(sm, pool, p, o, bs, target, mns),
                        SPEED_KEYS, ("batch", "binding"))

    big = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 1)
    # HBM = the TINY weights exactly (u = 1, no reserve): free_per_gpu == 0 is an error
    one_byte_short = StepModel(TINY, dataclasses.replace(POW2_GPU, name="no-byte-spare", hbm_bytes=114_688), 1)
    checks = [
        ("pool-utilization-zero", "kv_pool_blocks", (S8B, 16, 0.0, 4e9)),
        ("pool-utilization-above-one", "kv_pool_blocks", (S8B, 16, 1.2, 4e9)),
        ("pool-negative-reserve", "kv_pool_blocks", (S8B, 16, 0.9, -1.0)),
        ("pool-weights-do-not-fit", "kv_pool_blocks", (big, 16, 0.9, 4e9)),
        ("pool-zero-block-size", "kv_pool_blocks", (S8B, 0, 0.9, 4e9)),
        ("pool-exactly-zero-free", "kv_pool_blocks", (one_byte_short, 1, 1.0, 0)),
        ("admission-zero-block-size", "admission_limits", (25267, 512, 16384, 0, 1024)),
        ("admission-zero-prompt", "admission_limits", (25267, 0, 16384, 16, 1024)),
        ("admission-zero-output", "admission_limits", (25267, 512, 0, 16, 1024)),
        ("admission-negative-pool", "admission_limits", (-1, 512, 16384, 16, 1024)),
        ("admission-zero-max-num-seqs", "admission_limits", (25267, 512, 16384, 16, 0)),
        ("admission-float-prompt", "admission_limits", (25267, 512.0, 16384, 16, 1024)),
        ("overflow-prompts-do-not-fit", "overflow_step", (100, 10, 512, 16384, 16)),
        ("overflow-zero-batch", "overflow_step", (25267, 0, 512, 16384, 16)),
        ("preemption-zero-prompt", "preemption_cost", (S8B, 0, 10, 25e9)),
        ("preemption-negative-generated", "preemption_cost", (S8B, 512, -1, 25e9)),
        ("preemption-zero-pcie", "preemption_cost", (S8B, 512, 10, 0.0)),
        ("preemption-not-a-step-model", "preemption_cost", ({"mfu": 0.5}, 512, 10, 25e9)),
        ("tpot-zero-batch", "staggered_tpot", (S8B, 0, 512, 16384)),
        ("tpot-zero-prompt", "staggered_tpot", (S8B, 4, 0, 16384)),
        ("tpot-zero-output", "staggered_tpot", (S8B, 4, 512, 0)),
        ("speed-zero-max-num-seqs", "batch_for_user_speed", (S8B, 25267, 512, 16384, 16, 60.0, 0)),
        ("speed-zero-target", "batch_for_user_speed", (S8B, 25267, 512, 16384, 16, 0.0, 1024)),
        ("speed-nan-target", "batch_for_user_speed", (S8B, 25267, 512, 16384, 16, math.nan, 1024)),
        ("speed-bool-block-size", "batch_for_user_speed", (S8B, 25267, 512, 16384, True, 60.0, 1024)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
