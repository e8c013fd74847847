"""Hidden cases for speculation-tail.

1. break_even_alpha on the S-spec preset (70B TP8 H100) at night/day/rush batch sizes, every g,
   other contexts, a made-up 8B-on-H200 preset; the 0.0 (ratio <= 1) and None (ratio >= g + 1)
   ends.
2. tail_report on recorded traces (levels, batch sizes, contexts, explicit acceptances) under
   given draft lengths: uniform, per-level, ragged per request (lockstep drafting), a trace where
   the p99 index lands on a tie.
3. The policy: the grader's own simulator asks the submission's draft_lengths for every batch of
   hidden traces (with noisy acceptance estimates; the true acceptances stay hidden) and grades
   its p99 and mean time per token against always-off and always-on (g = 4).
Then the input checks.
"""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel

RTOL = 1e-9
ALPHA_ATOL = 1e-7
P99_TOL = 1.10
MEAN_TOL = 1.10
ON_G = 4
N_OBS = 32
REPORT_KEYS = ("tpot_s", "mean_s", "p50_s", "p99_s", "slowed_share", "p99_owners", "p99_alpha_max")


def eagle(target: StepModel, t_fixed_s: float) -> StepModel:
    """An EAGLE-style draft head: one decoder layer of the target's shape plus its LM head."""
    m = dataclasses.replace(target.model, n_layers=1, name=target.model.name + " EAGLE head")
    return dataclasses.replace(target, model=m, t_fixed_s=t_fixed_s)


S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, n_gpus=8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
S_DRAFT = eagle(S_SPEC, 0.0002)
# Made-up second preset: Llama 3.1 8B on one H200, FP8 weights and KV.
S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H200_SXM, n_gpus=1, dtype=specs.DType.FP8,
                 kv_dtype=specs.DType.FP8, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
S_8B_DRAFT = eagle(S_8B, 0.0001)


def _batch(rng, level, b, c, mean, conc):
    alpha = [rng.betavariate(mean * conc, (1 - mean) * conc) for _ in range(b)]
    est = [sum(1 for _ in range(N_OBS) if rng.random() < a) / N_OBS for a in alpha]
    return {"level": level, "context_len": c, "alpha": alpha, "alpha_est": est}


# (Beta mean, concentration) of every policy family, as the statement's table lists them.
FAMILY_BETA = {
    "mixed-load": (0.7, 5), "day-confident": (0.85, 8), "day-spread": (0.7, 5),
    "night-long-context": (0.8, 5), "evening": (0.75, 4), "mid-batch": (0.8, 6),
    "rush-only": (0.7, 5), "day-doubtful": (0.55, 4), "8b-h200-mixed": (0.75, 5),
    "day-64-confident": (0.85, 8), "day-160-confident": (0.85, 8), "8b-h200-mid-doubtful": (0.55, 4),
}


def policy_traces(rng: random.Random) -> list:
    """(name, target, drafter, trace) for the policy cases; levels are (name, b, batches, c)."""
    fams = [
        ("mixed-load", S_SPEC, S_DRAFT, [("night", 4, 5, 512), ("day", 128, 6, 512), ("rush", 1024, 3, 512)], 0.7, 5),
        ("day-confident", S_SPEC, S_DRAFT, [("day", 128, 8, 512)], 0.85, 8),
        ("day-spread", S_SPEC, S_DRAFT, [("day", 128, 8, 1024)], 0.7, 5),
        ("night-long-context", S_SPEC, S_DRAFT, [("night", 4, 60, 2048)], 0.8, 5),
        ("evening", S_SPEC, S_DRAFT, [("night", 8, 20, 1024), ("day", 96, 5, 1024)], 0.75, 4),
        ("mid-batch", S_SPEC, S_DRAFT, [("mid", 48, 10, 512)], 0.8, 6),
        ("rush-only", S_SPEC, S_DRAFT, [("rush", 1024, 3, 512)], 0.7, 5),
        ("day-doubtful", S_SPEC, S_DRAFT, [("day", 64, 6, 512), ("day", 160, 4, 512)], 0.55, 4),
        ("8b-h200-mixed", S_8B, S_8B_DRAFT, [("night", 8, 10, 1024), ("day", 64, 6, 1024), ("rush", 384, 3, 1024)], 0.75, 5),
        # Same preset, batch size and context as day-doubtful, high acceptance: a policy blind to
        # the estimates (a table of batch size) cannot serve both.
        ("day-64-confident", S_SPEC, S_DRAFT, [("day", 64, 10, 512)], 0.85, 8),
        ("day-160-confident", S_SPEC, S_DRAFT, [("day", 160, 5, 512)], 0.85, 8),
        ("8b-h200-mid-doubtful", S_8B, S_8B_DRAFT, [("mid", 48, 12, 512)], 0.55, 4),
    ]
    out = []
    for name, tgt, drf, levels, mean, conc in fams:
        assert FAMILY_BETA[name] == (mean, conc)
        tr = [_batch(rng, lvl, b, c, mean, conc) for lvl, b, nb, c in levels for _ in range(nb)]
        out.append((name, tgt, drf, tr))
    return out


def _score(ref, tgt, drf, trace, gl):
    r = ref.tail_report(tgt, drf, [{k: b[k] for k in ("level", "context_len", "alpha")} for b in trace], gl)
    return r["p99_s"], r["mean_s"]


def _check_report(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(REPORT_KEYS):
        fail(f"expected a dict with exactly the keys {list(REPORT_KEYS)}")
    t = out["tpot_s"]
    if not isinstance(t, (list, tuple)) or len(t) != len(exp["tpot_s"]):
        fail(f"['tpot_s'] must be a list with one entry per request ({len(exp['tpot_s'])})")
    bad = 0
    for a, e in zip(t, exp["tpot_s"]):
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not abs(a - e) <= RTOL * abs(e):
            bad += 1
    if bad:
        fail(f"['tpot_s']: {bad} of {len(t)} requests off by more than rtol {RTOL:g}")
    for k in ("mean_s", "p50_s", "p99_s", "p99_alpha_max"):
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)
    expect_close(out["slowed_share"], exp["slowed_share"], name="['slowed_share']", rtol=0, atol=1e-12)
    own = out["p99_owners"]
    if not isinstance(own, dict) or set(own) != set(exp["p99_owners"]):
        fail("['p99_owners'] must map exactly the levels that own the p99 to their counts")
    for k in sorted(exp["p99_owners"]):
        expect_equal(own[k], exp["p99_owners"][k], name=f"['p99_owners'][{k!r}]")


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"speculation-tail:{g.salt}")

    # -- 1. break-even acceptance ---------------------------------------------------------
    be = [(f"break-even-b{b}-c512-g{gg}", S_SPEC, S_DRAFT, b, 512, gg)
          for b in (4, 128, 1024) for gg in (1, 2, 4, 8)]
    be += [("break-even-b1-c0-g3", S_SPEC, S_DRAFT, 1, 0, 3),
           ("break-even-b600-c2048-g2", S_SPEC, S_DRAFT, 600, 2048, 2),
           ("break-even-b59-c8192-g4", S_SPEC, S_DRAFT, 59, 8192, 4),
           ("break-even-g0", S_SPEC, S_DRAFT, 16, 512, 0),
           ("break-even-8b-h200-b32-g3", S_8B, S_8B_DRAFT, 32, 1024, 3),
           ("break-even-8b-h200-b256-g1", S_8B, S_8B_DRAFT, 256, 1024, 1),
           ("break-even-never-b4096-g8", S_SPEC, S_DRAFT, 4096, 512, 8),
           # step ratio 2.004 at g = 1: R >= g + 1 just, so None (a bound of g + 2 would bisect).
           ("break-even-none-b4096-c0-g1", S_SPEC, S_DRAFT, 4096, 0, 1),
           ("break-even-free-drafter-b1-g5", S_SPEC, eagle(dataclasses.replace(S_SPEC, t_fixed_s=0.0), 0.0), 1, 0, 5)]
    for name, tgt, drf, b, c, gg in be:
        with g.case(name):
            out = g.call("break_even_alpha", tgt, drf, b, c, gg)
            exp = ref.break_even_alpha(tgt, drf, b, c, gg)
            if exp is None:
                if out is not None:
                    fail(f"expected None (speculation with g={gg} cannot break even here), got {out!r}")
            elif exp == 0.0:
                expect_close(out, 0.0, name="alpha", rtol=0, atol=0)
            else:
                expect_close(out, exp, name="alpha", rtol=0, atol=ALPHA_ATOL)

    # -- 2. tail_report on recorded traces ------------------------------------------------
    def strip(tr):
        return [{k: b[k] for k in ("level", "context_len", "alpha")} for b in tr]

    reports = []
    # Five requests, distinct times per token: the p99 is index (99 * 5) // 100 = 4, the largest.
    short = [{"level": "s", "context_len": 512, "alpha": [0.15 + 0.8 * rng.random() for _ in range(5)]}]
    reports.append(("report-five-distinct", short, [[2] * 5]))
    # Three identical one-request batches of levels a, b, a: all three own the p99, counted per level.
    tied = [{"level": lvl, "context_len": 300, "alpha": [0.0]} for lvl in ("a", "b", "a")]
    reports.append(("report-p99-tie-across-levels", tied, [[0], [0], [0]]))
    # A request slower than its batch's plain step by 5e-10 (relative): within the 1e-9 margin,
    # so not slowed; its neighbours are clearly slowed (alpha 0) and clearly faster (alpha 0.9).
    ratio = ref.batch_step_s(S_SPEC, S_DRAFT, 512, [4] * 3) / ref.batch_step_s(S_SPEC, S_DRAFT, 512, [0] * 3)
    want, lo, hi = ratio / (1 + 5e-10), 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ref.expected_tokens(mid, 4) < want else (lo, mid)
    reports.append(("report-slowed-margin", [{"level": "m", "context_len": 512, "alpha": [0.0, hi, 0.9]}],
                    [[4, 4, 4]]))
    tr = [_batch(rng, "night", 4, 512, 0.7, 5) for _ in range(3)] + \
         [_batch(rng, "day", 128, 512, 0.7, 5) for _ in range(2)] + [_batch(rng, "rush", 1024, 512, 0.7, 5)]
    reports.append(("report-mixed-always-on", tr, [[4] * len(b["alpha"]) for b in tr]))
    reports.append(("report-mixed-off", tr, [[0] * len(b["alpha"]) for b in tr]))
    reports.append(("report-mixed-per-level", tr, [[{"night": 6, "day": 2, "rush": 0}[b["level"]]] * len(b["alpha"]) for b in tr]))
    reports.append(("report-mixed-per-request-lockstep", tr,
                    [[rng.randint(0, 8) for _ in b["alpha"]] for b in tr]))
    tr2 = [_batch(rng, lvl, b, c, 0.8, 3) for lvl, b, c in
           (("a", 3, 100), ("b", 17, 3000), ("a", 5, 0), ("c", 33, 777))]
    reports.append(("report-ragged-levels-contexts", tr2, [[rng.randint(0, 5) for _ in b["alpha"]] for b in tr2]))
    # Ties at the p99: 100 requests, 99 of them share one time per token (alpha = 0 rows of
    # batches with the same step); every tied request owns the p99.
    tie = [{"level": "x", "context_len": 256, "alpha": [0.0] * 33} for _ in range(3)] + \
          [{"level": "y", "context_len": 256, "alpha": [1.0]}]
    reports.append(("report-p99-on-a-tie", tie, [[2] * 33] * 3 + [[0]]))
    edge = [{"level": "e", "context_len": 64, "alpha": [0.0, 1.0, 0.5, 1.0]}]
    reports.append(("report-alpha-0-and-1", edge, [[3, 3, 0, 8]]))
    for name, t, gl in reports:
        with g.case(name):
            _check_report(g.call("tail_report", S_SPEC, S_DRAFT, strip(t), gl),
                          ref.tail_report(S_SPEC, S_DRAFT, strip(t), gl))
    with g.case("report-8b-h200"):
        t = [_batch(rng, "night", 8, 1024, 0.75, 5), _batch(rng, "rush", 384, 1024, 0.75, 5)]
        gl = [[3] * 8, [1] * 384]
        _check_report(g.call("tail_report", S_8B, S_8B_DRAFT, strip(t), gl),
                      ref.tail_report(S_8B, S_8B_DRAFT, strip(t), gl))

    # -- 3. the policy, graded by the grader's simulator -----------------------------------
    for name, tgt, drf, trace in policy_traces(rng):
        with g.case(f"policy-{name}"):
            gl = []
            for i, b in enumerate(trace):
                out = g.call("draft_lengths", tgt, drf, b["context_len"], list(b["alpha_est"]))
                n = len(b["alpha_est"])
                if not isinstance(out, (list, tuple)) or len(out) != n:
                    fail(f"batch {i}: draft_lengths must return a list of {n} ints")
                for x in out:
                    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= ref.GMAX:
                        fail(f"batch {i}: every draft length must be an int in [0, {ref.GMAX}], got {x!r}")
                gl.append(list(out))
            p99, mean = _score(ref, tgt, drf, trace, gl)
            p99_off, mean_off = _score(ref, tgt, drf, trace, [[0] * len(b["alpha"]) for b in trace])
            p99_on, mean_on = _score(ref, tgt, drf, trace, [[ON_G] * len(b["alpha"]) for b in trace])
            if p99 > P99_TOL * min(p99_off, p99_on):
                fail(f"p99 time per token {p99 * 1e3:.2f} ms is {p99 / min(p99_off, p99_on):.3f}x the "
                     f"better of always-off ({p99_off * 1e3:.2f} ms) and always-on ({p99_on * 1e3:.2f} ms); "
                     f"allowed {P99_TOL}x")
            if mean > MEAN_TOL * min(mean_off, mean_on):
                fail(f"mean time per token {mean * 1e3:.2f} ms is {mean / min(mean_off, mean_on):.3f}x the "
                     f"better of always-off ({mean_off * 1e3:.2f} ms) and always-on ({mean_on * 1e3:.2f} ms); "
                     f"allowed {MEAN_TOL}x")

    # -- input checks ---------------------------------------------------------------------
    ok_tr = [{"level": "x", "context_len": 128, "alpha": [0.5, 0.9]}]
    checks = [
        ("break-even-batch-0", "break_even_alpha", (S_SPEC, S_DRAFT, 0, 512, 4)),
        ("break-even-negative-context", "break_even_alpha", (S_SPEC, S_DRAFT, 4, -1, 4)),
        ("break-even-g-9", "break_even_alpha", (S_SPEC, S_DRAFT, 4, 512, 9)),
        ("break-even-g-negative", "break_even_alpha", (S_SPEC, S_DRAFT, 4, 512, -1)),
        ("report-empty-trace", "tail_report", (S_SPEC, S_DRAFT, [], [])),
        ("report-alpha-above-one", "tail_report",
         (S_SPEC, S_DRAFT, [{"level": "x", "context_len": 128, "alpha": [1.5]}], [[1]])),
        ("report-alpha-nan", "tail_report",
         (S_SPEC, S_DRAFT, [{"level": "x", "context_len": 128, "alpha": [math.nan]}], [[1]])),
        ("report-empty-batch", "tail_report",
         (S_SPEC, S_DRAFT, [{"level": "x", "context_len": 128, "alpha": []}], [[]])),
        ("report-lengths-per-batch-mismatch", "tail_report", (S_SPEC, S_DRAFT, ok_tr, [[1, 1], [1]])),
        ("report-lengths-per-request-mismatch", "tail_report", (S_SPEC, S_DRAFT, ok_tr, [[1]])),
        ("report-draft-length-9", "tail_report", (S_SPEC, S_DRAFT, ok_tr, [[1, 9]])),
        ("report-negative-context", "tail_report",
         (S_SPEC, S_DRAFT, [{"level": "x", "context_len": -5, "alpha": [0.5]}], [[1]])),
        ("break-even-batch-not-int", "break_even_alpha", (S_SPEC, S_DRAFT, 2.5, 512, 4)),
        ("break-even-context-not-int", "break_even_alpha", (S_SPEC, S_DRAFT, 4, 512.5, 4)),
        ("report-alpha-not-a-list", "tail_report",
         (S_SPEC, S_DRAFT, [{"level": "x", "context_len": 128, "alpha": 0.5}], [[1]])),
        ("report-batch-without-alpha", "tail_report", (S_SPEC, S_DRAFT, [{"level": "x", "context_len": 128}], [[1]])),
        ("report-empty-level", "tail_report",
         (S_SPEC, S_DRAFT, [{"level": "", "context_len": 128, "alpha": [0.5]}], [[1]])),
        ("policy-empty-batch", "draft_lengths", (S_SPEC, S_DRAFT, 512, [])),
        ("policy-estimate-negative", "draft_lengths", (S_SPEC, S_DRAFT, 512, [0.5, -0.1])),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
