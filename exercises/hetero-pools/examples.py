"""Public cases for hetero-pools (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.specs import B200, H100_SXM

ROOM = 131072 * 70272          # one 128K-token BF16 MLA request of Kimi K2 per GPU
CFG = {"model": "moonshotai/Kimi-K2-Instruct", "weight_format": "fp8_block128",
       "kv_cache_dtype": "fp8_e4m3", "kv_scale": 1.0, "block_size": 64, "kv_layout": "NHD",
       "tp_head_split": 1, "rope_scaling": None, "hybrid_kv_manager": False}


def grade(g: Grading) -> None:
    with g.case("one-tb-node-counts"):
        expect_equal(g.call("min_nodes", B200, 1e12, 0.9, 4e9, ROOM, 8, True), 1, name="B200 nodes")
        expect_equal(g.call("min_nodes", H100_SXM, 1e12, 0.9, 4e9, ROOM, 8, True), 4, name="H100 nodes (pow2)")
        expect_equal(g.call("min_nodes", H100_SXM, 1e12, 0.9, 4e9, ROOM, 8, False), 3, name="H100 nodes (any)")
    with g.case("roles"):
        r = g.call("assign_roles", {"H100": H100_SXM, "B200": B200}, 1e12, 0.9, 4e9, ROOM, 8, True)
        expect_equal([r["decode"], r["prefill"], r["decode_nodes"], r["prefill_nodes"]],
                     ["B200", "H100", 1, 4], name="roles")
    with g.case("decode-step-off-node"):
        expect_close(g.call("decode_step_ms", H100_SXM, 4, 1e12, 36.73e9, 0.8, 60, 155.0, 273.0),
                     51.045671641791046, name="step_ms", rtol=1e-9)
    with g.case("pool-sizes"):
        p = g.call("pool_sizes", 20.0, 8192, 1024, 163840.0, 10240.0, 4, 1)
        expect_equal([p["prefill_instances"], p["decode_instances"], p["prefill_nodes"], p["decode_nodes"]],
                     [1, 2, 4, 2], name="pools")
    with g.case("pd-mismatches"):
        other = dict(CFG, kv_cache_dtype="fp8", weight_format="nvfp4", kv_scale=0.5)
        expect_equal(g.call("pd_mismatches", CFG, other), ["kv_scale", "weight_format"], name="mismatches")
    with g.case("rejects-util-above-one", group=INPUT_CHECKS):
        g.raises("ValueError", "min_nodes", H100_SXM, 1e12, 1.5, 4e9, ROOM, 8, True)
