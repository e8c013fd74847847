"""Public cases for disagg-kv-transfer (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import A100_SXM_80GB, DEEPSEEK_V3, H100_SXM, LLAMA_3_1_8B, DType

BF16, FP8 = DType.BF16, DType.FP8


def grade(g: Grading) -> None:
    with g.case("kv-bytes-llama-3.1-8b-and-deepseek-v3"):
        expect_close(g.call("kv_bytes_per_token", LLAMA_3_1_8B, BF16), 131_072, name="gqa", rtol=1e-9)
        expect_close(g.call("kv_bytes_per_token", DEEPSEEK_V3, BF16), 70_272, name="mla", rtol=1e-9)
    with g.case("prefill-flops-llama-3.1-8b"):
        expect_close(g.call("prefill_flops_per_token", LLAMA_3_1_8B), 13_958_643_712,
                     name="no prompt_len", rtol=1e-9)
        expect_close(g.call("prefill_flops_per_token", LLAMA_3_1_8B, 8192), 16_106_517_760,
                     name="prompt_len 8192", rtol=1e-9)
    with g.case("llama-3.1-8b-one-h100-bf16"):
        r = g.call("kv_transfer_rate", LLAMA_3_1_8B, H100_SXM, 1, BF16, 0.5, BF16)
        expect_close(r["prefill_s_per_token"], 2.821638106327067e-05, name="prefill_s_per_token", rtol=1e-9)
        expect_close(r["bytes_per_s_instance"], 4_645_244_891.826923, name="bytes_per_s_instance", rtol=1e-9)
        expect_close(r["nic_fraction"], 0.09290489783653846, name="nic_fraction", rtol=1e-9)
        expect_equal(r["verdict"], "ok", name="verdict")
    with g.case("llama-3.1-8b-eight-h100-fp8"):
        r = g.call("kv_transfer_rate", LLAMA_3_1_8B, H100_SXM, 8, FP8, 0.5, BF16)
        expect_close(r["bytes_per_s_instance"], 74_327_674_278.84616, name="bytes_per_s_instance", rtol=1e-9)
        expect_close(r["bytes_per_s_per_gpu"], 9_290_959_284.85577, name="bytes_per_s_per_gpu", rtol=1e-9)
        expect_close(r["min_link_gbps"], 74.32767427884616, name="min_link_gbps", rtol=1e-9)
        expect_equal(r["verdict"], "ok", name="verdict")
    with g.case("link-verdicts"):
        expect_equal(g.call("link_verdict", 9.29e9, 25), "breaks", name="25 Gb/s")
        expect_equal(g.call("link_verdict", 9.29e9, 400), "ok", name="400 Gb/s")
        expect_equal(g.call("link_verdict", 25e9, 400), "tight", name="exactly half of 400 Gb/s")
    with g.case("rejects-fp8-on-a100", group=INPUT_CHECKS):
        g.raises("ValueError", "kv_transfer_rate", LLAMA_3_1_8B, A100_SXM_80GB, 1, FP8, 0.5, BF16)
