"""Public cases for spec-decode-accounting (literal expected values)."""

import dataclasses

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel
from inferprep.specs import H100_SXM, LLAMA_3_1_70B

# S-spec preset and its EAGLE-style draft head (one decoder layer + the LM head, 0.2 ms fixed)
TARGET = StepModel(LLAMA_3_1_70B, H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
EAGLE = dataclasses.replace(TARGET, model=dataclasses.replace(LLAMA_3_1_70B, n_layers=1),
                            t_fixed_s=0.0002)
POOL = 1_235_951


def grade(g: Grading) -> None:
    with g.case("schedule-truncates-drafts"):
        out = g.call("schedule_running", 12, [4, 4, 4])
        expect_equal(out, {"scheduled_tokens": [5, 5, 2], "scheduled_drafts": [4, 4, 1],
                           "tokens_used": 12, "budget_left": 0})
    with g.case("schedule-vllm-server-default-1024x4"):
        out = g.call("schedule_running", 8192, [4] * 1024)
        expect_equal(out["budget_left"], 3072, name="['budget_left']")
    with g.case("rollback-70b-c1000-g4-a1"):
        out = g.call("rollback_trace", 1000, 63, 16, 0, 327680, [(4, 1)])
        expect_equal(len(out), 1, name="steps")
        for k, v in {"num_computed_tokens": 1002, "tokens_emitted": 2, "num_rejected": 3,
                     "blocks_held": 63, "stale_slots": 3}.items():
            expect_equal(out[0][k], v, name=f"[{k!r}]")
        expect_close(out[0]["wasted_kv_bytes"], 983040, name="['wasted_kv_bytes']", rtol=1e-9)
    with g.case("step-s-spec-b64-c512-g4"):
        out = g.call("spec_step", TARGET, EAGLE, 64, 512, 4, 0.8)
        for k, v in {"plain_s": 0.009985159450746267, "verify_s": 0.012871879895127152,
                     "draft_s": 0.0015363996656716419, "spec_s": 0.014408279560798794,
                     "speedup": 2.3296405284190467}.items():
            expect_close(out[k], v, name=f"[{k!r}]", rtol=1e-9)
        expect_equal(out["plain_gemm_bound"], "memory", name="['plain_gemm_bound']")
        expect_equal(out["verify_gemm_bound"], "compute", name="['verify_gemm_bound']")
    with g.case("losing-s-spec-c512-g4"):
        expect_equal(g.call("losing_batch", TARGET, EAGLE, 512, 4, 0.8, POOL),
                     {"max_batch": 2390, "losing_batch": 214})
    with g.case("losing-s-spec-c8192-g4"):
        expect_equal(g.call("losing_batch", TARGET, EAGLE, 8192, 4, 0.8, POOL),
                     {"max_batch": 150, "losing_batch": None})
    with g.case("rejects-accepted-above-drafts", group=INPUT_CHECKS):
        g.raises("ValueError", "rollback_trace", 100, 7, 16, 0, 131072, [(2, 3)])
