"""Public cases for speculative-decoding-basics (literal expected values)."""

from fractions import Fraction

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel
from inferprep.specs import H100_SXM, LLAMA_3_1_70B


def grade(g: Grading) -> None:
    with g.case("tokens-alpha-0.8-g4"):
        expect_close(g.call("expected_tokens", 0.8, 4), 3.3616, name="expected_tokens", rtol=1e-9)
    with g.case("tokens-alpha-1-g3"):
        expect_close(g.call("expected_tokens", 1.0, 3), 4.0, name="expected_tokens", rtol=1e-9)
    with g.case("dist-three-token-example"):
        out = g.call("emitted_distribution", ["1/2", "3/10", "1/5"], ["1/5", "1/2", "3/10"])
        exp = {"alpha": "7/10", "accepted": ["1/5", "3/10", "1/5"],
               "resampled": ["3/10", "0", "0"], "emitted": ["1/2", "3/10", "1/5"]}
        expect_equal(sorted(out), sorted(exp), name="keys")
        for k, v in exp.items():   # compared as fractions: "2/4" would equal "1/2"
            got = [Fraction(x) for x in out[k]] if k != "alpha" else Fraction(out[k])
            want = [Fraction(x) for x in v] if k != "alpha" else Fraction(v)
            expect_equal(got, want, name=f"[{k!r}]")
    with g.case("spare-70b-tp8-h100-peak-g4"):
        out = g.call("spare_compute_batch", StepModel(LLAMA_3_1_70B, H100_SXM, 8), 4)
        expect_close(out["knee_tokens"], 295.34328358208955, name="['knee_tokens']", rtol=1e-9)
        expect_equal(out["max_batch"], 59, name="['max_batch']")
    with g.case("spare-70b-tp8-h100-s-spec-g4"):
        sm = StepModel(LLAMA_3_1_70B, H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
        out = g.call("spare_compute_batch", sm, 4)
        expect_close(out["knee_tokens"], 221.50746268656715, name="['knee_tokens']", rtol=1e-9)
        expect_equal(out["max_batch"], 44, name="['max_batch']")
    with g.case("rejects-alpha-above-one", group=INPUT_CHECKS):
        g.raises("ValueError", "expected_tokens", 1.5, 3)
