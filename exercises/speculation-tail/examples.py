"""Public cases for speculation-tail: the statement's example, and the policy graded the way the
hidden cases are, on one small public trace (this file has its own few-line simulator)."""

import dataclasses

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.step_model import StepModel

TARGET = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, n_gpus=8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
DRAFTER = dataclasses.replace(TARGET, model=dataclasses.replace(TARGET.model, n_layers=1), t_fixed_s=0.0002)


def _step(c, gs):
    verify = TARGET.step_s([(g + 1, c, g + 1) for g in gs])
    return verify + max(gs) * DRAFTER.step_s([(1, c, 1)] * len(gs)) if max(gs) else verify


def _e(a, g):
    return g + 1.0 if a == 1 else (1 - a ** (g + 1)) / (1 - a)


def _p99_mean(batches, gl):
    t = sorted(_step(b["context_len"], gs) / _e(a, g)
               for b, gs in zip(batches, gl) for a, g in zip(b["alpha"], gs))
    return t[(99 * len(t)) // 100], sum(t) / len(t)


def _public_trace():
    """Two night batches and one day batch; true acceptances and 32-draft estimates (k / 32)."""
    out = []
    for lvl, b, c in (("night", 4, 512), ("night", 4, 512), ("day", 128, 512)):
        k = [(7 * j + 3 * len(out)) % 33 for j in range(b)]          # 0..32 accepted of 32
        est = [x / 32 for x in k]
        alpha = [min(1.0, max(0.0, e + (0.03 if j % 2 else -0.03))) for j, e in enumerate(est)]
        out.append({"level": lvl, "context_len": c, "alpha": alpha, "alpha_est": est})
    return out


def grade(g: Grading) -> None:
    for b, exp in ((4, 0.1372512052394272), (128, 0.6029016163781595), (1024, 0.8925738014199929)):
        with g.case(f"break-even-b{b}-g4"):
            expect_close(g.call("break_even_alpha", TARGET, DRAFTER, b, 512, 4), exp, name="alpha",
                         rtol=0, atol=1e-7)
    with g.case("break-even-b1024-g1"):
        expect_close(g.call("break_even_alpha", TARGET, DRAFTER, 1024, 512, 1), 0.7587690940077667,
                     name="alpha", rtol=0, atol=1e-7)
    with g.case("tail-report-example"):
        trace = [{"level": "night", "context_len": 512, "alpha": [0.9, 0.8, 0.6, 0.1]},
                 {"level": "day", "context_len": 512, "alpha": [0.5, 0.5]}]
        r = g.call("tail_report", TARGET, DRAFTER, trace, [[4, 4, 4, 4], [4, 0]])
        expect_equal(sorted(r), ["mean_s", "p50_s", "p99_alpha_max", "p99_owners", "p99_s",
                                 "slowed_share", "tpot_s"], name="keys")
        for i, v in enumerate([0.0026929387717465024, 0.0032805371145225794, 0.00478307319751002,
                               0.009925167459435788, 0.005683202662301395, 0.011011205158208952]):
            expect_close(r["tpot_s"][i], v, name=f"tpot_s[{i}]", rtol=1e-9)
        expect_close(r["mean_s"], 0.006229354060620873, name="mean_s", rtol=1e-9)
        expect_close(r["p50_s"], 0.005683202662301395, name="p50_s", rtol=1e-9)
        expect_close(r["p99_s"], 0.011011205158208952, name="p99_s", rtol=1e-9)
        expect_close(r["slowed_share"], 1 / 3, name="slowed_share", rtol=1e-12)
        expect_equal(r["p99_owners"], {"day": 1}, name="p99_owners")
        expect_close(r["p99_alpha_max"], 0.5, name="p99_alpha_max", rtol=1e-9)
    with g.case("policy-public-trace"):
        trace = _public_trace()
        gl = []
        for b in trace:
            out = g.call("draft_lengths", TARGET, DRAFTER, b["context_len"], b["alpha_est"])
            if not isinstance(out, list) or len(out) != len(b["alpha_est"]) or any(
                    isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 8 for x in out):
                fail("draft_lengths must return one int in [0, 8] per request")
            gl.append(out)
        p99, mean = _p99_mean(trace, gl)
        p99_off, mean_off = _p99_mean(trace, [[0] * len(b["alpha"]) for b in trace])
        p99_on, mean_on = _p99_mean(trace, [[4] * len(b["alpha"]) for b in trace])
        if p99 > 1.10 * min(p99_off, p99_on):
            fail(f"p99 {p99 * 1e3:.2f} ms > 1.10 x min(off {p99_off * 1e3:.2f}, on {p99_on * 1e3:.2f}) ms")
        if mean > 1.10 * min(mean_off, mean_on):
            fail(f"mean {mean * 1e3:.2f} ms > 1.10 x min(off {mean_off * 1e3:.2f}, on {mean_on * 1e3:.2f}) ms")
    with g.case("rejects-g-9", group=INPUT_CHECKS):
        g.raises("ValueError", "break_even_alpha", TARGET, DRAFTER, 4, 512, 9)
    with g.case("rejects-empty-batch", group=INPUT_CHECKS):
        g.raises("ValueError", "draft_lengths", TARGET, DRAFTER, 512, [])
