"""Public cases for kv-capacity (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import LLAMA_3_1_70B, DType, ModelConfig

# A model of the Qwen3-0.6B shape (Qwen/Qwen3-0.6B config.json): 28 layers, 8 KV heads of 128.
QWEN3_SHAPE = ModelConfig(name="qwen3-0.6b-shape", n_layers=28, hidden_size=1024, n_heads=16,
                          n_kv_heads=8, head_dim=128, ffn_size=3072, vocab_size=151936,
                          tied_embeddings=True, max_context=40960)
H100_REPORTED = 85_029_615_043          # 79.19 GiB, as PyTorch reports an H100 80GB


def _expect(out, exp):
    expect_equal(sorted(out) if isinstance(out, dict) else out, sorted(exp), name="keys")
    for k, v in exp.items():
        if isinstance(v, float):
            expect_close(out[k], v, name=f"[{k!r}]", rtol=1e-12)
        else:
            expect_equal(out[k], v, name=f"[{k!r}]")


def grade(g: Grading) -> None:
    with g.case("vllm-log-h100-qwen3-shape"):
        out = g.call("kv_capacity", H100_REPORTED, 0.8, 1_202_590_843, 246_960_620, 171_798_692, 0,
                     QWEN3_SHAPE, 1, DType.BF16, 16, 8192, 256)
        _expect(out, {"requested_bytes": 68_023_692_035, "available_kv_bytes": 66_402_341_880,
                      "kv_heads_per_gpu": 8, "kv_bytes_per_token_per_gpu": 114_688.0,
                      "page_bytes": 1_835_008.0, "num_blocks": 36_186, "blocks_per_seq": 512,
                      "max_seqs": 70, "max_seqs_effective": 70,
                      "vllm_max_concurrency": 70.67578125, "binding": "kv_pool"})
    with g.case("llama-3.1-70b-tp16-heads-replicate"):
        out = g.call("kv_capacity", H100_REPORTED, 0.9, 8_819_048_448, 2 * 2**30, 2**29, 2**30,
                     LLAMA_3_1_70B, 16, DType.BF16, 16, 4001, 256)
        _expect(out, {"requested_bytes": 76_526_653_539, "available_kv_bytes": 63_949_508_707,
                      "kv_heads_per_gpu": 1, "kv_bytes_per_token_per_gpu": 40_960.0,
                      "page_bytes": 655_360.0, "num_blocks": 97_579, "blocks_per_seq": 251,
                      "max_seqs": 388, "max_seqs_effective": 256,
                      "vllm_max_concurrency": 97_579 / 251, "binding": "max_num_seqs"})
    with g.case("ceiling-reasons-is-a-sorted-list"):
        out = g.call("ceiling_reasons")
        expect_equal(isinstance(out, list) and out == sorted(out), True, name="sorted list")
    with g.case("rejects-tp-3-with-8-kv-heads", group=INPUT_CHECKS):
        g.raises("ValueError", "kv_capacity", H100_REPORTED, 0.9, 2 * 10**9, 2**30, 2**29, 0,
                 ModelConfig(name="made-up", n_layers=4, hidden_size=1536, n_heads=24, n_kv_heads=8,
                             head_dim=64, ffn_size=4096, vocab_size=1000), 3, DType.BF16, 16, 100, 8)
