"""Hidden cases for continuous-batching-gain: hand-built traces that pin every schedule rule
(short outputs, partial last group, b > N, b = 1, unsorted traces, equal lengths), fixed-seed
exponential / lognormal / uniform / capped traces and one salt-drawn trace at several b, linear
step costs from flat to steep (knee b* = a/c of 4..512, a = 0), the StepModel on tabled and
made-up models (one MQA model whose decode attention is compute-bound), GPUs, dtypes and TP
degrees at short and long contexts, the statistic on partial groups, H_b against ln b, and token budgets on both sides of the GEMM knee with an
exact tie; then the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
GAIN_KEYS = ("static_s", "continuous_s", "gain", "static_steps", "continuous_steps")
BUDGET_KEYS = ("knee_tokens", "bound", "gemm_s", "compute_utilization")

# A made-up model whose weight-GEMM knee is exactly 2048 tokens on a power-of-two GPU:
# P_body = 1 x (4*64*64 + 3*64*64) = 28,672 = P_head = 448 x 64; W = 2 x 57,344 bytes.
TINY = ModelConfig(name="tiny-knee", n_layers=1, hidden_size=64, n_heads=1, n_kv_heads=1,
                   head_dim=64, ffn_size=64, vocab_size=448)
POW2_GPU = dataclasses.replace(specs.H100_SXM, name="pow2", bf16_dense_flops=2.0 ** 50,
                               fp8_dense_flops=2.0 ** 51, hbm_bytes_per_s=2.0 ** 40)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=612e12,
                              fp8_dense_flops=1224e12, hbm_bytes_per_s=2.1e12)
# A made-up MQA model (64 query heads per KV head, INT4 KV) on a slow-compute GPU: the FLOP side
# of decode attention, A*context/F, beats the KV read kvb*context/BW.
MQA64 = ModelConfig(name="mqa-64", n_layers=24, hidden_size=4096, n_heads=64, n_kv_heads=1,
                    head_dim=64, ffn_size=11008, vocab_size=50304)
SLOW_GPU = dataclasses.replace(specs.H100_SXM, name="slow-compute", hbm_bytes_per_s=4.0e12,
                               bf16_dense_flops=100e12, fp8_dense_flops=200e12)
MQA64_SM = StepModel(MQA64, SLOW_GPU, 2, kv_dtype=DType.INT4, mfu=0.3, mbu=0.9, t_fixed_s=0.001)
MHA = ModelConfig(name="mha-7b", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
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


def _trace(kind: str, seed: int, n: int) -> list[int]:
    gen = torch.Generator().manual_seed(1300 + seed)
    x = torch.empty(n, dtype=torch.float64)
    if kind == "exp":
        x.exponential_(1 / 200.0, generator=gen)
    elif kind == "lognormal":
        x.log_normal_(4.6, 1.0, generator=gen)
    elif kind == "uniform":
        return [int(v) for v in torch.randint(1, 401, (n,), generator=gen)]
    elif kind == "capped":
        x.exponential_(1 / 200.0, generator=gen)
        x = x.clamp(max=300.0)
    elif kind == "short":
        return [int(v) for v in torch.randint(1, 5, (n,), generator=gen)]
    return [max(1, int(round(float(v)))) for v in x]


def _check_gain(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(GAIN_KEYS):
        fail(f"expected a dict with exactly the keys {list(GAIN_KEYS)}")
    for k in ("static_steps", "continuous_steps"):
        if isinstance(out[k], bool) or not isinstance(out[k], int) or out[k] != exp[k]:
            fail(f"[{k!r}]: got {out[k]!r}, which is wrong")
    for k in ("static_s", "continuous_s", "gain"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _check_schedule(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != {"static_active", "continuous_active"}:
        fail("expected a dict with exactly the keys ['static_active', 'continuous_active']")
    for k in ("static_active", "continuous_active"):
        got = out[k]
        if not isinstance(got, (list, tuple)):
            fail(f"[{k!r}]: expected a list of ints, got {type(got).__name__}")
        if len(got) != len(exp[k]):
            fail(f"[{k!r}]: {len(got)} steps, expected {len(exp[k])}")
        for s, (x, y) in enumerate(zip(got, exp[k]), start=1):
            if isinstance(x, bool) or not isinstance(x, int) or x != y:
                fail(f"[{k!r}]: step {s} has the wrong active count {x!r}")


def _check_budget(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(BUDGET_KEYS):
        fail(f"expected a dict with exactly the keys {list(BUDGET_KEYS)}")
    if out["bound"] not in ("memory", "compute"):
        fail(f"['bound']: expected 'memory' or 'compute', got {out['bound']!r}")
    if out["bound"] != exp["bound"]:
        fail(f"['bound']: got {out['bound']!r}, which is wrong")
    for k in ("knee_tokens", "gemm_s", "compute_utilization"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def grade(g: Grading) -> None:
    ref = g.reference()
    salt_rng = random.Random(f"continuous-batching-gain:{g.salt}")
    salted = [1 + int(-150 * math.log(1.0 - salt_rng.random())) for _ in range(300)]

    hand = [
        ("short-outputs", [1, 2, 1, 3, 1, 1, 2, 4, 1, 1, 3, 2], 3),
        ("partial-last-group", [5, 2, 7, 1, 3, 3, 9, 4, 2, 6], 4),
        ("b-exceeds-n", [4, 9, 2], 8),
        ("b-is-1", [3, 1, 4, 1, 5], 1),
        ("unsorted-long-then-short", [9, 1, 1, 1, 8, 1, 1, 1, 7, 2, 2, 2], 4),
        ("all-equal", [6] * 10, 3),
        ("all-ones", [1] * 7, 3),
        ("tuple-trace", (2, 5, 1, 1, 4), 2),
        ("one-request", [5], 3),
    ]
    rnd = [("exp", 0, 240, 16), ("lognormal", 1, 200, 32), ("uniform", 2, 180, 8),
           ("capped", 3, 256, 32), ("short", 4, 150, 12), ("exp", 5, 97, 64)]
    traces = [(n, list(t) if isinstance(t, list) else t, b) for n, t, b in hand]
    traces += [(f"{k}-seed{s}-n{n}", _trace(k, s, n), b) for k, s, n, b in rnd]
    traces.append(("salted-exp-n300", salted, 16))

    for name, lengths, b in traces:
        with g.case(f"schedule-{name}-b{b}"):
            _check_schedule(g.call("schedule", lengths, b), ref.schedule(lengths, b))

    costs = [(1.0, 0.0), (0.010, 0.010 / 8), (0.010, 0.010 / 32), (0.010, 0.010 / 128),
             (0.005, 0.005 / 512), (0.0, 0.001), (0.02, 0.0004), (3, 1)]
    for j, (name, lengths, b) in enumerate(traces):
        for a, c in (costs[j % len(costs)], costs[(j + 3) % len(costs)]):
            with g.case(f"gain-{name}-b{b}-a{a:g}-c{c:g}"):
                _check_gain(g.call("batching_gain", lengths, b, a, c),
                            ref.batching_gain(lengths, b, a, c))

    exp_trace = _trace("exp", 10, 256)
    for i, (mname, sm) in enumerate(STEP_MODELS):
        for b, ctx in ((32, 512), (64, 16384), (4, 1)):
            lengths = exp_trace if i % 2 == 0 else _trace("lognormal", 20 + i, 200)
            with g.case(f"step-model-{mname}-b{b}-context{ctx}"):
                _check_gain(g.call("step_model_gain", lengths, b, sm, ctx),
                            ref.step_model_gain(lengths, b, sm, ctx))

    big = _trace("exp", 30, 1100)
    for mname, sm in (STEP_MODELS[0], STEP_MODELS[4]):
        with g.case(f"step-model-{mname}-b512-context256-above-the-knee"):
            _check_gain(g.call("step_model_gain", big, 512, sm, 256),
                        ref.step_model_gain(big, 512, sm, 256))

    # Decode attention is compute-bound here (64 query heads share one INT4 KV head).
    for lengths, b, ctx in (([3, 1, 4, 1, 5, 9, 2, 6], 2, 4096), (exp_trace, 32, 16384)):
        with g.case(f"step-model-mqa64-slow-int4kv-compute-bound-attention-n{len(lengths)}"
                    f"-b{b}-context{ctx}"):
            _check_gain(g.call("step_model_gain", lengths, b, MQA64_SM, ctx),
                        ref.step_model_gain(lengths, b, MQA64_SM, ctx))

    for name, lengths, b in traces[1:]:
        with g.case(f"statistic-{name}-b{b}"):
            expect_close(g.call("length_statistic", lengths, b), ref.length_statistic(lengths, b),
                         name="length_statistic", rtol=RTOL)
    for b in (1, 2, 3, 8, 32, 100, 1000):
        with g.case(f"harmonic-b{b}"):
            expect_close(g.call("harmonic_gain", b), ref.harmonic_gain(b), name="harmonic_gain",
                         rtol=RTOL)

    budgets = [(m, sm, t) for m, sm in STEP_MODELS for t in (1, 128, 2048, 8192)]
    budgets += [("8b-h100-s8b", S8B, 198), ("8b-h100-s8b", S8B, 199)]
    tiny = StepModel(TINY, POW2_GPU, 1, mfu=1.0, mbu=1.0)
    budgets += [("tiny-pow2-knee-2048", tiny, t) for t in (2047, 2048, 2049)]
    tiny8 = StepModel(TINY, POW2_GPU, 8, dtype=DType.FP8, mfu=0.5, mbu=0.5)
    budgets += [("tiny-pow2-fp8-tp8", tiny8, t) for t in (2048, 2049)]
    for mname, sm, t in budgets:
        with g.case(f"budget-{mname}-{t}-tokens"):
            _check_budget(g.call("token_budget_point", sm, t), ref.token_budget_point(sm, t))

    # Input checks last.
    checks = [
        ("schedule-empty-trace", "schedule", ([], 4)),
        ("schedule-zero-length", "schedule", ([3, 0, 2], 2)),
        ("schedule-float-length", "schedule", ([3, 2.5], 2)),
        ("schedule-bool-length", "schedule", ([3, True], 2)),
        ("schedule-int-not-a-list", "schedule", (7, 2)),
        ("schedule-zero-slots", "schedule", ([3, 2], 0)),
        ("gain-negative-c", "batching_gain", ([3, 2], 2, 1.0, -0.1)),
        ("gain-nan-a", "batching_gain", ([3, 2], 2, math.nan, 0.1)),
        ("gain-infinite-c", "batching_gain", ([3, 2], 2, 1.0, math.inf)),
        ("gain-free-steps", "batching_gain", ([3, 2], 2, 0.0, 0.0)),
        ("step-model-zero-context", "step_model_gain", ([3, 2], 2, S8B, 0)),
        ("step-model-not-a-step-model", "step_model_gain", ([3, 2], 2, {"a": 1.0}, 512)),
        ("statistic-zero-slots", "length_statistic", ([3, 2], 0)),
        ("harmonic-zero", "harmonic_gain", (0,)),
        ("budget-zero-tokens", "token_budget_point", (S8B, 0)),
        ("budget-float-tokens", "token_budget_point", (S8B, 512.0)),
        ("budget-not-a-step-model", "token_budget_point", ({"a": 1.0}, 512)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
