"""Hidden cases for ttft-tpot-admission: the largest chunk under a TPOT target (the S-serve
table, other models, GPUs, TP degrees and dtypes, ragged and empty decode batches, a target
exactly equal to a step time with and without the logit row or only in the list's summation
order, a target that fits exactly one token, a saturated batch), prefill finish
times (single prompts, mixed queues, a prompt that stalls as its prefix grows), and admission
decisions with their remedies (each decision kind, a target exactly equal to the projection,
routing where fewer queued tokens is the slower replica, ties, salted queues, a too-long prompt
behind a queue, TPOT exactly at the decode-only step, a replica with no decoders whose fixed
overhead exceeds TPOT, another replica projected exactly at the TTFT target, one-token contexts, queues and prompt); then the input
checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
S_SERVE = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.40, mbu=0.80, t_fixed_s=0.003)
S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H200_SXM, 1, mfu=0.5, mbu=0.85, t_fixed_s=0.002)
MID = ModelConfig(name="mid-13b", n_layers=40, hidden_size=5120, n_heads=40, n_kv_heads=4,
                  head_dim=128, ffn_size=13824, vocab_size=100352)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", hbm_bytes_per_s=2.5e12,
                              bf16_dense_flops=600e12, fp8_dense_flops=1200e12)
S_MID_FP8 = StepModel(MID, ODD_GPU, 2, dtype=DType.FP8, kv_dtype=DType.BF16, mfu=0.55, mbu=0.7,
                      t_fixed_s=0.0015)
S_MID_KV8 = StepModel(MID, specs.B200, 4, dtype=DType.BF16, kv_dtype=DType.FP8, mfu=0.45, mbu=0.75,
                      t_fixed_s=0.0025)
D64 = [2048] * 64
# A power-of-two toy: BW = 2^36 B/s, F = 2^46 FLOP/s, t_fixed = 2^-9 s, integer counts, so every
# step time and every sum of them is a dyadic rational held exactly in float64: a boundary set
# from it is the same float whatever order a submission adds the terms in.
TOY = ModelConfig(name="toy-pow2", n_layers=8, hidden_size=1024, n_heads=8, n_kv_heads=2, head_dim=128,
                  ffn_size=4096, vocab_size=32768)
TOY_GPU = dataclasses.replace(specs.H100_SXM, name="toy-pow2-gpu", hbm_bytes_per_s=float(2 ** 36),
                              bf16_dense_flops=float(2 ** 46), fp8_dense_flops=float(2 ** 47))
S_TOY = StepModel(TOY, TOY_GPU, 1, t_fixed_s=2.0 ** -9)
S_TOY_SLOW_FIXED = StepModel(TOY, TOY_GPU, 1, t_fixed_s=2.0 ** -4)
ADMIT_KEYS = ("decision", "projected_ttft_s", "remedy", "replica", "retry_after_s")


def _ragged(seed: int, n: int, hi: int) -> list:
    rng = random.Random(f"ttft-tpot-admission:ragged:{seed}")
    return [rng.randint(1, hi) for _ in range(n)]


def _check_int(out, exp, name) -> None:
    if isinstance(out, bool) or not isinstance(out, int):
        fail(f"{name}: expected an int, got {type(out).__name__}")
    if out != exp:
        fail(f"{name}: got {out}, {'too large' if out > exp else 'too small'} (not the largest chunk "
             "whose step meets the TPOT target)")


def _check_times(out, exp, name) -> None:
    if not isinstance(out, list) or len(out) != len(exp):
        fail(f"{name}: expected a list of {len(exp)} finish times")
    for i, (o, e) in enumerate(zip(out, exp)):
        expect_close(o, e, name=f"{name}[{i}]", rtol=RTOL)


def _check_admit(out, exp, name) -> None:
    if not isinstance(out, dict) or set(out) != set(ADMIT_KEYS):
        fail(f"{name}: expected a dict with exactly the keys {list(ADMIT_KEYS)}")
    expect_equal(out["decision"], exp["decision"], name=f"{name}['decision']")
    expect_close(out["projected_ttft_s"], exp["projected_ttft_s"], name=f"{name}['projected_ttft_s']", rtol=RTOL)
    expect_equal(out["remedy"], exp["remedy"], name=f"{name}['remedy']")
    if exp["replica"] is None:
        if out["replica"] is not None:
            fail(f"{name}['replica']: expected None, got {out['replica']!r}")
    else:
        expect_equal(out["replica"], exp["replica"], name=f"{name}['replica']")
    if exp["retry_after_s"] is None:
        if out["retry_after_s"] is not None:
            fail(f"{name}['retry_after_s']: expected None, got {out['retry_after_s']!r}")
    else:
        expect_close(out["retry_after_s"], exp["retry_after_s"], name=f"{name}['retry_after_s']", rtol=RTOL)


def grade(g: Grading) -> None:
    ref = g.reference()
    # ---- max_chunk -------------------------------------------------------------------------
    chunk_cases = []
    for tau in (0.02, 0.05, 0.1):
        chunk_cases.append((f"chunk-s-serve-64-decoders-tpot-{int(tau * 1e3)}ms", S_SERVE, tau, D64,
                            (0, 8192, 32768, 100_000)))
    chunk_cases += [
        ("chunk-8b-h200-ragged-decoders", S_8B, 0.03, _ragged(1, 48, 30_000), (0, 5000, 50_000)),
        ("chunk-fp8-weights-made-up-gpu-tp2", S_MID_FP8, 0.04, _ragged(2, 20, 8000), (0, 1000, 20_000)),
        ("chunk-fp8-kv-b200-tp4", S_MID_KV8, 0.025, [16_384] * 32, (0, 65_536)),
        ("chunk-no-decoders", S_SERVE, 0.05, [], (0, 10_000)),
        ("chunk-generous-tpot-2s", S_8B, 2.0, [1024] * 8, (0, 100_000)),
        ("chunk-saturated-batch", S_SERVE, 0.011, D64, (0,)),
    ]
    for name, sm, tau, dec, prefixes in chunk_cases:
        with g.case(name):
            for p in prefixes:
                _check_int(g.call("max_chunk", sm, tau, dec, p), ref.max_chunk(sm, tau, dec, p),
                           f"max_chunk(prefix={p})")
    # A target exactly equal to a step time: with the logit row (that chunk fits), without it
    # (it does not: the chunk's row always reserves its logit row).
    dec = _ragged(3, 40, 4096)
    exact_with = S_SERVE.step_s([(1, c, 1) for c in dec] + [(700, 3000, 1)])
    exact_without = S_SERVE.step_s([(1, c, 1) for c in dec] + [(700, 3000, 0)])
    # These decoders' attention terms summed in another order than the list's (reversed, fsum)
    # give a step 1 ulp above the target: the statement fixes the order, this boundary checks it.
    dec_order = _ragged(168, 40, 4096)
    exact_order = S_SERVE.step_s([(1, c, 1) for c in dec_order] + [(700, 3000, 1)])
    for name, tau, d in (("chunk-tpot-equals-step-time", exact_with, dec),
                         ("chunk-tpot-equals-step-without-logit-row", exact_without, dec),
                         ("chunk-tpot-equals-step-summed-in-list-order", exact_order, dec_order)):
        with g.case(name):
            _check_int(g.call("max_chunk", S_SERVE, tau, d, 3000), ref.max_chunk(S_SERVE, tau, d, 3000),
                       "max_chunk(prefix=3000)")
    # A target that fits a one-token chunk exactly and no more (power-of-two toy: exact): 1.
    with g.case("chunk-pow2-tpot-fits-exactly-one-token"):
        d_toy = [2048] * 64
        tau = S_TOY.step_s([(1, c, 1) for c in d_toy] + [(1, 0, 1)])
        _check_int(g.call("max_chunk", S_TOY, tau, d_toy, 0), ref.max_chunk(S_TOY, tau, d_toy, 0), "max_chunk(prefix=0)")
    # ---- prefill_finish_times --------------------------------------------------------------
    finish_cases = [
        ("finish-s-serve-single-prompts", S_SERVE, 0.05, D64, [[1024], [8192], [32768]]),
        ("finish-s-serve-thirteen-2k-prompts", S_SERVE, 0.05, D64, [[2048] * 13]),
        ("finish-mixed-queue-8b", S_8B, 0.03, _ragged(4, 32, 16_000), [[32_768, 2048, 2048, 100, 1]]),
        ("finish-fp8-kv-made-up", S_MID_KV8, 0.02, [8192] * 16, [[5000, 40_000, 700]]),
        ("finish-fp8-weights-tight-tpot", S_MID_FP8, 0.012, _ragged(5, 10, 2000), [[3000, 300]]),
        ("finish-empty-queue", S_8B, 0.05, [100], [[]]),
        ("finish-prompt-stalls-as-prefix-grows", S_SERVE, 0.01005, [2048] * 16, [[2000, 20_000, 10]]),
        ("finish-saturated-batch", S_SERVE, 0.011, D64, [[10, 20]]),
    ]
    for name, sm, tau, dec, queues in finish_cases:
        with g.case(name):
            for q in queues:
                _check_times(g.call("prefill_finish_times", sm, tau, dec, q),
                             ref.prefill_finish_times(sm, tau, dec, q), f"prefill_finish_times({len(q)} prompts)")
    # ---- admit -----------------------------------------------------------------------------
    # Other replicas for a 2K prompt: A has the fewest queued tokens (and requests) but 200
    # decoders at 8K, so small chunks (1.04 s); B has 16 light decoders and 12K tokens queued
    # (0.69 s); C no decoders and 20K queued (1.06 s). The fastest is B.
    route = [[[8192] * 200, [2048] * 2], [[2048] * 16, [2048] * 6], [[], [2048] * 10]]
    admit_cases = [
        ("admit-empty-queue", S_SERVE, 0.05, 1.5, D64, [], 2048, []),
        ("admit-ten-2k-ahead", S_SERVE, 0.05, 1.5, D64, [2048] * 10, 2048, []),
        ("admit-thirty-2k-ahead-no-other-replica", S_SERVE, 0.05, 1.5, D64, [2048] * 30, 2048, []),
        ("admit-one-32k-ahead", S_SERVE, 0.05, 1.5, D64, [32768], 2048, []),
        ("admit-40k-prompt-empty-queue", S_SERVE, 0.05, 1.5, D64, [], 40_000, []),
        ("admit-backlog-routes-to-fastest-replica", S_SERVE, 0.05, 1.5, D64, [2048] * 30, 2048, route),
        ("admit-backlog-no-replica-fast-enough", S_SERVE, 0.05, 1.5, D64, [2048] * 30, 2048,
         [[[2048] * 64, [2048] * 40]]),
        ("admit-saturated-routes", S_SERVE, 0.011, 1.5, D64, [], 1024, [[[2048] * 16, []]]),
        ("admit-saturated-rejects", S_SERVE, 0.011, 1.5, D64, [], 1024, []),
        ("admit-too-long-routes-to-idle-replica", S_SERVE, 0.05, 1.85, [4096] * 32, [], 30_000, [[[], []]]),
        ("admit-too-long-prefill-pool", S_SERVE, 0.05, 1.85, [4096] * 32, [], 30_000, [[[8192] * 128, []]]),
        ("admit-tied-replicas-lowest-index", S_8B, 0.03, 0.5, _ragged(6, 40, 8000), [4096] * 6, 3000,
         [[[1000] * 50, [4096] * 6], [[500] * 8, [2000]], [[500] * 8, [2000]]]),
        ("admit-stalling-prompt", S_SERVE, 0.01005, 30.0, [2048] * 16, [], 20_000, []),
        # Too long even alone, behind a non-empty queue: still too_long, not a backlog.
        ("admit-too-long-behind-queue", S_SERVE, 0.05, 1.5, D64, [2048], 40_000, []),
        ("admit-too-long-behind-queue-no-replica-fast-enough", S_SERVE, 0.05, 1.5, D64, [2048] * 5, 40_000,
         [[[8192] * 128, []]]),
        # No decoders, but the fixed overhead alone exceeds the TPOT target: saturated.
        ("admit-no-decoders-fixed-overhead-over-tpot", S_TOY_SLOW_FIXED, 0.05, 1.0, [], [], 1000, [[[], [10]]]),
    ]
    # TPOT exactly the decode-only step: a one-token chunk no longer fits, so saturated (S-serve
    # and the power-of-two toy); TPOT exactly the step with a one-token chunk: it fits, not saturated.
    d_toy = [2048] * 64
    decode_only = S_SERVE.step_s([(1, c, 1) for c in D64])
    toy_decode_only = S_TOY.step_s([(1, c, 1) for c in d_toy])
    toy_one_token = S_TOY.step_s([(1, c, 1) for c in d_toy] + [(1, 0, 1)])
    admit_cases += [
        ("admit-tpot-equals-decode-only-step", S_SERVE, decode_only, 1.5, D64, [], 1024, []),
        ("admit-pow2-tpot-equals-decode-only-step", S_TOY, toy_decode_only, 1.0, d_toy, [512], 2048, []),
        ("admit-pow2-tpot-fits-one-token-chunk", S_TOY, toy_one_token, 1.0, d_toy, [], 2048, []),
    ]
    # Another replica projected exactly at the TTFT target (power-of-two toy, so exact in any
    # summation order): <= routes there.
    rag = _ragged(7, 37, 6000)
    at_target = ref.prefill_finish_times(S_TOY, 0.04, rag, [3000, 517, 2048])[-1]
    admit_cases.append(("admit-routes-to-replica-exactly-at-ttft", S_TOY, 0.04, at_target, d_toy, [2048] * 4, 2048,
                        [[[4096] * 64, [1000]], [rag, [3000, 517]], [[], [9000] * 3]]))
    # Targets exactly at the projection: admitted (<=); and exactly at the prompt-alone time
    # with a queue ahead: not too_long, a backlog.
    alone = ref.prefill_finish_times(S_8B, 0.03, [3000] * 24, [9000])[-1]
    behind = ref.prefill_finish_times(S_8B, 0.03, [3000] * 24, [4000, 9000])[-1]
    admit_cases += [
        ("admit-ttft-exactly-projected", S_8B, 0.03, behind, [3000] * 24, [4000], 9000, []),
        ("admit-ttft-exactly-prompt-alone", S_8B, 0.03, alone, [3000] * 24, [4000], 9000, []),
    ]
    # The smallest values allowed: one-token contexts, queued prompts and prompt, here and on the
    # other replicas.
    admit_cases.append(("admit-one-token-everything", S_8B, 0.03, 0.05, [1, 1, 4096], [1, 1], 1,
                        [[[1], [1]], [[1, 1], []]]))
    rng = random.Random(f"ttft-tpot-admission:{g.salt}")
    for i in range(3):
        sm = (S_SERVE, S_8B, S_MID_KV8)[i]
        dec = [rng.randint(500, 12_000) for _ in range(rng.randint(8, 48))]
        queue = [rng.choice([512, 2048, 6000, rng.randint(1, 20_000)]) for _ in range(rng.randint(0, 8))]
        others = [[[rng.randint(500, 12_000) for _ in range(rng.randint(0, 48))],
                   [rng.randint(1, 8000) for _ in range(rng.randint(0, 6))]] for _ in range(rng.randint(0, 3))]
        admit_cases.append((f"admit-random-{i}", sm, rng.choice([0.03, 0.05, 0.08]), rng.choice([0.5, 1.0, 2.0]),
                            dec, queue, rng.choice([300, 2048, 8000, 30_000]), others))
    for name, sm, tau, ttft, dec, queue, prompt, others in admit_cases:
        with g.case(name):
            _check_admit(g.call("admit", sm, tau, ttft, dec, queue, prompt, others),
                         ref.admit(sm, tau, ttft, dec, queue, prompt, others), "admit(...)")
    # ---- input checks ----------------------------------------------------------------------
    checks = [
        ("chunk-step-model-not-a-stepmodel", "max_chunk", ({"mfu": 0.4}, 0.05, D64, 0)),
        ("chunk-tpot-zero", "max_chunk", (S_SERVE, 0.0, D64, 0)),
        ("chunk-tpot-negative", "max_chunk", (S_SERVE, -0.05, D64, 0)),
        ("chunk-tpot-nan", "max_chunk", (S_SERVE, math.nan, D64, 0)),
        ("chunk-tpot-infinite", "max_chunk", (S_SERVE, math.inf, D64, 0)),
        ("chunk-decoder-context-zero", "max_chunk", (S_SERVE, 0.05, [2048, 0], 0)),
        ("chunk-decoders-not-a-list", "max_chunk", (S_SERVE, 0.05, 64, 0)),
        ("chunk-prefix-negative", "max_chunk", (S_SERVE, 0.05, D64, -1)),
        ("chunk-prefix-none", "max_chunk", (S_SERVE, 0.05, D64, None)),
        ("finish-prompts-not-a-list", "prefill_finish_times", (S_SERVE, 0.05, D64, 2048)),
        ("finish-prompt-zero", "prefill_finish_times", (S_SERVE, 0.05, D64, [2048, 0])),
        ("finish-prompt-float", "prefill_finish_times", (S_SERVE, 0.05, D64, [2048.0])),
        ("admit-ttft-zero", "admit", (S_SERVE, 0.05, 0.0, D64, [], 2048, [])),
        ("admit-ttft-nan", "admit", (S_SERVE, 0.05, math.nan, D64, [], 2048, [])),
        ("admit-prompt-zero", "admit", (S_SERVE, 0.05, 1.5, D64, [], 0, [])),
        ("admit-queue-entry-zero", "admit", (S_SERVE, 0.05, 1.5, D64, [2048, 0], 2048, [])),
        ("admit-queue-not-a-list", "admit", (S_SERVE, 0.05, 1.5, D64, 2048, 2048, [])),
        ("admit-other-replica-malformed", "admit", (S_SERVE, 0.05, 1.5, D64, [], 2048, [[D64]])),
        ("admit-other-replica-bad-context", "admit", (S_SERVE, 0.05, 1.5, D64, [], 2048, [[[0], []]])),
        ("admit-other-replica-bad-queue", "admit", (S_SERVE, 0.05, 1.5, D64, [], 2048, [[[2048], [0]]])),
        ("admit-others-none", "admit", (S_SERVE, 0.05, 1.5, D64, [], 2048, None)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
