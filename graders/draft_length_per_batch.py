"""Hidden cases for draft-length-per-batch: step times and speedups on the story preset, on other
GPUs, dtypes, TP degrees and made-up models, with EAGLE heads and a separate draft model; best
draft lengths at bucket edges, at alpha 0 and 1, and at an exact all-g tie (dyadic made-up
hardware); bucket tables across contexts, acceptance rates, g_max, max_num_seqs and the KV cap
edge; each kind also with an FP8 KV cache under BF16 weights at c >= 4096; then the input
checks."""

from __future__ import annotations

import dataclasses

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.sim.step_model import StepModel
from inferprep.specs import DType

RTOL = 1e-9
STORY = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
STORY_KV = 1_235_951


def eagle(target: StepModel, t_fixed_s: float) -> StepModel:
    head = dataclasses.replace(target.model, n_layers=1, name=target.model.name + " head")
    return dataclasses.replace(target, model=head, t_fixed_s=t_fixed_s)


EAGLE = eagle(STORY, 0.0002)
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", hbm_bytes_per_s=2.2e12,
                              bf16_dense_flops=610e12, fp8_dense_flops=1220e12)
ODD_MODEL = specs.ModelConfig(name="made-up-13b", n_layers=40, hidden_size=5120, n_heads=40,
                              n_kv_heads=8, head_dim=128, ffn_size=13824, vocab_size=100352)
H200_FP8 = StepModel(specs.LLAMA_3_1_70B, specs.H200_SXM, 4, dtype=DType.FP8, kv_dtype=DType.FP8,
                     mfu=0.5, mbu=0.85, t_fixed_s=0.001)
ODD_TP2 = StepModel(ODD_MODEL, ODD_GPU, 2, mfu=0.7, mbu=0.75, t_fixed_s=0.0015)
S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
# a separate draft model: Llama 3.1 8B sharing the target's eight GPUs
DRAFT_8B_TP8 = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.001)
PAIRS = [("story-eagle", STORY, EAGLE),
         ("story-8b-draft-model", STORY, DRAFT_8B_TP8),
         ("h200-tp4-fp8-eagle", H200_FP8, eagle(H200_FP8, 0.0001)),
         ("made-up-13b-tp2-eagle", ODD_TP2, eagle(ODD_TP2, 0.0003)),
         ("8b-h100-eagle-free-fixed", S_8B, eagle(S_8B, 0.0))]
# BF16 weights with an FP8 KV cache: at c >= 4096 attention is a large share of every step, so KV
# bytes counted with the weights' dtype (twice kvb) move the times, the best g and the tables.
STORY_KV8 = dataclasses.replace(STORY, kv_dtype=DType.FP8)
EAGLE_KV8 = eagle(STORY_KV8, 0.0002)
DRAFT_8B_TP8_KV8 = dataclasses.replace(DRAFT_8B_TP8, kv_dtype=DType.FP8)
S_8B_KV8 = dataclasses.replace(S_8B, kv_dtype=DType.FP8)
STORY_KV8_POOL = 2_471_902    # the story's pool at 163,840 B per token
S_8B_KV8_POOL = 808_573       # 8B on one H100 at 65,536 B per token

# Dyadic made-up hardware where every time is an exact binary fraction: with alpha = 1 and the
# drafter's fixed cost chosen so one draft forward plus the extra verify KV equals a plain step,
# every g gives the same throughput at batch 4, context 100.
DYADIC_GPU = dataclasses.replace(specs.H100_SXM, name="dyadic", hbm_bytes_per_s=float(2 ** 40),
                                 bf16_dense_flops=float(2 ** 60))
TINY = specs.ModelConfig(name="tiny", n_layers=2, hidden_size=64, n_heads=4, n_kv_heads=1,
                         head_dim=16, ffn_size=128, vocab_size=256)
TIE_TARGET = StepModel(TINY, DYADIC_GPU, 1, mfu=1.0, mbu=1.0, t_fixed_s=2.0 ** -10)
TIE_DRAFTER = eagle(TIE_TARGET, 4194675 / 2 ** 32)
TIE_B, TIE_C = 4, 100


def _check_table(out, exp) -> None:
    if not isinstance(out, list) or not all(isinstance(r, (list, tuple)) and len(r) == 3 for r in out):
        fail("expected a list of [start_bs, end_bs, K] rows")
    for i, r in enumerate(out):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in r):
            fail(f"row {i}: entries must be ints, got {list(r)!r}")
    if not out or out[0][0] != 1:
        fail("the first bucket must start at batch 1")
    for i in range(1, len(out)):
        if out[i][0] != out[i - 1][1] + 1:
            fail(f"rows {i - 1} and {i}: buckets must be contiguous with inclusive ends "
                 f"({list(out[i - 1])!r} then {list(out[i])!r})")
        if out[i][2] == out[i - 1][2]:
            fail(f"rows {i - 1} and {i} have the same K: merge equal neighbours")
    for i, r in enumerate(out):
        if r[0] > r[1]:
            fail(f"row {i}: start {r[0]} > end {r[1]}")
    if out[-1][1] != exp[-1][1]:
        fail(f"the table ends at batch {out[-1][1]}, which is not the largest batch the engine "
             "can hold (max_num_seqs and the KV pool)")
    got = {b: r[2] for r in out for b in range(r[0], r[1] + 1)}
    for r in exp:
        for b in range(r[0], r[1] + 1):
            if got[b] != r[2]:
                fail(f"batch {b}: K = {got[b]} is not the best draft length there")


def grade(g: Grading) -> None:
    ref = g.reference()

    # -- step times ----------------------------------------------------------------------------
    steps = [("story-b1-c2048-g4", STORY, EAGLE, 1, 2048, 4),
             ("story-b1-c2048-g0", STORY, EAGLE, 1, 2048, 0),
             ("story-b1024-c128-g4", STORY, EAGLE, 1024, 128, 4),
             ("story-b600-c2048-g8", STORY, EAGLE, 600, 2048, 8),
             ("story-b37-c0-g3", STORY, EAGLE, 37, 0, 3),
             ("story-fp8-kv-b64-c8192-g4", STORY_KV8, EAGLE_KV8, 64, 8192, 4),
             ("8b-h100-fp8-kv-b16-c16384-g5", S_8B_KV8, eagle(S_8B_KV8, 0.0), 16, 16384, 5)]
    for k, (name, t, d) in enumerate(PAIRS[1:]):
        for b, c, gg in ((1, 4096, 5), (96, 700, 2), (512, 64, 7)):
            steps.append((f"{name}-b{b}-c{c}-g{gg}", t, d, b, c, gg + k % 2))
    for name, t, d, b, c, gg in steps:
        with g.case(f"step-{name}"):
            expect_close(g.call("spec_step_time", t, d, b, c, gg), ref.spec_step_time(t, d, b, c, gg),
                         name="step seconds", rtol=RTOL)

    # -- speedups ------------------------------------------------------------------------------
    speeds = [("night-b1-c2048-g4", STORY, EAGLE, 1, 2048, 4, 0.8),
              ("night-b1-c2048-g8", STORY, EAGLE, 1, 2048, 8, 0.8),
              ("rush-b1024-c128-g4", STORY, EAGLE, 1024, 128, 4, 0.8),
              ("rush-b600-c2048-g4", STORY, EAGLE, 600, 2048, 4, 0.8),
              ("rush-b150-c8192-g4", STORY, EAGLE, 150, 8192, 4, 0.8),
              ("g0-is-one", STORY, EAGLE, 64, 512, 0, 0.8),
              ("alpha-0", STORY, EAGLE, 8, 512, 3, 0.0),
              ("alpha-1", STORY, EAGLE, 8, 512, 3, 1.0),
              ("alpha-1-compute-bound", STORY, EAGLE, 900, 256, 6, 1),
              ("alpha-half", STORY, EAGLE, 200, 1000, 2, 0.5),
              ("story-fp8-kv-b150-c8192-g4", STORY_KV8, EAGLE_KV8, 150, 8192, 4, 0.8),
              ("8b-draft-model-fp8-kv-b48-c4096-g3", STORY_KV8, DRAFT_8B_TP8_KV8, 48, 4096, 3, 0.7),
              ("empty-context-b64-c0-g3", STORY, EAGLE, 64, 0, 3, 0.8)]
    for name, t, d in PAIRS[1:]:
        for b, c, gg, a in ((1, 1500, 4, 0.7), (200, 300, 3, 0.85), (1024, 4000, 6, 0.6)):
            speeds.append((f"{name}-b{b}-c{c}-g{gg}-a{a}", t, d, b, c, gg, a))
    for name, t, d, b, c, gg, a in speeds:
        with g.case(f"speedup-{name}"):
            expect_close(g.call("spec_speedup", t, d, b, c, gg, a),
                         ref.spec_speedup(t, d, b, c, gg, a), name="speedup", rtol=RTOL)

    # -- best draft length -----------------------------------------------------------------------
    bests = [("night-b1-c2048", STORY, EAGLE, 1, 2048, 0.8, 8),
             ("story-bucket-edge-b25-c512", STORY, EAGLE, 25, 512, 0.8, 8),
             ("story-bucket-edge-b26-c512", STORY, EAGLE, 26, 512, 0.8, 8),
             ("rush-b1024-c128", STORY, EAGLE, 1024, 128, 0.8, 8),
             ("rush-b600-c2048", STORY, EAGLE, 600, 2048, 0.8, 8),
             ("rush-b150-c8192", STORY, EAGLE, 150, 8192, 0.8, 8),
             ("g-max-0", STORY, EAGLE, 1, 2048, 0.8, 0),
             ("empty-context-b1-c0", STORY, EAGLE, 1, 0, 0.8, 8),
             ("g-max-3-binds", STORY, EAGLE, 1, 2048, 0.8, 3),
             ("alpha-0", STORY, EAGLE, 1, 2048, 0.0, 8),
             ("alpha-1-memory-bound", STORY, EAGLE, 2, 2048, 1.0, 10),
             ("exact-tie-every-g", TIE_TARGET, TIE_DRAFTER, TIE_B, TIE_C, 1.0, 5),
             ("exact-tie-neighbour-b3", TIE_TARGET, TIE_DRAFTER, TIE_B - 1, TIE_C, 1.0, 5),
             ("exact-tie-neighbour-b5", TIE_TARGET, TIE_DRAFTER, TIE_B + 1, TIE_C, 1.0, 5),
             # FP8 KV (top two >= 2e-3 apart); with KV bytes from the weights' dtype: 4, 5, 2, 3, 5
             ("story-fp8-kv-b150-c8192", STORY_KV8, EAGLE_KV8, 150, 8192, 0.8, 8),
             ("story-fp8-kv-b48-c16384", STORY_KV8, EAGLE_KV8, 48, 16384, 0.8, 8),
             ("8b-draft-model-fp8-kv-b150-c8192", STORY_KV8, DRAFT_8B_TP8_KV8, 150, 8192, 0.8, 8),
             ("8b-h100-fp8-kv-b100-c4096", S_8B_KV8, eagle(S_8B_KV8, 0.0), 100, 4096, 0.7, 8),
             ("made-up-13b-fp8-kv-b100-c16384", dataclasses.replace(ODD_TP2, kv_dtype=DType.FP8),
              eagle(dataclasses.replace(ODD_TP2, kv_dtype=DType.FP8), 0.0003), 100, 16384, 0.7, 8)]
    for name, t, d in PAIRS[1:]:
        for b, c, a in ((1, 1500, 0.7), (48, 300, 0.85), (300, 4000, 0.75)):
            bests.append((f"{name}-b{b}-c{c}-a{a}", t, d, b, c, a, 10))
    for name, t, d, b, c, a, gmax in bests:
        with g.case(f"best-{name}"):
            out = g.call("best_draft_length", t, d, b, c, a, gmax)
            exp = ref.best_draft_length(t, d, b, c, a, gmax)
            if not isinstance(out, int) or isinstance(out, bool) or out != exp:
                fail(f"got {out!r}, which is not the draft length with the highest throughput "
                     "(ties to the smaller one)")

    # -- tables ----------------------------------------------------------------------------------
    def gap(c, gmax):
        return c + gmax + 1
    tables = [("story-c256", STORY, EAGLE, 256, 0.8, 8, 1024, STORY_KV),
              ("story-c2048", STORY, EAGLE, 2048, 0.8, 8, 1024, STORY_KV),
              ("story-c8192", STORY, EAGLE, 8192, 0.8, 8, 1024, STORY_KV),
              ("story-c128-a0.7", STORY, EAGLE, 128, 0.7, 8, 1024, STORY_KV),
              ("story-c1024-a0.9-gmax12", STORY, EAGLE, 1024, 0.9, 12, 1024, STORY_KV),
              ("story-c512-max-seqs-256", STORY, EAGLE, 512, 0.8, 8, 256, STORY_KV),
              ("kv-cap-exact-600", STORY, EAGLE, 2048, 0.8, 8, 1024, 600 * gap(2048, 8)),
              ("kv-cap-one-short-599", STORY, EAGLE, 2048, 0.8, 8, 1024, 600 * gap(2048, 8) - 1),
              ("kv-cap-gmax-4", STORY, EAGLE, 4000, 0.8, 4, 1024, 200 * gap(4000, 4)),
              ("kv-one-request", STORY, EAGLE, 30000, 0.8, 8, 1024, gap(30000, 8)),
              ("max-seqs-one", STORY, EAGLE, 2048, 0.8, 8, 1, STORY_KV),
              ("empty-context-c0", STORY, EAGLE, 0, 0.8, 8, 1024, STORY_KV),
              ("g-max-0-c2048", STORY, EAGLE, 2048, 0.8, 0, 1024, STORY_KV),
              ("tie-hardware", TIE_TARGET, TIE_DRAFTER, TIE_C, 1.0, 5, 12, 10 ** 9),
              ("8b-draft-model-c1000", STORY, DRAFT_8B_TP8, 1000, 0.8, 8, 1024, STORY_KV),
              ("h200-fp8-c3000", H200_FP8, PAIRS[2][2], 3000, 0.75, 8, 512, 2_000_000),
              ("made-up-13b-c600", ODD_TP2, PAIRS[3][2], 600, 0.85, 10, 384, 900_000),
              ("8b-h100-c200", S_8B, PAIRS[4][2], 200, 0.8, 8, 1024, 404_286),
              # FP8 KV (top two >= 6e-4 apart at every batch); with KV bytes from the weights'
              # dtype each table's bucket edges move
              ("story-fp8-kv-c8192-a0.7", STORY_KV8, EAGLE_KV8, 8192, 0.7, 8, 1024, STORY_KV8_POOL),
              ("story-fp8-kv-c16384", STORY_KV8, EAGLE_KV8, 16384, 0.8, 8, 1024, STORY_KV8_POOL),
              ("8b-draft-model-fp8-kv-c8192", STORY_KV8, DRAFT_8B_TP8_KV8, 8192, 0.8, 8, 1024,
               STORY_KV8_POOL),
              ("8b-h100-fp8-kv-c4096", S_8B_KV8, eagle(S_8B_KV8, 0.0), 4096, 0.8, 8, 1024,
               S_8B_KV8_POOL),
              ("8b-h100-fp8-kv-c8192-a0.7", S_8B_KV8, eagle(S_8B_KV8, 0.0), 8192, 0.7, 8, 1024,
               S_8B_KV8_POOL)]
    for name, t, d, c, a, gmax, seqs, kv in tables:
        with g.case(f"table-{name}"):
            _check_table(g.call("draft_table", t, d, c, a, gmax, seqs, kv),
                         ref.draft_table(t, d, c, a, gmax, seqs, kv))

    # -- input checks ----------------------------------------------------------------------------
    checks = [
        ("step-batch-zero", "spec_step_time", (STORY, EAGLE, 0, 512, 4)),
        ("step-negative-context", "spec_step_time", (STORY, EAGLE, 1, -1, 4)),
        ("step-negative-g", "spec_step_time", (STORY, EAGLE, 1, 512, -1)),
        ("step-float-g", "spec_step_time", (STORY, EAGLE, 1, 512, 2.0)),
        ("step-bool-batch", "spec_step_time", (STORY, EAGLE, True, 512, 4)),
        ("step-target-not-a-step-model", "spec_step_time", (specs.LLAMA_3_1_70B, EAGLE, 1, 512, 4)),
        ("speedup-drafter-not-a-step-model", "spec_speedup",
         (STORY, specs.LLAMA_3_1_8B, 1, 512, 4, 0.8)),
        ("speedup-batch-zero", "spec_speedup", (STORY, EAGLE, 0, 512, 4, 0.8)),
        ("speedup-alpha-above-one", "spec_speedup", (STORY, EAGLE, 1, 512, 4, 1.2)),
        ("speedup-alpha-negative", "spec_speedup", (STORY, EAGLE, 1, 512, 4, -0.1)),
        ("speedup-alpha-nan", "spec_speedup", (STORY, EAGLE, 1, 512, 4, float("nan"))),
        ("best-negative-g-max", "best_draft_length", (STORY, EAGLE, 1, 512, 0.8, -1)),
        ("best-batch-zero", "best_draft_length", (STORY, EAGLE, 0, 512, 0.8, 8)),
        ("table-max-seqs-zero", "draft_table", (STORY, EAGLE, 512, 0.8, 8, 0, STORY_KV)),
        ("table-kv-below-one-request", "draft_table",
         (STORY, EAGLE, 2048, 0.8, 8, 1024, gap(2048, 8) - 1)),
        ("table-alpha-above-one", "draft_table", (STORY, EAGLE, 512, 1.5, 8, 1024, STORY_KV)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
