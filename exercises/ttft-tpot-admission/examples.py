"""Public cases for ttft-tpot-admission (literal expected values)."""

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal

# S-serve: Llama 3.3 70B (the LLAMA_3_1_70B table), 8 x H100 SXM, BF16, mfu 0.40, mbu 0.80, 3 ms.
from inferprep.sim.step_model import StepModel

S_SERVE = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.40, mbu=0.80, t_fixed_s=0.003)
D64 = [2048] * 64


def grade(g: Grading) -> None:
    with g.case("max-chunk-tpot-50ms-64-decoders"):
        for prefix, exp in ((0, 966), (8192, 837), (32768, 597), (100_000, 334)):
            expect_equal(g.call("max_chunk", S_SERVE, 0.05, D64, prefix), exp, name=f"max_chunk(prefix={prefix})")
    with g.case("finish-times-lone-prompts"):
        for P, exp in ((8192, 0.46161885281915943), (32768, 2.213060820917376)):
            out = g.call("prefill_finish_times", S_SERVE, 0.05, D64, [P])
            expect_equal(len(out), 1, name="number of finish times")
            expect_close(out[0], exp, name=f"finish time of a {P}-token prompt", rtol=1e-9)
    with g.case("admit-behind-ten-2k-prompts"):
        out = g.call("admit", S_SERVE, 0.05, 1.5, D64, [2048] * 10, 2048, [])
        expect_equal(out["decision"], "admit", name="decision")
        expect_close(out["projected_ttft_s"], 1.251097908246981, name="projected_ttft_s", rtol=1e-9)
        expect_equal(out["remedy"], "admit", name="remedy")
    with g.case("backlog-behind-thirty-2k-prompts"):
        out = g.call("admit", S_SERVE, 0.05, 1.5, D64, [2048] * 30, 2048, [])
        expect_equal(out["decision"], "backlog", name="decision")
        expect_equal(out["remedy"], "retry_after", name="remedy")
        expect_close(out["retry_after_s"], 2.025821377786947, name="retry_after_s", rtol=1e-9)
        expect_equal(out["replica"], None, name="replica")
    with g.case("rejects-zero-tpot", group=INPUT_CHECKS):
        g.raises("ValueError", "max_chunk", S_SERVE, 0.0, D64, 0)
