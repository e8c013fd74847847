"""Public cases for million-token-plan (literal expected values)."""

import dataclasses

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_70B, DType

BF16 = DType.BF16
M = 2**20


def grade(g: Grading) -> None:
    with g.case("llama-3.1-70b-kv-2^20"):
        expect_close(g.call("kv_bytes_per_request", LLAMA_3_1_70B, M, BF16), 343_597_383_680,
                     name="kv bytes", rtol=1e-9)
    with g.case("llama-3.1-70b-prefill-2^20"):
        r = g.call("prefill_flops", LLAMA_3_1_70B, M)
        expect_close(r["attention_share"], 0.9081512126587589, name="attention_share", rtol=1e-9)
        expect_close(r["total"], 1.586908914572591e18, name="total", rtol=1e-9)
    with g.case("llama-3.1-70b-8xh100-tp8"):
        r = g.call("plan_fits", LLAMA_3_1_70B, H100_SXM, 8, 8, M, BF16, BF16, 0.9, 4e9)
        expect_equal(r["cp"], 1, name="cp")
        expect_equal(r["kv_heads_per_gpu"], 1, name="kv_heads_per_gpu")
        expect_close(r["weights_per_gpu"], 17_638_426_624, name="weights_per_gpu", rtol=1e-9)
        expect_close(r["kv_per_gpu"], 42_949_672_960, name="kv_per_gpu", rtol=1e-9)
        expect_close(r["need"], 64_588_099_584, name="need", rtol=1e-9)
        expect_close(r["budget"], 72e9, name="budget", rtol=1e-9)
        expect_equal(r["fits"], True, name="fits")
    with g.case("mha-needs-context-parallel"):
        mha = dataclasses.replace(LLAMA_3_1_70B, n_kv_heads=64)
        r = g.call("replacement", mha, H100_SXM, 8, 8, M, BF16, BF16, 0.9, 4e9)
        expect_equal(r, {"fits": False, "replacement": "context_parallel", "n_gpus": 64}, name="replacement")
    with g.case("rejects-gpus-not-multiple-of-tp", group=INPUT_CHECKS):
        g.raises("ValueError", "plan_fits", LLAMA_3_1_70B, H100_SXM, 12, 8, M, BF16, BF16, 0.9, 4e9)
