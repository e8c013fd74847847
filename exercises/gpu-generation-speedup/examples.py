from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import H100_SXM, H200_SXM, DType


def grade(g: Grading) -> None:
    with g.case("llama-8b-h100-to-h200"):
        r = g.call("generation_speedup", H100_SXM, H200_SXM, DType.BF16, 15_009_316_864, 131072, 4096,
                   15_009_316_864, 0.9, 4e9)
        expect_close(r["compute"], 1.0, rtol=1e-9)
        expect_close(r["bandwidth"], 4.8 / 3.35, rtol=1e-9)
        expect_equal(r["max_batch_old"], 98)
        expect_equal(r["max_batch_new"], 200)
        expect_close(r["capacity"], 1.6157336648411489, rtol=1e-9)
        expect_equal(r["largest"], "capacity")
    with g.case("rejects-model-that-does-not-fit", group=INPUT_CHECKS):
        g.raises("ValueError", "generation_speedup", H100_SXM, H200_SXM, DType.BF16, 141e9, 327680, 4096,
                 141e9, 0.9, 4e9)
