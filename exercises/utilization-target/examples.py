"""Public cases for utilization-target (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail


def grade(g: Grading) -> None:
    with g.case("seventy-percent-rule"):
        r = g.call("max_utilization", 0.25, 0.0, 2.0)
        expect_close(r, 0.6968574449801913, name="max_utilization", rtol=1e-9, atol=1e-12)
    with g.case("prompt-length-variance"):
        m = g.call("prefill_moments", 0.025, 5e-5, 4500, 4500**2)
        if not isinstance(m, dict) or set(m) != {"mean_s", "cs2"}:
            fail("expected a dict with exactly the keys ['cs2', 'mean_s']")
        expect_close(m["mean_s"], 0.25, name="['mean_s']", rtol=1e-9)
        expect_close(m["cs2"], 0.81, name="['cs2']", rtol=1e-9)
        r = g.call("max_utilization", 0.25, 0.81, 2.0)
        expect_close(r, 0.49542081353214107, name="max_utilization", rtol=1e-9, atol=1e-12)
    with g.case("ttft-at-half-load"):
        expect_close(g.call("ttft_quantile", 0.5, 0.25, 0.0), 1.2280057513570362,
                     name="ttft_quantile", rtol=1e-9)
    with g.case("p95-with-variance"):
        r = g.call("max_utilization", 0.25, 0.5, 2.0, p=0.95)
        expect_close(r, 0.7149758164114555, name="max_utilization", rtol=1e-9, atol=1e-12)
    with g.case("two-mechanisms"):
        out = g.call("engine_violations", ["continuous_batching", "network_rtt"])
        expect_equal(out, {"continuous_batching": "one_in_service", "network_rtt": "none"},
                     name="engine_violations")
    with g.case("rejects-percent-utilization", group=INPUT_CHECKS):
        g.raises("ValueError", "ttft_quantile", 70, 0.25, 0.0)
