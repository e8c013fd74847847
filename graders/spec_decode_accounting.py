"""Hidden cases for spec-decode-accounting.

schedule_running: budgets that fit, truncate a request's drafts mid-way, leave exactly one
token, run out before the queue does, mixed draft lengths (requests without drafts), salted
long queues. rollback_trace: one step, lookahead 0 and g, block boundaries crossed, all/none
accepted, plain steps (g = 0) between speculative ones, stale slots carried over steps, salted
long traces. spec_step: the S-spec preset with an EAGLE head across batches, contexts, draft
lengths and acceptances, an 8B target with a 1B drafter, FP8, BF16 weights with an FP8 KV cache
at long context, a made-up GPU, and a power-of-two config whose verification GEMMs sit exactly
on the tie. losing_batch: the notes' grid (losses inside and beyond the KV pool), acceptance 0
and 1, g = 0, pools smaller than one sequence, BF16 weights with an FP8 KV cache at c >= 4096,
and a power-of-two config where speculation exactly ties at one batch. Then input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

SLUG = "spec-decode-accounting"
RTOL = 1e-9

LLAMA_3_2_1B = ModelConfig(name="Llama 3.2 1B", n_layers=16, hidden_size=2048, n_heads=32,
                           n_kv_heads=8, head_dim=64, ffn_size=8192, vocab_size=128256,
                           tied_embeddings=True)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=611e12,
                              fp8_dense_flops=1.3e15, hbm_bytes_per_s=2.71e12)
TOY = ModelConfig(name="toy", n_layers=2, hidden_size=8, n_heads=4, n_kv_heads=2, head_dim=2,
                  ffn_size=16, vocab_size=32)
TOY_GPU = dataclasses.replace(specs.H100_SXM, name="toy-gpu", hbm_bytes_per_s=2.0**10,
                              bf16_dense_flops=2.0**14, fp8_dense_flops=2.0**15)


def eagle(target: StepModel, t_fixed_s: float = 0.0002) -> StepModel:
    return dataclasses.replace(target, model=dataclasses.replace(target.model, n_layers=1,
                                                                 name="eagle head"),
                               t_fixed_s=t_fixed_s)


S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
S_EAGLE = eagle(S_SPEC)
T8 = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.6, mbu=0.8, t_fixed_s=0.002)
D1 = StepModel(LLAMA_3_2_1B, specs.H100_SXM, 1, mfu=0.6, mbu=0.8, t_fixed_s=0.001)
FP8_T = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 4, dtype=DType.FP8, kv_dtype=DType.FP8,
                  mfu=0.5, mbu=0.85, t_fixed_s=0.0025)
ODD_T = StepModel(specs.LLAMA_3_1_70B, ODD_GPU, 8, mfu=0.7, mbu=0.9, t_fixed_s=0.004)
TOY_T = StepModel(TOY, TOY_GPU, t_fixed_s=4.5)
TOY_D = StepModel(dataclasses.replace(TOY, n_layers=1), TOY_GPU, t_fixed_s=0.25)
PEAK = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=1.0, mbu=1.0, t_fixed_s=0.0)
# BF16 weights with an FP8 KV cache: at long context attention is a large share of the step, so
# KV bytes counted with the weights' dtype (twice kvb) move every time and the losing batch.
S_SPEC_KV8 = dataclasses.replace(S_SPEC, kv_dtype=DType.FP8)
T8_KV8 = dataclasses.replace(T8, kv_dtype=DType.FP8)
D1_KV8 = dataclasses.replace(D1, kv_dtype=DType.FP8)
POOL_70B = 1_235_951     # 8 x (0.9 x 80 GB - weights / 8 - 4 GB) / 327,680 B per token
POOL_8B = 404_286        # 0.9 x 80 GB - weights - 4 GB, over 131,072 B per token
POOL_70B_KV8 = 2_471_902     # the same pools with FP8 KV: 163,840 and 65,536 B per token
POOL_8B_KV8 = 808_573


def _keys(out, keys) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {sorted(keys)}")


def _schedule_cases(rng: random.Random) -> list:
    cases = [("vllm-server-default-1024x4", 8192, [4] * 1024),
             ("fits-exactly", 20, [4, 4, 4, 4]),
             ("truncates-drafts", 12, [4, 4, 4]),
             ("one-token-left", 11, [4, 4, 4]),
             ("budget-spent-before-queue", 7, [3, 3, 3, 3]),
             ("mixed-draft-lengths", 16, [0, 5, 2, 0, 7, 1]),
             ("no-drafts-plain-decode", 5, [0, 0, 0]),
             ("empty-queue", 100, []),
             ("zero-budget", 0, [2, 2]),
             ("truncated-to-the-real-token", 1, [6]),
             ("lm-default-2048x3", 16384, [3] * 2048 + [5] * 10)]
    for i in range(3):
        n = rng.randint(50, 400)
        lens = [rng.choice([0, 1, 2, 3, 4, 5, 8]) for _ in range(n)]
        cases.append((f"random-{i}", rng.randint(n, 4 * n), lens))
    return cases


def _trace_cases(rng: random.Random) -> list:
    kv70 = 327_680
    cases = [("70b-c1000-g4-a1", (1000, 63, 16, 0, kv70, [(4, 1)])),
             ("lookahead-reserves-blocks", (1000, 63, 16, 4, kv70, [(4, 1)])),
             ("crosses-block-boundary", (30, 2, 16, 0, 2048, [(4, 4), (4, 0), (4, 2)])),
             ("none-accepted", (100, 7, 16, 3, 1024, [(3, 0)] * 6)),
             ("all-accepted", (64, 4, 16, 5, 1024, [(5, 5)] * 5)),
             ("plain-steps-between", (17, 3, 8, 2, 4096, [(2, 1), (0, 0), (0, 0), (2, 0), (0, 0)])),
             ("stale-slots-outlive-a-step", (40, 3, 16, 0, 512, [(8, 0), (2, 2), (1, 0), (8, 8)])),
             ("block-size-1", (5, 5, 1, 1, 100, [(3, 1), (3, 3), (0, 0)])),
             ("spare-blocks-held", (10, 9, 4, 0, 256, [(2, 1), (2, 2)])),
             ("empty-trace", (50, 4, 16, 0, 1024, [])),
             ("float-kv-bytes", (12, 1, 16, 2, 1.5e5, [(2, 0), (2, 1)])),
             # the smallest valid counter (1 computed token) and a 1-byte KV entry (any > 0)
             ("one-computed-token-one-byte", (1, 1, 4, 1, 1, [(3, 1), (2, 2), (0, 0)]))]
    for i in range(3):
        n = rng.randint(20, 60)
        steps = []
        for _ in range(n):
            gl = rng.choice([0, 1, 2, 4, 4, 7])
            steps.append((gl, rng.randint(0, gl)))
        c0 = rng.randint(1, 3000)
        bs = rng.choice([1, 16, 32, 128])
        held = math.ceil(c0 / bs) + rng.randint(0, 2)
        cases.append((f"random-{i}", (c0, held, bs, rng.choice([0, 4, 7]), 131_072, steps)))
    return cases


def _step_cases() -> list:
    cases = []
    for b in (1, 44, 45, 128, 214, 256):
        cases.append((f"s-spec-b{b}-c512-g4", (S_SPEC, S_EAGLE, b, 512, 4, 0.8)))
    for c in (0, 2048, 8192):
        cases.append((f"s-spec-b64-c{c}-g4", (S_SPEC, S_EAGLE, 64, c, 4, 0.8)))
    for gl, a in ((0, 0.8), (1, 0.6), (7, 0.9), (4, 0.0), (4, 1.0), (3, 1)):
        cases.append((f"s-spec-b32-c1024-g{gl}-alpha{a}", (S_SPEC, S_EAGLE, 32, 1024, gl, a)))
    cases.append(("8b-with-1b-drafter-b16", (T8, D1, 16, 512, 4, 0.8)))
    cases.append(("8b-with-1b-drafter-b200", (T8, D1, 200, 512, 4, 0.8)))
    cases.append(("8b-with-1b-drafter-b1024", (T8, D1, 1024, 512, 4, 0.8)))   # drafter compute-bound
    cases.append(("fp8-tp4-b96", (FP8_T, eagle(FP8_T), 96, 3000, 3, 0.7)))
    cases.append(("made-up-gpu-b40", (ODD_T, eagle(ODD_T, 0.0003), 40, 700, 5, 0.75)))
    cases.append(("s-spec-fp8-kv-b64-c8192-g4", (S_SPEC_KV8, eagle(S_SPEC_KV8), 64, 8192, 4, 0.8)))
    cases.append(("s-spec-fp8-kv-b16-c32768-g4", (S_SPEC_KV8, eagle(S_SPEC_KV8), 16, 32768, 4, 0.8)))
    cases.append(("8b-1b-drafter-fp8-kv-b16-c16384", (T8_KV8, D1_KV8, 16, 16384, 4, 0.8)))
    cases.append(("toy-verify-gemm-tie-b8", (TOY_T, TOY_D, 8, 0, 1, 0.5)))
    cases.append(("toy-b12", (TOY_T, TOY_D, 12, 0, 1, 0.5)))
    return cases


def _losing_cases() -> list:
    cases = []
    for c in (512, 2048, 8192):
        for gl in (1, 2, 4, 6):
            cases.append((f"s-spec-c{c}-g{gl}", (S_SPEC, S_EAGLE, c, gl, 0.8, POOL_70B)))
    cases.append(("s-spec-c512-g4-alpha0.6", (S_SPEC, S_EAGLE, 512, 4, 0.6, POOL_70B)))
    cases.append(("s-spec-c512-g4-alpha1", (S_SPEC, S_EAGLE, 512, 4, 1.0, POOL_70B)))
    cases.append(("s-spec-alpha0-loses-at-once", (S_SPEC, S_EAGLE, 512, 4, 0.0, POOL_70B)))
    cases.append(("s-spec-g0-never", (S_SPEC, S_EAGLE, 512, 0, 0.8, 200_000)))
    cases.append(("s-spec-small-pool", (S_SPEC, S_EAGLE, 512, 4, 0.8, 100_000)))
    cases.append(("pool-below-one-sequence", (S_SPEC, S_EAGLE, 512, 4, 0.8, 516)))
    cases.append(("pool-exactly-one-sequence", (S_SPEC, S_EAGLE, 0, 4, 0.0, 5)))
    cases.append(("8b-1b-drafter-c512-g4", (T8, D1, 512, 4, 0.8, POOL_8B)))
    cases.append(("8b-1b-drafter-c2048-g4", (T8, D1, 2048, 4, 0.8, POOL_8B)))
    cases.append(("fp8-tp4-c1024-g3", (FP8_T, eagle(FP8_T), 1024, 3, 0.7, 900_000)))
    cases.append(("made-up-gpu-c300-g5", (ODD_T, eagle(ODD_T, 0.0003), 300, 5, 0.75, 2_000_000)))
    cases.append(("toy-exact-tie", (TOY_T, TOY_D, 0, 1, 0.5, 100)))
    cases.append(("empty-pool", (S_SPEC, S_EAGLE, 512, 4, 0.8, 0)))
    # the pool holds 213 sequences of 517 slots (the last 516 spare); the first loss, 214, is
    # one past it, so nothing that fits loses
    cases.append(("first-loss-one-past-the-pool", (S_SPEC, S_EAGLE, 512, 4, 0.8, 213 * 517 + 516)))
    # FP8 KV, BF16 weights (speedup >= 3e-4 away from 1 up to the losing batch); with KV bytes
    # from the weights' dtype they lose at 148, 220, 191, 120 and 47 instead.
    for c, gl, a in ((4096, 6, 0.6), (6144, 4, 0.5), (8192, 8, 0.6)):
        cases.append((f"s-spec-fp8-kv-c{c}-g{gl}-alpha{a}",
                      (S_SPEC_KV8, eagle(S_SPEC_KV8), c, gl, a, POOL_70B_KV8)))
    cases.append(("8b-1b-drafter-fp8-kv-c4096-g4-alpha0.6", (T8_KV8, D1_KV8, 4096, 4, 0.6, POOL_8B_KV8)))
    cases.append(("8b-1b-drafter-fp8-kv-c8192-g8-alpha0.7", (T8_KV8, D1_KV8, 8192, 8, 0.7, POOL_8B_KV8)))
    # Not monotone: loses from 292 (speedup 0.999 there, 1.0003 at 291), wins again from 384 to
    # max_batch 602.
    cases.append(("peak-eagle-c2048-g4-alpha0.7-dips-and-recovers",
                  (PEAK, eagle(PEAK), 2048, 4, 0.7, POOL_70B)))
    # Loses from 294 (1.00008 at 293), wins again from 354 to max_batch 1201.
    cases.append(("peak-eagle-c1024-g4-alpha0.82-dips-and-recovers",
                  (PEAK, eagle(PEAK), 1024, 4, 0.82, POOL_70B)))
    return cases


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"{SLUG}:{g.salt}")

    for name, budget, lens in _schedule_cases(rng):
        with g.case(f"schedule-{name}"):
            out = g.call("schedule_running", budget, lens)
            exp = ref.schedule_running(budget, lens)
            _keys(out, exp)
            for k in ("scheduled_tokens", "scheduled_drafts", "tokens_used", "budget_left"):
                expect_equal(out[k], exp[k], name=f"[{k!r}]")

    for name, args in _trace_cases(rng):
        with g.case(f"rollback-{name}"):
            out = g.call("rollback_trace", *args)
            exp = ref.rollback_trace(*args)
            if not isinstance(out, (list, tuple)) or len(out) != len(exp):
                fail(f"expected a list of {len(exp)} dicts, one per step")
            for i, (o, e) in enumerate(zip(out, exp)):
                _keys(o, e)
                for k in ("num_computed_tokens", "tokens_emitted", "num_rejected", "blocks_held",
                          "stale_slots"):
                    expect_equal(o[k], e[k], name=f"step {i} [{k!r}]")
                expect_close(o["wasted_kv_bytes"], e["wasted_kv_bytes"],
                             name=f"step {i} ['wasted_kv_bytes']", rtol=RTOL)

    for name, args in _step_cases():
        with g.case(f"step-{name}"):
            out = g.call("spec_step", *args)
            exp = ref.spec_step(*args)
            _keys(out, exp)
            for k in ("plain_gemm_bound", "verify_gemm_bound"):
                expect_equal(out[k], exp[k], name=f"[{k!r}]")
            for k in ("plain_s", "verify_s", "draft_s", "spec_s", "speedup"):
                expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)

    for name, args in _losing_cases():
        with g.case(f"losing-{name}"):
            out = g.call("losing_batch", *args)
            exp = ref.losing_batch(*args)
            _keys(out, exp)
            expect_equal(out["max_batch"], exp["max_batch"], name="['max_batch']")
            if exp["losing_batch"] is None:
                if out["losing_batch"] is not None:
                    fail(f"['losing_batch']: got {out['losing_batch']!r}, expected None "
                         "(no batch that fits the KV pool loses)")
            else:
                expect_equal(out["losing_batch"], exp["losing_batch"], name="['losing_batch']")

    kv = 131_072
    checks = [
        ("schedule-negative-budget", "schedule_running", (-1, [1])),
        ("schedule-negative-draft-length", "schedule_running", (10, [2, -1])),
        ("schedule-draft-lengths-not-a-list", "schedule_running", (10, 4)),
        ("rollback-accepted-above-drafts", "rollback_trace", (100, 7, 16, 0, kv, [(2, 3)])),
        ("rollback-negative-accepted", "rollback_trace", (100, 7, 16, 0, kv, [(2, -1)])),
        ("rollback-blocks-too-few", "rollback_trace", (100, 6, 16, 0, kv, [(2, 1)])),
        ("rollback-zero-block-size", "rollback_trace", (100, 7, 0, 0, kv, [(2, 1)])),
        ("rollback-zero-computed", "rollback_trace", (0, 7, 16, 0, kv, [(2, 1)])),
        ("rollback-kv-bytes-zero", "rollback_trace", (100, 7, 16, 0, 0, [(2, 1)])),
        ("rollback-float-drafts", "rollback_trace", (100, 7, 16, 0, kv, [(2.0, 1)])),
        ("rollback-step-not-a-pair", "rollback_trace", (100, 7, 16, 0, kv, [(2, 1), 3])),
        ("step-zero-batch", "spec_step", (S_SPEC, S_EAGLE, 0, 512, 4, 0.8)),
        ("step-alpha-above-one", "spec_step", (S_SPEC, S_EAGLE, 8, 512, 4, 1.2)),
        ("step-negative-context", "spec_step", (S_SPEC, S_EAGLE, 8, -1, 4, 0.8)),
        ("losing-negative-draft-length", "losing_batch", (S_SPEC, S_EAGLE, 512, -1, 0.8, POOL_70B)),
        ("losing-alpha-nan", "losing_batch", (S_SPEC, S_EAGLE, 512, 4, math.nan, POOL_70B)),
        ("losing-negative-pool", "losing_batch", (S_SPEC, S_EAGLE, 512, 4, 0.8, -5)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
