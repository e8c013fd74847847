"""Hidden cases for batch1-gap.

Generated traces (inferprep.sim.chrome_trace, seeds drawn from g.salt) of batch-1 decode steps:
eager and CUDA-graph steps over tabled and made-up dense models (GQA, tied, MLA), the GPUs and
made-up bandwidths, weight/KV dtypes, contexts, 2 to 5 steps (truncated last step or not),
chosen so that every bucket leads somewhere (launches, host gaps, a D2H logits copy with CPU
sampling, mid-step .item() syncs, small kernels, slow GEMMs, a graph launch that is itself slow),
an MLA model with qk_nope != v_head_dim; hand-made traces for the host-state priorities, the tie
rule (equal buckets, and 0 vs 5e-10 ms inside the 1e-9 ms band), the kernel-class table (every
alternative needed), events with a step that are no kernels and non-"X" events, sampler and
operator names ("sampler.forward", "engine.step::bookkeep"), an eager trace with "graph" in
other names, the tie trace over the smallest models (one of everything, MLA of ranks 1); then
the input checks (each model field at 0, one routed expert among them).
"""

from __future__ import annotations

import dataclasses
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import DType, ModelConfig

BF16, FP8, INT4 = DType.BF16, DType.FP8, DType.INT4
BUCKETS = ("launch_overhead", "cpu_gaps", "sync", "small_unfused_kernels", "sampling",
           "kernel_efficiency")
FIXES = {"launch_overhead": "cuda_graphs", "cpu_gaps": "move_host_work_off_critical_path",
         "sync": "remove_sync", "small_unfused_kernels": "fuse_kernels",
         "sampling": "fused_gpu_sampling", "kernel_efficiency": "kernel_tuning"}
KEYS = ("complete_steps", "step_ms", "floor_ms") + tuple(b + "_ms" for b in BUCKETS) + \
    ("ranking", "uses_cuda_graphs", "first_fix")
RTOL, ATOL = 1e-6, 1e-9

TOY = ModelConfig(name="toy-gqa-12l", n_layers=12, hidden_size=2048, n_heads=16, n_kv_heads=4,
                  head_dim=128, ffn_size=5632, vocab_size=32000)
TIED = ModelConfig(name="tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                   head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MLA = ModelConfig(name="mla-dense", n_layers=10, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# qk_nope_head_dim != v_head_dim (and rope != 64): a formula that swaps them is off
MLA_V160 = ModelConfig(name="mla-rq0-v160", n_layers=6, hidden_size=2048, n_heads=16, n_kv_heads=16,
                       head_dim=224, ffn_size=10944, vocab_size=102400, kv_lora_rank=512,
                       qk_nope_head_dim=128, qk_rope_head_dim=96, v_head_dim=160)
TINY = ModelConfig(name="tiny-2l", n_layers=2, hidden_size=256, n_heads=4, n_kv_heads=2,
                   head_dim=64, ffn_size=512, vocab_size=1024)
# The smallest models the statement allows (one of everything; MLA of ranks 1), on a made-up
# 1 MB/s bus so that their floors (tens of bytes) are far above the 1e-9 ms tolerance.
ONE = ModelConfig(name="one-of-each", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1, head_dim=1,
                  ffn_size=1, vocab_size=1)
MLA_RANK_1 = ModelConfig(name="mla-rank-1", n_layers=1, hidden_size=8, n_heads=2, n_kv_heads=2,
                         head_dim=3, ffn_size=16, vocab_size=10, q_lora_rank=1, kv_lora_rank=1,
                         qk_nope_head_dim=2, qk_rope_head_dim=1, v_head_dim=3)
MB_PER_S = dataclasses.replace(specs.H100_SXM, name="made-up-1MB/s", hbm_bytes_per_s=1e6)
SLOW_GPU = dataclasses.replace(specs.H100_SXM, name="made-up-slow", hbm_bytes_per_s=1.234e12)
FAST_GPU = dataclasses.replace(specs.H100_SXM, name="made-up-fast", hbm_bytes_per_s=2.0e13)
HUGE_BW = dataclasses.replace(specs.H100_SXM, name="made-up-huge", hbm_bytes_per_s=2.0**50)


def _generated(rng: random.Random):
    """(case name, model, gpu, context_len, weight dtype, kv dtype, decode_trace kwargs)."""
    L8, H100 = specs.LLAMA_3_1_8B, specs.H100_SXM
    return [
        ("llama-8b-h100-eager-ctx1024", L8, H100, 1024, BF16, BF16,
         dict(n_steps=4, mode="eager", attention_efficiency=0.5, small_kernel_us=2.5,
              sampling_kernel_us=10.0, dispatch_us=22.79, schedule_us=900.0, cpu_sampling_us=250.0)),
        ("llama-8b-h100-graphs-ctx1024", L8, H100, 1024, BF16, BF16,
         dict(n_steps=4, attention_efficiency=0.5, small_kernel_us=2.5, sampling_kernel_us=10.0,
              schedule_us=200.0)),
        ("toy-eager-d2h-logits-cpu-sampling", TOY, H100, rng.randint(100, 4000), BF16, BF16,
         dict(n_steps=4, mode="eager", d2h_logits=True, cpu_sampling_us=3000.0, dispatch_us=8.0)),
        ("toy-eager-item-syncs", TOY, H100, rng.randint(100, 4000), BF16, BF16,
         dict(n_steps=3, mode="eager", item_sync_layers=(2, 5, 8), sync_wake_us=150.0,
              dispatch_us=3.0, launch_us=2.0, schedule_us=50.0, bookkeep_us=20.0)),
        ("toy-eager-python-gaps", TOY, SLOW_GPU, rng.randint(1, 500), BF16, FP8,
         dict(n_steps=3, mode="eager", python_gap_us=25.0, dispatch_us=5.0, launch_us=3.0)),
        ("toy-graphs-slow-graph-launch", TOY, H100, 64, BF16, BF16,
         dict(n_steps=4, graph_launch_us=2500.0, schedule_us=10.0, bookkeep_us=10.0)),
        ("mla-v160-fp8-h200-eager", MLA_V160, specs.H200_SXM, 8192, FP8, FP8,
         dict(n_steps=2, mode="eager")),
        ("toy-graphs-small-kernels", TOY, FAST_GPU, 2048, BF16, BF16,
         dict(n_steps=3, small_kernel_us=30.0, schedule_us=50.0, bookkeep_us=20.0)),
        ("tied-graphs-host-heavy", TIED, specs.B200, rng.randint(1000, 30000), INT4, BF16,
         dict(n_steps=4, schedule_us=5000.0, greedy=True)),
        ("llama-8b-graphs-slow-gemms", L8, specs.A100_SXM_80GB, 4096, BF16, BF16,
         dict(n_steps=3, gemm_efficiency=0.45, schedule_us=100.0)),
        ("mla-b200-eager-ordered", MLA, specs.B200, rng.randint(1, 100000), BF16, BF16,
         dict(n_steps=3, mode="eager", shuffle=False, extra_events=False, truncate_last=False)),
        ("toy-eager-two-steps", TOY, SLOW_GPU, 300, BF16, BF16,
         dict(n_steps=2, mode="eager", dispatch_us=12.0, greedy=True)),
    ]


def _x(cat, name, ts, dur, **args):
    pid = 0 if cat == "kernel" else 42
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid,
            "tid": 7 if cat == "kernel" else 42, "args": args}


def _priority_trace() -> dict:
    """Two complete steps whose GPU idle meets every host state and nesting case."""
    ev = []
    for step, b in ((0, 0.0), (1, 400.0), (2, 800.0)):
        ev.append(_x("cpu_op", f"ProfilerStep#{step}", b - 60.0, 400.0))      # other cpu_op
        ev += [
            _x("kernel", "nvjet_tst_64x8", b, 10.0, step=step),
            # idle [10, 30): launch op (10), its cudaLaunchKernel (5), no event (5)
            _x("cpu_op", "_C::rms_norm", b + 10.0, 15.0),
            _x("cuda_runtime", "cudaLaunchKernel", b + 20.0, 5.0, correlation=1),
            _x("kernel", "void vllm::rms_norm_kernel<c10::BFloat16>", b + 30.0, 2.0, step=step),
            # idle [32, 60): sync inside aten::item (20), cudaMemcpyAsync (4), Scheduler (4)
            _x("cpu_op", "aten::item", b + 32.0, 28.0),
            _x("cuda_runtime", "cudaMemcpyAsync", b + 32.0, 4.0, correlation=2),
            _x("cuda_runtime", "cudaStreamSynchronize", b + 36.0, 20.0),
            _x("cpu_op", "Scheduler.schedule", b + 56.0, 4.0),
            _x("kernel", "flash_fwd_splitkv_kernel", b + 60.0, 8.0, step=step),
            # idle [68, 100): Sample (12) containing aten::_softmax (8) and a launch (2);
            # blocking cudaMemcpy (6); cudaEventSynchronize inside Sample? no: inside Bookkeep (6)
            _x("cpu_op", "Sample", b + 68.0, 12.0),
            _x("cpu_op", "aten::_softmax", b + 70.0, 8.0),
            _x("cuda_runtime", "cudaLaunchKernel", b + 76.0, 2.0, correlation=3),
            _x("cuda_runtime", "cudaMemcpy", b + 80.0, 6.0),
            _x("cpu_op", "Bookkeep", b + 86.0, 14.0),
            _x("cuda_runtime", "cudaEventSynchronize", b + 88.0, 6.0),
            _x("kernel", "cunn_SoftMaxForward", b + 100.0, 4.0, step=step),
            # idle [104, 400): DeviceSynchronize (16), aten::mm (32), the rest: Profiler step
            _x("cuda_runtime", "cudaDeviceSynchronize", b + 104.0, 16.0),
            _x("cpu_op", "aten::mm", b + 120.0, 32.0),
        ]
    ev = [e for e in ev if not (e["cat"] == "kernel" and e["ts"] > 830.0)]
    ev.append({"ph": "M", "name": "process_name", "pid": 42, "tid": 0, "args": {"name": "python"}})
    return {"traceEvents": ev[::-1]}


def _tie_trace() -> dict:
    """CUDA-graph steps where launch_overhead == cpu_gaps == 34 us (and sync == sampling == 0):
    ties in listed order, and the leading suspect is a launch that graphs cannot remove."""
    ev = []
    for step, b in ((0, 0.0), (1, 100.0), (2, 200.0)):
        ev += [_x("cuda_runtime", "cudaGraphLaunch", b - 34.0, 34.0, correlation=step),
               _x("kernel", "nvjet_tst_tile", b, 30.0, step=step),
               _x("cpu_op", "Bookkeep", b + 30.0, 8.0),
               _x("kernel", "act_and_mul_kernel", b + 38.0, 2.0, step=step),
               _x("cpu_op", "Scheduler.schedule", b + 40.0, 26.0)]
    return {"traceEvents": ev}


# Every alternative of every pattern is the only one that matches some row, and dropping it moves
# that row to another bucket (attention and GEMM share kernel_efficiency here, so no row relies
# on one of them to catch the other's name); plus the traps: "flash" alone, upper case.
CLASS_ROWS = [   # (name, duration us)
    ("void vllm::paged_attention_v2_kernel<c10::BFloat16, c10::BFloat16, 128, 16, 128>", 4.0),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", 4.5),
    ("fmha_v2_flash_attention_bf16_64_32_S_q_paged_kv_128_sm90_kernel", 3.25),
    ("BatchDecodeWithPagedKVCacheKernel", 2.25),
    ("void flash_mla_decode_kernel<__nv_bfloat16, 64, 576>(DecodingParams)", 5.5),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>", 1.5),   # not attention
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", 8.0),                        # no "gemm" in it
    ("cublasLt::splitKreduce_kernel", 1.0),
    ("void gemv2T_kernel_val<int, int, float>", 6.0),
    ("sm80_xmma_GEMM_bf16", 3.5),
    ("void cutlass::device_kernel<vllm::cutlass_3x_scaled_mm_sm90<cutlass::float_e4m3_t, "
     "cutlass::bfloat16_t>>(Params)", 7.25),                          # CUTLASS, no "gemm"
    ("triton_poi_fused_add_mul_0", 2.5),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>>>", 3.0),
    ("TOPK_TOPP_RENORM", 2.0),
    ("void vllm::top_k_per_row_kernel<float>", 1.75),
    ("my_top_p_filter", 1.0),
    ("void at::native::cunn_SoftMaxForward<4, float>", 2.0),
    ("flashinfer_sampling_kernel", 1.25),
    ("void flash::flash_fwd_splitkv_mla_kernel<576>", 6.0),
    # names that match two rows: the first row of the table wins, not the last
    ("fmha_fwd_online_softmax_bf16_sm90", 2.75),                      # attention, not sampling
    ("void cutlass::gemm::kernel::GemmSoftmax<cutlass::bfloat16_t>", 3.75),  # GEMM, not sampling
]


def _class_table_trace() -> dict:
    """Three steps of every table row (the last one cut short), 0.5 to 1.5 us apart."""
    ev = []
    for step, b in ((3, 1000.0), (4, 1200.0), (5, 1400.0)):
        t = b
        for i, (name, dur) in enumerate(CLASS_ROWS if step < 5 else CLASS_ROWS[:3]):
            ev.append(_x("kernel", name, t, dur, step=step))
            t += dur + 0.5 * (1 + i % 3)
    ev.append(_x("cpu_op", "Scheduler.schedule", 1150.0, 40.0))
    return {"traceEvents": ev[::-1]}


def _ignored_events_trace() -> dict:
    """Events that carry a step (and a dur) but are no kernels, and events whose "ph" is not "X":
    a gpu_memcpy and a cpu_op with a step inside the steps, a gpu_memcpy of a later step number,
    kernel and cuda_runtime events with "ph" "i"/"B". Only "X" events of the three categories."""
    ev = []
    for step, b in ((0, 0.0), (1, 100.0), (2, 200.0)):
        ev += [_x("kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", b, 20.0, step=step),
               _x("kernel", "flash_fwd_splitkv_kernel", b + 22.0, 10.0, step=step),
               _x("kernel", "rms_norm_kernel", b + 34.0, 2.0, step=step),
               _x("kernel", "argmax_kernel", b + 40.0, 3.0, step=step),
               _x("cpu_op", "_C::rms_norm", b + 30.0, 6.0),
               _x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", b + 45.0, 20.0, step=step),
               _x("cpu_op", "Bookkeep", b + 70.0, 12.0, step=step),
               dict(_x("kernel", "nvjet_tst_marker", b + 85.0, 6.0, step=step), ph="i", s="t"),
               dict(_x("kernel", "rms_norm_kernel", b + 37.0, 2.0, step=step), ph="B"),
               dict(_x("cuda_runtime", "cudaStreamSynchronize", b + 50.0, 10.0), ph="i", s="t")]
    ev = [e for e in ev if e["ts"] < 221.0]          # the profiler stopped inside step 2
    ev.append(_x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 150.0, 4.0, step=9))
    ev.append(dict(_x("kernel", "argmax_kernel", 60.0, 1.0, step=6), ph="i", s="t"))
    return {"traceEvents": ev[::-1]}


def _host_names_trace() -> dict:
    """Idle gaps each covered by one top-level host op: samplers not named "Sample" (any case,
    any place), names with "::" that are no dispatched operator, and one real operator."""
    ev = []
    for step, b in ((0, 0.0), (1, 200.0), (2, 400.0)):
        t = b
        ev.append(_x("kernel", "nvjet_tst_64x8", t, 10.0, step=step))
        t += 10.0
        for host, gap in (("sampler.forward", 7.0), ("Sampler.forward", 5.0),
                          ("vllm::sampler_step", 3.0), ("engine.step::bookkeep", 11.0),
                          ("#1 aten::mm", 13.0), ("_C::silu_and_mul", 4.0)):
            ev.append(_x("cpu_op", host, t, gap))
            t += gap
            ev.append(_x("kernel", "void vllm::rms_norm_kernel<c10::BFloat16>", t, 2.0, step=step))
            t += 2.0
    ev = [e for e in ev if e["ts"] < 405.0]
    return {"traceEvents": ev}


def _graph_named_op_trace() -> dict:
    """Eager steps (no cudaGraphLaunch) led by launch overhead, with a cpu_op, a kernel and a
    cuda_runtime call whose names contain "graph": graphs are not on, the fix is cuda_graphs."""
    ev = []
    for step, b in ((0, 0.0), (1, 120.0), (2, 240.0)):
        t = b
        for i in range(4):
            ev.append(_x("kernel", "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>", t,
                         3.0, step=step))
            ev += [_x("cpu_op", "_C::fused_add_rms_norm", t + 3.0, 15.0),
                   _x("cuda_runtime", "cudaLaunchKernel", t + 10.0, 8.0, correlation=4 * step + i)]
            t += 18.0
        ev.append(_x("kernel", "graph_coloring_argmax_kernel", t, 2.0, step=step))
        ev += [_x("cpu_op", "capture_graph_stats", t + 2.0, 30.0),
               _x("cuda_runtime", "cudaGraphGetNodes", t + 40.0, 2.0)]
    ev = [e for e in ev if e["ts"] < 245.0]
    return {"traceEvents": ev}


def _near_zero_tie_trace() -> dict:
    """launch_overhead 0 and sync 2^-21 us (4.8e-10 ms) per step: equal under the 1e-9 ms tie
    band, so launch_overhead (listed first) ranks first; a plain sort swaps them."""
    gap = 2.0 ** -21
    ev = []
    for step, b in ((0, 0.0), (1, 64.0), (2, 128.0)):
        ev += [_x("kernel", "nvjet_tst_64x8", b, 10.0, step=step),
               _x("cuda_runtime", "cudaStreamSynchronize", b + 8.0, 4.0),
               _x("kernel", "rms_norm_kernel", b + 10.0 + gap, 2.0, step=step),
               _x("kernel", "argmax_kernel", b + 12.0 + gap, 3.0, step=step),
               _x("cpu_op", "Scheduler.schedule", b + 16.0, 48.0)]
    return {"traceEvents": ev[::-1]}


def _near_tie_trace() -> dict:
    """launch_overhead 16 us and cpu_gaps 16 + 2^-21 us per step: nonzero buckets 4.8e-10 ms apart,
    a tie under the 1e-9 ms band, so launch_overhead (listed first) ranks first although
    cpu_gaps is the larger float; a tie test on one bucket alone, or on their sum, misses it."""
    gap = 2.0 ** -21
    ev = []
    for step, b in ((0, 0.0), (1, 64.0), (2, 128.0)):
        ev += [_x("kernel", "nvjet_tst_64x8", b, 10.0, step=step),
               _x("cuda_runtime", "cudaLaunchKernel", b + 10.0, 16.0, correlation=step),
               _x("kernel", "rms_norm_kernel", b + 26.0, 22.0 - gap, step=step),
               _x("cpu_op", "Scheduler.schedule", b + 48.0 - gap, 16.0 + gap)]
    return {"traceEvents": [e for e in ev if e["ts"] < 130.0][::-1]}


def _host_holes_trace() -> dict:
    """No ProfilerStep: the host is uninstrumented in places. The first idle gap [10, 30) begins
    before the first host event (a launch at 15); a launch call [31, 31.5) ends before the idle
    gap [32, 40) that follows it (no host event there: cpu_gaps); a 0 us kernel and a 0 us
    runtime call (allowed: dur >= 0) change nothing."""
    ev = []
    for step, b in ((0, 0.0), (1, 100.0), (2, 200.0)):
        ev += [_x("kernel", "nvjet_tst_64x8", b, 10.0, step=step),
               _x("cuda_runtime", "cudaLaunchKernel", b + 15.0, 10.0, correlation=3 * step),
               _x("kernel", "rms_norm_kernel", b + 30.0, 2.0, step=step),
               _x("cuda_runtime", "cudaLaunchKernel", b + 31.0, 0.5, correlation=3 * step + 1),
               _x("kernel", "argmax_kernel", b + 40.0, 3.0, step=step),
               _x("kernel", "void vllm::copy_blocks_kernel<int>", b + 45.0, 0.0, step=step),
               _x("cuda_runtime", "cudaPeekAtLastError", b + 50.0, 0.0),
               _x("cpu_op", "Sample", b + 60.0, 20.0),
               _x("cuda_runtime", "cudaStreamSynchronize", b + 85.0, 5.0)]
    return {"traceEvents": [e for e in ev if e["ts"] < 226.0][::-1]}


def check(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(KEYS):
        fail(f"expected a dict with exactly the keys {list(KEYS)}")
    expect_equal(out["complete_steps"], exp["complete_steps"], name="['complete_steps']")
    for k in KEYS[1:-3]:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL, atol=ATOL)
    rank = out["ranking"]
    if not isinstance(rank, (list, tuple)) or sorted(rank) != sorted(BUCKETS):
        fail(f"['ranking']: expected a list holding each of {list(BUCKETS)} once")
    for a, b in zip(rank, rank[1:]):
        va, vb = exp[a + "_ms"], exp[b + "_ms"]
        if vb > va + ATOL + RTOL * max(abs(va), abs(vb)):
            fail(f"['ranking']: {a!r} is ranked above {b!r}, but {b!r} is the larger bucket")
        if abs(va - vb) <= ATOL and BUCKETS.index(a) > BUCKETS.index(b):
            fail(f"['ranking']: {a!r} and {b!r} are equal; ties follow the listed order")
    expect_equal(out["uses_cuda_graphs"], exp["uses_cuda_graphs"], name="['uses_cuda_graphs']")
    first = rank[1] if rank[0] == "launch_overhead" and exp["uses_cuda_graphs"] else rank[0]
    if out["first_fix"] != FIXES[first]:
        fail("['first_fix']: not the fix of the leading suspect (see the mapping table and the "
             "CUDA-graph rule)")


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"batch1-gap:{g.salt}")
    for name, m, gpu, ctx, wd, kd, kw in _generated(rng):
        trace = decode_trace(m, gpu, [ctx], weight_dtype=wd, kv_dtype=kd,
                             seed=rng.randrange(2**31), **kw)
        with g.case(name):
            check(g.call("batch1_attribution", trace, m, gpu, ctx, wd, kd),
                  ref.batch1_attribution(trace, m, gpu, ctx, wd, kd))
    for name, trace in (("host-state-priorities", _priority_trace()), ("ranking-tie", _tie_trace()),
                        ("ranking-tie-near-zero", _near_zero_tie_trace()),
                        ("ranking-near-tie-nonzero", _near_tie_trace()),
                        ("host-holes-and-zero-durations", _host_holes_trace()),
                        ("kernel-class-table", _class_table_trace()),
                        ("ignored-events-with-steps", _ignored_events_trace()),
                        ("sampler-and-operator-names", _host_names_trace()),
                        ("eager-op-named-graph", _graph_named_op_trace())):
        with g.case(name):
            check(g.call("batch1_attribution", trace, TINY, HUGE_BW, 16, BF16, BF16),
                  ref.batch1_attribution(trace, TINY, HUGE_BW, 16, BF16, BF16))
    for m, ctx in ((ONE, 1), (MLA_RANK_1, 3)):
        with g.case(f"ranking-tie-{m.name}-model"):
            trace = _tie_trace()
            check(g.call("batch1_attribution", trace, m, MB_PER_S, ctx, BF16, BF16),
                  ref.batch1_attribution(trace, m, MB_PER_S, ctx, BF16, BF16))
    good = decode_trace(TOY, specs.H100_SXM, [64], n_steps=3, seed=5, mode="eager")
    one_step = decode_trace(TOY, specs.H100_SXM, [64], n_steps=1, seed=5, mode="eager")
    no_step = {"traceEvents": [dict(e, args={}) if e.get("cat") == "kernel" else e
                               for e in good["traceEvents"]]}
    bool_step = {"traceEvents": [dict(e, args=dict(e["args"], step=True))
                                 if e.get("cat") == "kernel" and e["args"].get("step") == 1 else e
                                 for e in good["traceEvents"]]}
    events_dict = {"traceEvents": {i: e for i, e in enumerate(good["traceEvents"])}}
    odd_heads = dataclasses.replace(TOY, name="gqa-16q-6kv", n_kv_heads=6)
    H = specs.H100_SXM
    for name, args in (("single-step-trace", (one_step, TOY, H, 64, BF16, BF16)),
                       ("kernel-without-step", (no_step, TOY, H, 64, BF16, BF16)),
                       ("bool-step", (bool_step, TOY, H, 64, BF16, BF16)),
                       ("bare-event-list", (good["traceEvents"], TOY, H, 64, BF16, BF16)),
                       ("trace-events-not-a-list", (events_dict, TOY, H, 64, BF16, BF16)),
                       ("heads-not-a-multiple-of-kv-heads", (good, odd_heads, H, 64, BF16, BF16)),
                       ("bool-context", (good, TOY, H, True, BF16, BF16)),
                       ("moe-model", (good, specs.MIXTRAL_8X7B, H, 64, BF16, BF16)),
                       ("zero-context", (good, TOY, H, 0, BF16, BF16)),
                       ("context-as-list", (good, TOY, H, [64], BF16, BF16))):
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "batch1_attribution", *args)
    for field in ("n_layers", "hidden_size", "n_heads", "vocab_size", "n_kv_heads", "head_dim",
                  "n_routed_experts"):
        bad = dataclasses.replace(TOY, **{field: 1 if field == "n_routed_experts" else 0})
        with g.case(f"rejects-{field}-{getattr(bad, field)}", group=INPUT_CHECKS):
            g.raises("ValueError", "batch1_attribution", good, bad, H, 64, BF16, BF16)
