"""Hidden cases for chunked-prefill-damage: the 100K-prompt story (S-serve preset), two long
prompts queued FCFS on an 8B replica, seats (max_num_seqs) that bind, idle gaps, chunks that fit
the budget exactly, an arrival exactly at a step's start, equal arrival times given out of order,
a budget equal to the seats with every seat decoding, one seat with a 1-token budget,
made-up models and GPUs with FP8 weights or KV, and salted random traces; then the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

RTOL, ATOL = 1e-9, 1e-12
REQ_KEYS = ("admitted_s", "first_token_s", "ttft_s", "finish_s", "tokens", "max_gap_s", "mean_gap_s")
STEP_KEYS = ("start_s", "duration_s", "rows")

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


def _check(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != {"steps", "requests"}:
        fail("expected a dict with exactly the keys ['steps', 'requests']")
    steps, esteps = out["steps"], exp["steps"]
    if not isinstance(steps, list):
        fail("['steps'] must be a list")
    for i, (s, e) in enumerate(zip(steps, esteps)):
        if not isinstance(s, dict) or set(s) != set(STEP_KEYS):
            fail(f"['steps'][{i}]: expected a dict with exactly the keys {list(STEP_KEYS)}")
        rows = s["rows"]
        if not isinstance(rows, list) or [list(r) if isinstance(r, (list, tuple)) else r for r in rows] != e["rows"]:
            fail(f"['steps'][{i}]['rows']: not the requests and token counts this step schedules "
                 f"(step starting near t={e['start_s']:.6g} s; {len(e['rows'])} rows expected)")
        expect_close(s["start_s"], e["start_s"], name=f"['steps'][{i}]['start_s']", rtol=RTOL, atol=ATOL)
        expect_close(s["duration_s"], e["duration_s"], name=f"['steps'][{i}]['duration_s']", rtol=RTOL, atol=ATOL)
    if len(steps) != len(esteps):
        fail(f"['steps']: got {len(steps)} steps, expected {len(esteps)}")
    reqs, ereqs = out["requests"], exp["requests"]
    if not isinstance(reqs, list) or len(reqs) != len(ereqs):
        fail(f"['requests']: expected a list of {len(ereqs)} dicts (warm requests, then the trace)")
    for i, (r, e) in enumerate(zip(reqs, ereqs)):
        if not isinstance(r, dict) or set(r) != set(REQ_KEYS):
            fail(f"['requests'][{i}]: expected a dict with exactly the keys {list(REQ_KEYS)}")
        for k in REQ_KEYS:
            name = f"['requests'][{i}][{k!r}]"
            if e[k] is None:
                if r[k] is not None:
                    fail(f"{name}: expected None (undefined for this request), got {r[k]!r}")
            elif k == "tokens":
                expect_equal(r[k], e[k], name=name)
            else:
                if r[k] is None:
                    fail(f"{name}: got None, expected a number")
                expect_close(r[k], e[k], name=name, rtol=RTOL, atol=ATOL)


def _random_case(rng: random.Random, i: int):
    sm = [S_SERVE, S_8B, S_MID_FP8, S_MID_KV8][i % 4]
    M = rng.choice([1024, 2048, 4096, 8192])
    seqs = rng.choice([8, 16, 64, M])
    seqs = min(seqs, M)
    nwarm = rng.randint(0, min(seqs, 12))
    warm = [[rng.randint(1, 20_000), rng.randint(1, 40)] for _ in range(nwarm)]
    trace, t = [], 0.0
    for _ in range(rng.randint(4, 16)):
        t += rng.choice([0.0, rng.random() * 0.2, rng.random() * 2.0])
        prompt = rng.choice([rng.randint(1, 600), rng.randint(1, 6000), rng.randint(10_000, 40_000)])
        trace.append([round(t, 4), prompt, rng.randint(1, 40)])
    rng.shuffle(trace)
    return sm, warm, trace, M, seqs


def grade(g: Grading) -> None:
    ref = g.reference()
    cases = []
    # The question's story: 32 decoders at 1,024 tokens, a 100,000-token prompt, a probe 1 ms later.
    cases.append(("story-100k-prompt-among-32-decoders", S_SERVE, [[1024, 120]] * 32,
                  [[0.0, 100_000, 20], [0.001, 1024, 20]], 8192, 1024))
    cases.append(("story-default-budget-16384", S_SERVE, [[1024, 60]] * 32 + [[4096, 80]] * 8,
                  [[0.0, 100_000, 10], [0.001, 1024, 10], [0.5, 2048, 5]], 16384, 1024))
    # Two long prompts queued: the second waits for the first (one partial prefill at a time).
    cases.append(("two-long-prompts-fcfs-8b", S_8B,
                  [[512 + 997 * k, 30 + 7 * k] for k in range(12)],
                  [[0.5, 512, 6], [0.06, 30_000, 5], [0.05, 40_000, 8], [0.07, 512, 9]], 4096, 64))
    # Seats bind: max_num_seqs = 5 with 3 warm decoders.
    cases.append(("max-num-seqs-binds", S_MID_FP8, [[300, 12], [1200, 4], [77, 20]],
                  [[0.0, 100, 5], [0.0, 3000, 7], [0.004, 2500, 3], [0.01, 40, 30], [0.01, 800, 2],
                   [0.02, 1900, 11], [0.02, 5, 1], [0.03, 2047, 4]], 2048, 5))
    # Idle engine: arrivals far apart, the step clock jumps to each arrival.
    cases.append(("idle-gaps-no-warm", S_SERVE, [],
                  [[1.0, 3000, 3], [6.0, 20_000, 4], [6.0, 1, 1], [30.0, 8192, 1]], 8192, 256))
    # Chunks fitting the budget exactly: budget 1028 - 4 decoders = 1024 per chunk, 4096 = 4 chunks.
    cases.append(("chunks-fit-budget-exactly", S_MID_KV8, [[500, 30]] * 4,
                  [[0.0, 4096, 3], [0.0, 1020, 2], [0.2, 1024, 1]], 1028, 8))
    cases.append(("prompt-equals-budget-no-warm", S_8B, [], [[0.0, 2048, 1], [0.0, 2048, 2], [0.001, 2049, 2]],
                  2048, 4))
    # Equal arrival times given out of trace order (FCFS by (arrival, trace index)).
    cases.append(("equal-arrivals-trace-order", S_8B, [[100, 5]] * 3,
                  [[0.25, 900, 3], [0.0, 700, 4], [0.0, 800, 4], [0.0, 600, 2], [0.25, 10, 2]], 1200, 6))
    cases.append(("long-contexts-fp8-kv", S_MID_KV8, [[16_384 + 4096 * k, 25] for k in range(20)],
                  [[0.0, 60_000, 5], [0.002, 700, 6], [0.9, 3000, 4]], 8192, 128))
    # An arrival exactly at the start of a decode-only step (arrival <= step start: it joins that step).
    base = (S_SERVE, [[2048, 60]] * 8, [[0.0, 30_000, 10]], 8192, 1024)
    steps = ref.simulate_engine(*base)["steps"]
    k = next(i for i, s in enumerate(steps) if sum(n for _, n in s["rows"]) == 9 and i > 4)
    tie = steps[k]["start_s"]
    cases.append(("arrival-exactly-at-step-start", base[0], base[1],
                  base[2] + [[tie, 700, 5], [0.0, 300, 2]], base[3], base[4]))
    # Budget == seats with every seat busy decoding: the last running decoder gets the last token of
    # the budget, and once a seat frees, a 1-token budget left over still admits (a 1-token chunk).
    cases.append(("budget-equals-seats-all-decoding", S_MID_FP8, [[1, 2], [40, 5], [7, 1], [9, 3]],
                  [[0.0, 3, 2], [0.0, 1, 1]], 4, 4))
    # The smallest engine: one seat, one token per step (a 3-token prompt takes 3 steps).
    cases.append(("one-seat-one-token-budget", S_8B, [[1, 2]], [[0.0, 3, 2], [0.0, 1, 1]], 1, 1))
    rng = random.Random(f"chunked-prefill-damage:{g.salt}")
    for i in range(4):
        cases.append((f"random-trace-{i}",) + _random_case(rng, i))

    for name, sm, warm, trace, M, seqs in cases:
        with g.case(name):
            out = g.call("simulate_engine", sm, warm, trace, M, seqs)
            _check(out, ref.simulate_engine(sm, warm, trace, M, seqs))

    ok_warm, ok_trace = [[100, 3]], [[0.0, 50, 2]]
    checks = [
        ("step-model-not-a-stepmodel", ({"mfu": 0.4}, ok_warm, ok_trace, 64, 8)),
        ("budget-below-seats", (S_8B, ok_warm, ok_trace, 64, 128)),
        ("more-warm-than-seats", (S_8B, [[100, 3]] * 3, ok_trace, 64, 2)),
        ("warm-context-zero", (S_8B, [[0, 3]], ok_trace, 64, 8)),
        ("warm-remaining-zero", (S_8B, [[100, 0]], ok_trace, 64, 8)),
        ("warm-entry-not-a-pair", (S_8B, [[100, 3, 1]], ok_trace, 64, 8)),
        ("warm-none", (S_8B, None, ok_trace, 64, 8)),
        ("warm-entry-an-int", (S_8B, [100], ok_trace, 64, 8)),
        ("trace-entry-an-int", (S_8B, ok_warm, [50], 64, 8)),
        ("budget-not-int", (S_8B, ok_warm, ok_trace, 64.0, 8)),
        ("seats-not-int", (S_8B, ok_warm, ok_trace, 64, 8.0)),
        # nothing to run, so a simulator without the check returns instead of looping
        ("seats-zero-nothing-to-run", (S_8B, [], [], 64, 0)),
        ("budget-and-seats-zero-nothing-to-run", (S_8B, [], [], 0, 0)),
        ("negative-arrival", (S_8B, ok_warm, [[-0.5, 50, 2]], 64, 8)),
        ("infinite-arrival", (S_8B, ok_warm, [[math.inf, 50, 2]], 64, 8)),
        ("prompt-zero", (S_8B, ok_warm, [[0.0, 0, 2]], 64, 8)),
        ("output-zero", (S_8B, ok_warm, [[0.0, 50, 0]], 64, 8)),
        ("prompt-not-int", (S_8B, ok_warm, [[0.0, 50.0, 2]], 64, 8)),
        ("trace-entry-not-a-triple", (S_8B, ok_warm, [[0.0, 50]], 64, 8)),
        ("arrival-bool", (S_8B, ok_warm, [[True, 50, 2]], 64, 8)),
        ("output-tokens-bool", (S_8B, ok_warm, [[0.0, 50, True]], 64, 8)),
        # Last: a simulator that skips these checks loops forever (no seat or no budget for the
        # waiting request; a NaN arrival never comes), and the dead child would take every later
        # check with it.
        ("seats-zero", (S_8B, ok_warm, ok_trace, 64, 0)),
        ("nan-arrival", (S_8B, ok_warm, [[math.nan, 50, 2]], 64, 8)),
        ("budget-zero", (S_8B, ok_warm, ok_trace, 0, 1)),
    ]
    for name, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "simulate_engine", *args)
