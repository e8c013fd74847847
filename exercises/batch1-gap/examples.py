"""Public cases for batch1-gap (literal expected values)."""

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, DType, ModelConfig

BF16 = DType.BF16
TOY = ModelConfig(name="toy-4l", n_layers=4, hidden_size=1024, n_heads=8, n_kv_heads=2,
                  head_dim=128, ffn_size=2816, vocab_size=32000)
KW = dict(n_steps=4, seed=2, attention_efficiency=0.5, small_kernel_us=2.5, sampling_kernel_us=10.0,
          schedule_us=900.0, cpu_sampling_us=250.0, jitter=0.0)


def _check(r, exp):
    for k, v in exp.items():
        if isinstance(v, float):
            expect_close(r[k], v, name=k, rtol=1e-6, atol=1e-9)
        else:
            expect_equal(r[k] if not isinstance(v, list) else list(r[k]), v, name=k)


def grade(g: Grading) -> None:
    with g.case("statement-example-eager"):
        tr = decode_trace(LLAMA_3_1_8B, H100_SXM, [1024], mode="eager", dispatch_us=22.79, **KW)
        r = g.call("batch1_attribution", tr, LLAMA_3_1_8B, H100_SXM, 1024, BF16, BF16)
        _check(r, {"complete_steps": 3, "step_ms": 11.301300999999048, "floor_ms": 4.520458087164179,
                   "launch_overhead_ms": 4.355112000301481, "cpu_gaps_ms": 1.0, "sync_ms": 0.024,
                   "small_unfused_kernels_ms": 0.405, "sampling_ms": 0.022,
                   "kernel_efficiency_ms": 0.9747309125482883,
                   "ranking": ["launch_overhead", "cpu_gaps", "kernel_efficiency",
                               "small_unfused_kernels", "sync", "sampling"],
                   "uses_cuda_graphs": False, "first_fix": "cuda_graphs"})
    with g.case("statement-example-graphs"):
        tr = decode_trace(LLAMA_3_1_8B, H100_SXM, [1024], mode="graph", **KW)
        r = g.call("batch1_attribution", tr, LLAMA_3_1_8B, H100_SXM, 1024, BF16, BF16)
        _check(r, {"complete_steps": 3, "step_ms": 7.310489000002543,
                   "launch_overhead_ms": 0.0103, "cpu_gaps_ms": 1.002, "sync_ms": 0.358,
                   "sampling_ms": 0.04, "uses_cuda_graphs": True,
                   "first_fix": "move_host_work_off_critical_path"})
    with g.case("toy-eager-d2h-logits"):
        tr = decode_trace(TOY, H100_SXM, [2048], n_steps=3, seed=7, mode="eager", d2h_logits=True,
                          cpu_sampling_us=400.0)
        r = g.call("batch1_attribution", tr, TOY, H100_SXM, 2048, BF16, BF16)
        _check(r, {"complete_steps": 2, "step_ms": 2.0261160000041127,
                   "launch_overhead_ms": 1.0512840000092982, "cpu_gaps_ms": 0.39484400003403425,
                   "sync_ms": 0.025107999995350835, "small_unfused_kernels_ms": 0.06603849998116493,
                   "sampling_ms": 0.4101625000014901, "kernel_efficiency_ms": 0.029693285355908584,
                   "first_fix": "cuda_graphs"})
    with g.case("rejects-context-list", group=INPUT_CHECKS):
        tr = decode_trace(TOY, H100_SXM, [64], n_steps=2, seed=0)
        g.raises("ValueError", "batch1_attribution", tr, TOY, H100_SXM, [64], BF16, BF16)
