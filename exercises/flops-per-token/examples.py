"""Public cases for flops-per-token (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import LLAMA_3_1_8B, ModelConfig

TOY = ModelConfig(name="toy", n_layers=2, hidden_size=64, n_heads=4, n_kv_heads=2, head_dim=16,
                  ffn_size=128, vocab_size=100, tied_embeddings=True)


def grade(g: Grading) -> None:
    with g.case("llama-3.1-8b-params"):
        p = g.call("param_counts", LLAMA_3_1_8B)
        expect_equal(p["total"], 8_030_261_248, name="total")
        expect_equal(p["active_matmul"], 7_504_658_432, name="active_matmul")
        expect_equal(p["embedding"], 525_336_576, name="embedding")
    with g.case("llama-3.1-8b-flops-8k"):
        f = g.call("flops_per_token", LLAMA_3_1_8B, 8192)
        expect_close(f["weights"], 15_009_316_864, name="weights", rtol=1e-9)
        expect_close(f["attention"], 4_294_967_296, name="attention", rtol=1e-9)
        expect_close(f["total"], 19_304_284_160, name="total", rtol=1e-9)
    with g.case("llama-3.1-8b-crossover"):
        expect_equal(g.call("attention_crossover_context", LLAMA_3_1_8B), 28_628)
    with g.case("toy-tied"):
        p = g.call("param_counts", TOY)
        expect_equal(p, {"embedding": 6400, "lm_head": 0, "attention": 24576, "mlp": 49152,
                         "norm": 320, "total": 80448, "active_matmul": 80128})
        f = g.call("flops_per_token", TOY, 10)
        expect_close(f["total"], 165_376, name="total", rtol=1e-9)
        expect_equal(g.call("attention_crossover_context", TOY), 313)
    with g.case("rejects-context-0", group=INPUT_CHECKS):
        g.raises("ValueError", "flops_per_token", TOY, 0)
