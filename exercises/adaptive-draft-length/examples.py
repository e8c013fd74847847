"""Public cases for adaptive-draft-length (the statement's example; literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal

CODE = {"cls": "code", "q": [0.75, 0.75, 0.75, 0.25, 0.75, 0.75, 0.75, 0.75], "m": [1, 1, 1, 0, 1, 1, 1, 1]}
CHAT = {"cls": "chat", "q": [0.75, 0.25, 0.25, 0.5, 0.5, 0.25], "m": [1, 0, 0, 1, 1, 0]}
TRACE = [CODE, CHAT]


def _sim(g, out, cost, steps, drafted, accepted):
    expect_equal(sorted(out), ["accepted", "cost", "drafted", "steps"], name="keys")
    expect_equal(out["steps"], steps, name="steps")
    expect_equal(out["drafted"], drafted, name="drafted")
    expect_equal(out["accepted"], accepted, name="accepted")
    expect_close(out["cost"], cost, name="cost", rtol=1e-9)


def grade(g: Grading) -> None:
    with g.case("example-fixed-3-batch-1"):
        _sim(g, g.call("simulate", TRACE, {"kind": "fixed", "g": 3}, 0.25), 8.5, 5, 14, 9)
    with g.case("example-per-class-batch-1"):
        _sim(g, g.call("simulate", TRACE, {"kind": "per_class", "g": {"code": 4, "chat": 1}}, 0.25),
             8.5, 6, 10, 8)
    with g.case("example-confidence-batch-1"):
        _sim(g, g.call("simulate", TRACE, {"kind": "confidence"}, 0.25), 8.75, 6, 11, 8)
    with g.case("example-fixed-3-batch-2-knee-4"):
        _sim(g, g.call("simulate", TRACE, {"kind": "fixed", "g": 3}, 0.25, batch=2, knee_tokens=4),
             7.0, 3, 14, 9)
    with g.case("example-study-batch-1"):
        r = g.call("study", TRACE, 0.25)
        expect_equal(r["g_fixed"], 3, name="g_fixed")
        expect_equal(r["g_class"], {"chat": 2, "code": 3}, name="g_class")
        for k, v in (("cost_off", 14.0), ("cost_fixed", 8.5), ("cost_class", 8.0), ("cost_conf", 8.75),
                     ("speedup_fixed", 1.6470588235294117), ("gain_class", 0.0625),
                     ("gain_conf", -0.02857142857142858)):
            expect_close(r[k], v, name=k, rtol=1e-9)
    with g.case("example-study-batch-2-knee-4"):
        r = g.call("study", TRACE, 0.25, batch=2, knee_tokens=4)
        expect_equal(r["g_fixed"], 1, name="g_fixed")
        expect_equal(r["g_class"], {"chat": 2, "code": 3}, name="g_class")
        for k, v in (("cost_off", 8.0), ("cost_fixed", 5.0), ("cost_class", 6.5), ("cost_conf", 7.5),
                     ("speedup_fixed", 1.6), ("gain_class", -0.23076923076923073),
                     ("gain_conf", -0.33333333333333337)):
            expect_close(r[k], v, name=k, rtol=1e-9)
    with g.case("rejects-length-mismatch", group=INPUT_CHECKS):
        g.raises("ValueError", "simulate", [{"cls": "code", "q": [0.5, 0.5], "m": [1]}],
                 {"kind": "fixed", "g": 2}, 0.1)
    with g.case("rejects-per-class-missing-class", group=INPUT_CHECKS):
        g.raises("ValueError", "simulate", TRACE, {"kind": "per_class", "g": {"code": 3}}, 0.1)
