"""Hidden cases for voice-latency-budget.

Budgets: the 300 ms story, the public endpointing defaults (500 and 800 ms: a negative share),
a slow TTS, an LLM share that is the largest line, each tie of the stated order (including ties
where alphabetical order or tts/playout swapped would pick another line), random float lines.
First clauses: the S-8B preset, 70B TP8 on H100, 8B with FP8 weights on an H200, a made-up model
on a made-up GPU, long prefills that turn compute-bound, a one-token clause, a context of 0, and a toy model of
powers of two. Tiers: the worked sizing, no reserve, a share that no batch meets, a share so wide
that max_num_seqs binds (a power of two or not), a TP8 tier (GPUs per replica), exact ties at the share and at the
replica ceiling, a ratio a relative 3e-10 above an integer (inside the band: no extra replica), ratios just above an integer (relative 1e-8 and 1e-7, far outside the stated
1e-9). Then the input checks.
"""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
LINE_KEYS = ("capture", "network_rtt", "endpoint", "asr", "tts", "playout")
CLAUSE_KEYS = ("ttft_ms", "tpot_ms", "first_clause_ms")
TIER_KEYS = ("b_max", "tpot_ms", "first_clause_ms", "concurrent_turns", "replicas", "gpus")

TOY = ModelConfig(name="toy", n_layers=2, hidden_size=8, n_heads=4, n_kv_heads=2, head_dim=2,
                  ffn_size=16, vocab_size=32)
TOY_GPU = dataclasses.replace(specs.H100_SXM, name="toy-gpu", hbm_bytes_per_s=2.0**20,
                              bf16_dense_flops=2.0**24, fp8_dense_flops=2.0**25)
ODD = ModelConfig(name="odd-gqa", n_layers=36, hidden_size=3584, n_heads=28, n_kv_heads=4,
                  head_dim=128, ffn_size=18944, vocab_size=152064)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", hbm_bytes_per_s=2.2e12,
                              bf16_dense_flops=450e12, fp8_dense_flops=900e12)

S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
MODELS = {
    "s-8b-h100": S_8B,
    "70b-tp8-h100": StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.5, mbu=0.8,
                              t_fixed_s=0.003),
    "8b-fp8-h200": StepModel(specs.LLAMA_3_1_8B, specs.H200_SXM, 1, dtype=DType.FP8,
                             kv_dtype=DType.FP8, mfu=0.45, mbu=0.85, t_fixed_s=0.0015),
    "odd-gqa-tp2-madeup": StepModel(ODD, ODD_GPU, 2, mfu=0.55, mbu=0.75, t_fixed_s=0.0025),
}
TOY_SM = StepModel(TOY, TOY_GPU, t_fixed_s=2.0**-8)
LINES = {"capture": 20, "network_rtt": 30, "endpoint": 100, "asr": 15, "tts": 30, "playout": 20}
TURN = {"ctx": 2048, "new_tokens": 64, "cached_tokens": 2048, "clause_tokens": 8}
TRAFFIC = {"calls": 10_000, "turn_interval_s": 8.0, "tokens_per_turn": 60, "rho": 0.7}


def _check(out, exp, keys, exact=()) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    for k in keys:
        if k in exact or exp[k] is None:
            expect_equal(out[k], exp[k], name=f"[{k!r}]")
        else:
            expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"voice-latency-budget:{g.salt}")

    # 1. The budget lines.
    budgets = [
        ("lines-300ms-story", 300, LINES),
        ("lines-livekit-default-endpoint-500ms", 300, dict(LINES, endpoint=500)),
        ("lines-800ms-endpoint", 300, dict(LINES, endpoint=800)),
        ("lines-slow-tts", 500, dict(LINES, tts=180)),
        ("lines-llm-share-largest", 300, dict(LINES, endpoint=40, capture=10)),
        ("lines-tie-endpoint-llm", 300, dict(LINES, endpoint=92.5)),         # share 92.5 too
        ("lines-tie-llm-tts", 300, dict(LINES, endpoint=56, tts=79.5)),     # share 79.5
        ("lines-tie-asr-llm", 250, dict(LINES, endpoint=30, asr=60)),       # share 60
        ("lines-tie-capture-asr-llm", 290, dict(LINES, endpoint=30, capture=60, asr=60)),  # 60
        ("lines-tie-capture-asr", 300, dict(LINES, endpoint=50, capture=70, asr=70)),  # share 30
        ("lines-tie-tts-playout", 300, dict(LINES, endpoint=50, tts=70, playout=70)),  # share 45
        ("lines-no-room-at-all", 215, LINES),
        ("lines-all-zero", 120.5, dict.fromkeys(LINE_KEYS, 0)),
        ("lines-budget-half-ms", 0.5, dict.fromkeys(LINE_KEYS, 0)),        # any budget > 0 is valid
    ]
    for j in range(4):
        r = random.Random(500 + j)
        budgets.append((f"lines-random-{j}", r.choice([250, 300, 400.0, 800.5]),
                        {k: round(r.uniform(0, 160), 3) for k in LINE_KEYS}))
    rng.shuffle(budgets)
    for name, budget, lines in budgets:
        with g.case(name):
            _check(g.call("budget_lines", budget, lines), ref.budget_lines(budget, lines),
                   ("llm_share_ms", "largest_line", "largest_is_model"),
                   exact=("largest_line", "largest_is_model"))

    # 2. The first clause.
    turns = [TURN, {"ctx": 4096, "new_tokens": 2000, "cached_tokens": 0, "clause_tokens": 12},
             {"ctx": 512, "new_tokens": 32, "cached_tokens": 6000, "clause_tokens": 1},
             {"ctx": 16384, "new_tokens": 128, "cached_tokens": 16384, "clause_tokens": 5}]
    clauses = []
    for name, sm in MODELS.items():
        for i, turn in enumerate(turns):
            for b in (1, 16, 64) if i == 0 else (rng.choice((1, 7)), 40):
                clauses.append((f"clause-{name}-turn{i}-b{b}", sm, b, turn))
    clauses.append(("clause-toy-b3", TOY_SM, 3, {"ctx": 5, "new_tokens": 6, "cached_tokens": 9,
                                                  "clause_tokens": 4}))
    clauses.append(("clause-toy-b3-ctx0", TOY_SM, 3, {"ctx": 0, "new_tokens": 6, "cached_tokens": 0,
                                                       "clause_tokens": 3}))
    clauses.append(("clause-toy-b2-one-new-token", TOY_SM, 2, {"ctx": 3, "new_tokens": 1,
                                                                "cached_tokens": 4, "clause_tokens": 2}))
    rng.shuffle(clauses)
    for name, sm, b, turn in clauses:
        with g.case(name):
            _check(g.call("first_clause", sm, b, turn), ref.first_clause(sm, b, turn), CLAUSE_KEYS)

    # 3. The tier.
    tiers = [
        ("tier-s-8b-story", S_8B, 85.0, 10.0, TURN, 256, TRAFFIC),
        ("tier-s-8b-no-reserve", S_8B, 85.0, 0.0, TURN, 256, TRAFFIC),
        ("tier-s-8b-share-too-small", S_8B, 60.0, 0.0, TURN, 256, TRAFFIC),
        ("tier-s-8b-negative-share", S_8B, -315.0, 10.0, TURN, 256, TRAFFIC),
        ("tier-s-8b-wide-share-max-num-seqs-binds", S_8B, 400.0, 10.0, TURN, 128, TRAFFIC),
        ("tier-s-8b-wide-share-max-num-seqs-100-binds", S_8B, 400.0, 10.0, TURN, 100, TRAFFIC),
        ("tier-70b-tp8-no-reserve", MODELS["70b-tp8-h100"], 85.0, 0.0, TURN, 256, TRAFFIC),
        ("tier-70b-tp8-reserve-infeasible", MODELS["70b-tp8-h100"], 85.0, 10.0, TURN, 256, TRAFFIC),
        ("tier-8b-fp8-h200", MODELS["8b-fp8-h200"], 120.0, 15.0, turns[3], 512,
         {"calls": 2500, "turn_interval_s": 6.5, "tokens_per_turn": 90, "rho": 0.8}),
        ("tier-odd-gqa-tp2", MODELS["odd-gqa-tp2-madeup"], 400.0, 5.0, turns[1], 1024,
         {"calls": 40_000.0, "turn_interval_s": 10, "tokens_per_turn": 45, "rho": 1.0}),
        ("tier-no-calls", S_8B, 85.0, 10.0, TURN, 256, dict(TRAFFIC, calls=0)),
    ]
    # exact ties on the toy model: the first clause plus the reserve equal to the share fits
    toy_turn = {"ctx": 7, "new_tokens": 8, "cached_tokens": 24, "clause_tokens": 6}
    for b in (1, 5, 12):
        share = ref.first_clause(TOY_SM, b, toy_turn)["first_clause_ms"] + 250.0
        tiers.append((f"tier-toy-tie-at-share-b{b}", TOY_SM, share, 250.0, toy_turn, 64,
                      {"calls": 100, "turn_interval_s": 4.0, "tokens_per_turn": 8, "rho": 0.5}))
    # every traffic and max_num_seqs value at the bottom of its range is valid
    tiers.append(("tier-toy-smallest-valid-values", TOY_SM,
                  ref.first_clause(TOY_SM, 1, toy_turn)["first_clause_ms"] + 1000.0, 0.0, toy_turn, 1,
                  {"calls": 100, "turn_interval_s": 0.5, "tokens_per_turn": 1, "rho": 0.5}))
    # the ratio concurrent / (b_max * rho) lands on an integer: no extra replica
    r = ref.size_llm_tier(S_8B, 85.0, 10.0, TURN, 256, TRAFFIC)
    tpot_s = r["tpot_ms"] / 1e3
    for n in (12, 31):
        calls = n * 17 * 0.5 * 2.0 / (60 * tpot_s)
        tiers.append((f"tier-s-8b-ceiling-on-integer-{n}", S_8B, 85.0, 10.0, TURN, 256,
                      {"calls": calls, "turn_interval_s": 2.0, "tokens_per_turn": 60, "rho": 0.5}))
    # ... and above it by a relative 3e-10 (inside the stated 1e-9, but 31 * 3e-10 > 1e-9 absolute)
    calls = 31 * (1 + 3e-10) * 17 * 0.5 * 2.0 / (60 * tpot_s)
    tiers.append(("tier-s-8b-ceiling-within-relative-1e-9-of-31", S_8B, 85.0, 10.0, TURN, 256,
                  {"calls": calls, "turn_interval_s": 2.0, "tokens_per_turn": 60, "rho": 0.5}))
    # ... and below it by a relative 3e-10: counts as 31 too (rounded, not truncated, to it)
    calls = 31 * (1 - 3e-10) * 17 * 0.5 * 2.0 / (60 * tpot_s)
    tiers.append(("tier-s-8b-ceiling-within-relative-1e-9-below-31", S_8B, 85.0, 10.0, TURN, 256,
                  {"calls": calls, "turn_interval_s": 2.0, "tokens_per_turn": 60, "rho": 0.5}))
    # ... and just above an integer, by far more than the stated relative 1e-9: one more replica
    for n, above in ((12, 1e-8), (31, 1e-7)):
        calls = n * (1 + above) * 17 * 0.5 * 2.0 / (60 * tpot_s)
        tiers.append((f"tier-s-8b-ceiling-just-above-{n}-by-relative-{above:g}", S_8B, 85.0, 10.0,
                      TURN, 256,
                      {"calls": calls, "turn_interval_s": 2.0, "tokens_per_turn": 60, "rho": 0.5}))
    rng.shuffle(tiers)
    for name, sm, share, reserve, turn, mns, traffic in tiers:
        with g.case(name):
            _check(g.call("size_llm_tier", sm, share, reserve, turn, mns, traffic),
                   ref.size_llm_tier(sm, share, reserve, turn, mns, traffic), TIER_KEYS,
                   exact=("b_max", "replicas", "gpus"))

    # 4. Input checks.
    t, tr = TURN, TRAFFIC
    checks = [
        ("lines-budget-zero", "budget_lines", (0, LINES)),
        ("lines-budget-nan", "budget_lines", (math.nan, LINES)),
        ("lines-missing-endpoint", "budget_lines", (300, {k: v for k, v in LINES.items() if k != "endpoint"})),
        ("lines-extra-key", "budget_lines", (300, dict(LINES, llm=85))),
        ("lines-negative", "budget_lines", (300, dict(LINES, asr=-5))),
        ("lines-nan", "budget_lines", (300, dict(LINES, tts=math.nan))),
        ("lines-infinite", "budget_lines", (300, dict(LINES, endpoint=math.inf))),
        ("lines-not-a-dict", "budget_lines", (300, [20, 30, 100, 15, 30, 20])),
        ("lines-bool", "budget_lines", (300, dict(LINES, capture=True))),
        ("clause-batch-zero", "first_clause", (S_8B, 0, t)),
        ("clause-batch-float", "first_clause", (S_8B, 16.0, t)),
        ("clause-zero-clause-tokens", "first_clause", (S_8B, 16, dict(t, clause_tokens=0))),
        ("clause-zero-new-tokens", "first_clause", (S_8B, 16, dict(t, new_tokens=0))),
        ("clause-negative-ctx", "first_clause", (S_8B, 16, dict(t, ctx=-1))),
        ("clause-missing-key", "first_clause", (S_8B, 16, {k: v for k, v in t.items() if k != "ctx"})),
        ("clause-extra-turn-key", "first_clause", (S_8B, 16, dict(t, reply_tokens=60))),
        ("tier-share-nan", "size_llm_tier", (S_8B, math.nan, 10.0, t, 256, tr)),
        ("tier-share-inf", "size_llm_tier", (S_8B, math.inf, 10.0, t, 256, tr)),
        ("tier-share-minus-inf", "size_llm_tier", (S_8B, -math.inf, 10.0, t, 256, tr)),
        ("tier-negative-reserve", "size_llm_tier", (S_8B, 85.0, -1.0, t, 256, tr)),
        ("tier-max-num-seqs-zero", "size_llm_tier", (S_8B, 85.0, 10.0, t, 0, tr)),
        ("tier-rho-zero", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, rho=0.0))),
        ("tier-rho-above-one", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, rho=1.5))),
        ("tier-interval-zero", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, turn_interval_s=0))),
        ("tier-interval-inf", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, turn_interval_s=math.inf))),
        ("tier-negative-calls", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, calls=-10))),
        ("tier-tokens-per-turn-zero", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, tokens_per_turn=0))),
        ("tier-tokens-per-turn-float", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, tokens_per_turn=60.5))),
        ("tier-missing-traffic-key", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, {k: v for k, v in tr.items() if k != "rho"})),
        ("tier-extra-traffic-key", "size_llm_tier", (S_8B, 85.0, 10.0, t, 256, dict(tr, peak_factor=1.5))),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
