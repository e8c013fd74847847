"""Public cases for decode-floor (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, MIXTRAL_8X7B, DType

BF16 = DType.BF16


def grade(g: Grading) -> None:
    with g.case("llama-3.1-8b-h100-batch-1"):
        f = g.call("decode_floor", LLAMA_3_1_8B, H100_SXM, [1], BF16, BF16)
        expect_close(f["weight_bytes"], 15_009_316_864, name="weight_bytes", rtol=1e-9)
        expect_close(f["kv_bytes"], 131_072, name="kv_bytes", rtol=1e-9)
        expect_close(f["floor_ms"], 4.480432219701493, name="floor_ms", rtol=1e-9)
    with g.case("llama-3.1-8b-h100-batch-32-8k"):
        f = g.call("decode_floor", LLAMA_3_1_8B, H100_SXM, [8192] * 32, BF16, BF16)
        expect_close(f["kv_bytes"], 34_359_738_368, name="kv_bytes", rtol=1e-9)
        expect_close(f["floor_ms"], 14.737031412537313, name="floor_ms", rtol=1e-9)
    with g.case("llama-3.1-8b-h100-gaps"):
        r = g.call("decode_gaps", LLAMA_3_1_8B, H100_SXM, [4096] * 16, BF16, BF16, 0.8, 0.5)
        expect_close(r["weights_ms"], 4.480393093731343, name="weights_ms", rtol=1e-9)
        expect_close(r["kv_ms"], 2.5641595797014927, name="kv_ms", rtol=1e-9)
        expect_close(r["bandwidth_gap_ms"], 1.7611381683582081, name="bandwidth_gap_ms", rtol=1e-9)
        expect_close(r["step_ms"], 9.305690841791044, name="step_ms", rtol=1e-9)
        expect_equal(r["largest_gap"], "kv", name="largest_gap")
    with g.case("rejects-moe", group=INPUT_CHECKS):
        g.raises("ValueError", "decode_floor", MIXTRAL_8X7B, H100_SXM, [1], BF16, BF16)
