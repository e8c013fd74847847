"""Public cases for mbu-gap-diagnosis (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, DType, ModelConfig

BF16 = DType.BF16
TOY = ModelConfig(name="toy-4l", n_layers=4, hidden_size=1024, n_heads=8, n_kv_heads=2,
                  head_dim=128, ffn_size=2816, vocab_size=32000)


def _check(r, exp, ranking):
    for k, v in exp.items():
        if k == "complete_steps":
            expect_equal(r[k], v, name=k)
        else:
            expect_close(r[k], v, name=k, rtol=1e-6, atol=1e-9)
    expect_equal(list(r["ranking"]), ranking, name="ranking")


def grade(g: Grading) -> None:
    with g.case("floor-llama-3.1-8b-h100-b16x2048"):
        f = g.call("floor_ms", LLAMA_3_1_8B, H100_SXM, [2048] * 16, BF16, BF16)
        expect_close(f["weights_ms"], 4.480393093731343, name="weights_ms", rtol=1e-9)
        expect_close(f["kv_ms"], 1.2820797898507463, name="kv_ms", rtol=1e-9)
        expect_close(f["floor_ms"], 5.762472883582089, name="floor_ms", rtol=1e-9)
    with g.case("statement-example-graph-trace"):
        tr = decode_trace(LLAMA_3_1_8B, H100_SXM, [2048] * 16, n_steps=4, seed=1,
                          gemm_efficiency=0.85, attention_efficiency=0.7, gpu_gap_us=1.5,
                          sampling_kernel_us=20.0, schedule_us=1146.7, jitter=0.0)
        r = g.call("gap_buckets", tr, LLAMA_3_1_8B, H100_SXM, [2048] * 16, BF16, BF16)
        _check(r, {"complete_steps": 3, "step_ms": 9.604113000000517, "mbu": 0.6000005293129911,
                   "gemm_efficiency_ms": 0.7906679064295297, "attention_ms": 0.7094722101950298,
                   "non_gemm_kernels_ms": 0.486, "launch_gaps_ms": 0.5339999997938673,
                   "sampling_cpu_ms": 1.3215},
               ["sampling_cpu", "gemm_efficiency", "attention", "launch_gaps", "non_gemm_kernels"])
    with g.case("toy-eager-trace"):
        tr = decode_trace(TOY, H100_SXM, [4096] * 4, n_steps=3, seed=7, mode="eager")
        r = g.call("gap_buckets", tr, TOY, H100_SXM, [4096] * 4, BF16, BF16)
        _check(r, {"complete_steps": 2, "step_ms": 1.6619895000010727, "floor_ms": 0.06651414925373135,
                   "mbu": 0.04002079992303707, "gemm_efficiency_ms": 0.007745847476693657,
                   "attention_ms": 0.03370450328703916, "non_gemm_kernels_ms": 0.06601799999922514,
                   "launch_gaps_ms": 1.021863999992609, "sampling_cpu_ms": 0.46614299999177455},
               ["launch_gaps", "sampling_cpu", "non_gemm_kernels", "attention", "gemm_efficiency"])
    with g.case("rejects-single-step", group=INPUT_CHECKS):
        tr = decode_trace(TOY, H100_SXM, [64], n_steps=1, seed=0)
        g.raises("ValueError", "gap_buckets", tr, TOY, H100_SXM, [64], BF16, BF16)
