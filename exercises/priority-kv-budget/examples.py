"""Public cases for priority-kv-budget (literal expected values): the statement's examples."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.step_model import StepModel
from inferprep.specs import H100_SXM, LLAMA_3_1_70B

# S-spec: Llama 3.3 70B (the LLAMA_3_1_70B shape), BF16, TP8 on H100 SXM
S_SPEC = StepModel(LLAMA_3_1_70B, H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
POOL = 1_235_951


def grade(g: Grading) -> None:
    with g.case("kv-cost-s-spec"):
        expect_close(g.call("kv_cost_per_token_s", S_SPEC), 1.528358208955224e-08,
                     name="kv_cost_per_token_s", rtol=1e-9)
    with g.case("budget-s-spec-20ms-ctx8192"):
        r = g.call("batch_kv_budget", S_SPEC, 0.020, [4096] * 64, 8192, POOL)
        expect_equal(r["binding"], "tpot", name="binding")
        expect_equal(r["max_batch_seqs"], 51, name="max_batch_seqs")
        expect_equal(r["kv_tokens"], 417_843, name="kv_tokens")
        expect_close(r["kv_bytes"], 136_918_794_240.0, name="kv_bytes", rtol=1e-9)
        expect_close(r["base_tpot_s"], 0.013490846376119407, name="base_tpot_s", rtol=1e-9)
        expect_close(r["tpot_at_budget_s"], 0.019876984167164186, name="tpot_at_budget_s", rtol=1e-9)
    with g.case("budget-s-spec-20ms-ctx2048"):
        r = g.call("batch_kv_budget", S_SPEC, 0.020, [4096] * 64, 2048, POOL)
        expect_equal(r["max_batch_seqs"], 183, name="max_batch_seqs")
        expect_equal(r["kv_tokens"], 374_967, name="kv_tokens")
    with g.case("budget-s-spec-40ms-pool-binds"):
        r = g.call("batch_kv_budget", S_SPEC, 0.040, [4096] * 64, 8192, POOL)
        expect_equal(r["binding"], "pool", name="binding")
        expect_equal(r["max_batch_seqs"], 118, name="max_batch_seqs")
    with g.case("admit-final-kv-tie"):
        running = [(8000, 100, 192)] * 50          # 50 x 8,192 final tokens reserved
        expect_equal(g.call("admit_batch_request", 417_792, running, 8000, 192), True, name="admit")
        expect_equal(g.call("admit_batch_request", 417_791, running, 8000, 192), False, name="admit")
    with g.case("guard-s-spec"):
        mixed = [8192] * 40 + [32768] * 10 + [2048] * 60
        r = g.call("tpot_guard", S_SPEC, 0.020, [4096] * 64, mixed, 600_000)
        expect_close(r["tpot_before_s"], 0.025386822495522373, name="tpot_before_s", rtol=1e-9)
        expect_equal(list(r["engine_preempted"]), [], name="engine_preempted")
        expect_equal(list(r["policy_preempted"]), list(range(36, 50)), name="policy_preempted")
        expect_close(r["tpot_after_policy_s"], 0.01987767192835818, name="tpot_after_policy_s", rtol=1e-9)
        expect_equal(r["meets_target"], True, name="meets_target")
    with g.case("rejects-zero-target", group=INPUT_CHECKS):
        g.raises("ValueError", "batch_kv_budget", S_SPEC, 0.0, [4096], 8192, POOL)
