"""Public cases for canary-sizing (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail


def grade(g: Grading) -> None:
    with g.case("error-rate-equal-arms"):
        expect_equal(g.call("n_proportion", 0.005, 0.0025, 0.05, 0.8), 12287, name="n_proportion")
    with g.case("error-rate-control-is-95-percent"):
        expect_equal(g.call("n_proportion", 0.005, 0.0025, 0.05, 0.8, k=19), 6046, name="n_proportion")
    with g.case("achieved-power"):
        expect_close(g.call("power_proportion", 12287, 0.005, 0.0025, 0.05), 0.8000060591966883,
                     name="power_proportion", atol=1e-9, rtol=0)
        expect_close(g.call("power_proportion", 12286, 0.005, 0.0025, 0.05), 0.7999777278952366,
                     name="power_proportion", atol=1e-9, rtol=0)
    with g.case("mean-ttft"):
        expect_equal(g.call("n_mean", 1.0, 0.05, 0.05, 0.8), 4947, name="n_mean")
    with g.case("rollout-rest-as-control"):
        st = g.call("rollout", [0.05], 200.0, 0.005, 0.0025, 0.05, 0.8, control="rest")
        if not isinstance(st, list) or len(st) != 1 or not isinstance(st[0], dict):
            fail("expected a list with one dict per stage")
        expect_equal(st[0]["n_canary"], 6046, name="[0]['n_canary']")
        expect_close(st[0]["minutes"], 10.076666666666666, name="[0]['minutes']", rtol=1e-9)
    with g.case("rejects-two-sided-alpha-as-percent", group=INPUT_CHECKS):
        g.raises("ValueError", "n_proportion", 0.005, 0.0025, 5, 0.8)
