"""Public cases for voice-latency-budget (literal expected values): the statement's example."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel
from inferprep.specs import H100_SXM, LLAMA_3_1_8B

# S-8B: Llama 3.1 8B, BF16, one H100 SXM
S_8B = StepModel(LLAMA_3_1_8B, H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
LINES = {"capture": 20, "network_rtt": 30, "endpoint": 100, "asr": 15, "tts": 30, "playout": 20}
TURN = {"ctx": 2048, "new_tokens": 64, "cached_tokens": 2048, "clause_tokens": 8}
TRAFFIC = {"calls": 10_000, "turn_interval_s": 8.0, "tokens_per_turn": 60, "rho": 0.7}


def grade(g: Grading) -> None:
    with g.case("budget-300ms"):
        r = g.call("budget_lines", 300, LINES)
        expect_close(r["llm_share_ms"], 85.0, name="llm_share_ms", rtol=1e-9)
        expect_equal(r["largest_line"], "endpoint", name="largest_line")
        expect_equal(r["largest_is_model"], False, name="largest_is_model")
    with g.case("first-clause-8b-batch-16"):
        r = g.call("first_clause", S_8B, 16, TURN)
        expect_close(r["ttft_ms"], 9.244778052071723, name="ttft_ms", rtol=1e-9)
        expect_close(r["tpot_ms"], 9.203873623880598, name="tpot_ms", rtol=1e-9)
        expect_close(r["first_clause_ms"], 73.6718934192359, name="first_clause_ms", rtol=1e-9)
    with g.case("first-clause-8b-batch-32"):
        r = g.call("first_clause", S_8B, 32, TURN)
        expect_close(r["first_clause_ms"], 86.49895147296726, name="first_clause_ms", rtol=1e-9)
    with g.case("tier-8b-85ms-reserve-10ms"):
        r = g.call("size_llm_tier", S_8B, 85.0, 10.0, TURN, 256, TRAFFIC)
        expect_equal(r["b_max"], 17, name="b_max")
        expect_close(r["tpot_ms"], 9.304085014925374, name="tpot_ms", rtol=1e-9)
        expect_close(r["first_clause_ms"], 74.47358454759411, name="first_clause_ms", rtol=1e-9)
        expect_close(r["concurrent_turns"], 697.806376119403, name="concurrent_turns", rtol=1e-9)
        expect_equal(r["replicas"], 59, name="replicas")
        expect_equal(r["gpus"], 59, name="gpus")
    with g.case("rejects-missing-line", group=INPUT_CHECKS):
        g.raises("ValueError", "budget_lines", 300, {k: v for k, v in LINES.items() if k != "endpoint"})
