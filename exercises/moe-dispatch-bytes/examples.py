"""Public cases for moe-dispatch-bytes (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import DEEPSEEK_V3, LLAMA_3_1_8B, ModelConfig

TOY = ModelConfig(name="moe-toy", n_layers=6, hidden_size=256, n_heads=4, n_kv_heads=4, head_dim=64,
                  ffn_size=1024, vocab_size=1000, n_routed_experts=16, n_shared_experts=1,
                  experts_per_token=3, moe_ffn_size=128, first_dense_layers=1,
                  n_expert_groups=4, topk_expert_groups=2)


def grade(g: Grading) -> None:
    with g.case("deepseek-v3-payload"):
        p = g.call("payload_bytes", DEEPSEEK_V3, "fp8_block128", False)
        expect_equal(p["moe_layers"], 58, name="moe_layers")
        expect_close(p["dispatch_copy_bytes"], 7392, name="dispatch_copy_bytes", rtol=1e-12)
        expect_close(p["combine_copy_bytes"], 14336, name="combine_copy_bytes", rtol=1e-12)
        expect_close(p["per_token_per_layer"], 173824, name="per_token_per_layer", rtol=1e-12)
        expect_close(p["per_token_per_step"], 10081792, name="per_token_per_step", rtol=1e-12)
    with g.case("deepseek-v3-payload-low-latency"):
        p = g.call("payload_bytes", DEEPSEEK_V3, "fp8_block128", True)
        expect_close(p["per_token_per_layer"], 173952, name="per_token_per_layer", rtol=1e-12)
    with g.case("toy-routing"):
        row = [1.0, 0, 0, 0, 0.75, 0.75, 0, 0, 0.625, 0.625, 0, 0, 0.875, 0.0625, 0, 0]
        expect_equal(g.call("route_experts", TOY, [row], True), [[4, 5, 8]], name="limited")
        expect_equal(g.call("route_experts", TOY, [row], False), [[0, 12, 4]], name="unrestricted")
    with g.case("worked-example-links"):
        ids, src = [[0, 17, 18, 130, 131, 200, 250, 255]], [3]
        r = g.call("link_traffic", DEEPSEEK_V3, ids, src, 16, 8, "per_expert", "fp8_block128")
        expect_equal([r["nic_copies"], r["nvlink_copies"], r["local_copies"]], [5, 3, 0], name="per_expert copies")
        expect_close(r["nic_bytes"], 108720, name="nic_bytes", rtol=1e-12)
        r = g.call("link_traffic", DEEPSEEK_V3, ids, src, 16, 8, "node_dedup", "fp8_block128")
        expect_equal([r["nic_copies"], r["nvlink_copies"], r["local_copies"]], [1, 5, 0], name="node_dedup copies")
        expect_close(r["nvlink_bytes"], 108640, name="nvlink_bytes", rtol=1e-12)
    with g.case("rejects-dense-model", group=INPUT_CHECKS):
        g.raises("ValueError", "payload_bytes", LLAMA_3_1_8B, "fp8_block128", False)
