"""Hidden cases for mbu-gap-diagnosis.

Generated traces (inferprep.sim.chrome_trace, seeds drawn from g.salt) over tabled and made-up
dense models (GQA, tied, MLA), the four GPUs and made-up bandwidths, weight/KV dtypes, batch and
context, 2 to 6 steps (truncated last step or not), CUDA-graph and eager steps, host gaps, D2H
logits copies, greedy sampling, shuffled or ordered event lists; hand-made traces for the
kernel-class table (every alternative needed, the traps), the ranking tie rule (equal buckets, and
0 vs 5e-10 ms inside the 1e-9 ms band), non-contiguous step numbers, step numbers out of time
order, non-kernel events that carry a step, buckets of both signs (GEMMs faster than peak) with a
0 us kernel; the floor alone (MLA with qk_nope != v_head_dim, the one-of-everything model, MLA of
ranks 1); then the input checks (each model field at 0, one routed expert).
"""

from __future__ import annotations

import dataclasses
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import DType, ModelConfig

BF16, FP8, INT4, FP32 = DType.BF16, DType.FP8, DType.INT4, DType.FP32
BUCKETS = ("gemm_efficiency", "attention", "non_gemm_kernels", "launch_gaps", "sampling_cpu")
KEYS = ("complete_steps", "step_ms", "floor_ms", "mbu") + tuple(b + "_ms" for b in BUCKETS) + ("ranking",)
RTOL, ATOL = 1e-6, 1e-9

TOY = ModelConfig(name="toy-gqa-12l", n_layers=12, hidden_size=2048, n_heads=16, n_kv_heads=4,
                  head_dim=128, ffn_size=5632, vocab_size=32000)
TIED = ModelConfig(name="tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                   head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MLA = ModelConfig(name="mla-dense", n_layers=10, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# qk_nope_head_dim != v_head_dim (and rope != 64): a formula that swaps them is off
MLA_RQ0 = ModelConfig(name="mla-rq0-v160", n_layers=6, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=224, ffn_size=10944, vocab_size=102400, kv_lora_rank=512,
                      qk_nope_head_dim=128, qk_rope_head_dim=96, v_head_dim=160)
TINY = ModelConfig(name="tiny-2l", n_layers=2, hidden_size=256, n_heads=4, n_kv_heads=2,
                   head_dim=64, ffn_size=512, vocab_size=1024)
# The smallest models the statement allows: one of everything, and MLA of ranks 1 (a rank > 0 is
# MLA however small; q_lora_rank 1 is a query LoRA however small).
ONE = ModelConfig(name="one-of-each", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1, head_dim=1,
                  ffn_size=1, vocab_size=1)
MLA_RANK_1 = ModelConfig(name="mla-rank-1", n_layers=1, hidden_size=8, n_heads=2, n_kv_heads=2,
                         head_dim=3, ffn_size=16, vocab_size=10, q_lora_rank=1, kv_lora_rank=1,
                         qk_nope_head_dim=2, qk_rope_head_dim=1, v_head_dim=3)
SLOW_GPU = dataclasses.replace(specs.H100_SXM, name="made-up-slow", hbm_bytes_per_s=1.234e12)
FAST_GPU = dataclasses.replace(specs.H100_SXM, name="made-up-fast", hbm_bytes_per_s=9.5e12)
HUGE_BW = dataclasses.replace(specs.H100_SXM, name="made-up-huge", hbm_bytes_per_s=2.0**50)


def _ragged(rng: random.Random, b: int, hi: int) -> list[int]:
    return [rng.randint(1, hi) for _ in range(b)]


def _generated(rng: random.Random):
    """(case name, model, gpu, context_lens, weight dtype, kv dtype, decode_trace kwargs)."""
    L8, L70, H100, H200 = specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.H100_SXM, specs.H200_SXM
    return [
        ("llama-8b-h100-b16x2048-graph", L8, H100, [2048] * 16, BF16, BF16,
         dict(n_steps=4, gemm_efficiency=0.85, attention_efficiency=0.7, gpu_gap_us=1.5,
              sampling_kernel_us=20.0, schedule_us=1146.7)),
        ("llama-8b-h200-b1-eager", L8, H200, [1024], BF16, BF16,
         dict(n_steps=3, mode="eager", dispatch_us=15.0, launch_us=4.0)),
        ("madeup-gqa-fp8-kv-heavy", TOY, SLOW_GPU, _ragged(rng, 24, 16384), FP8, FP8,
         dict(n_steps=5, attention_efficiency=0.45, schedule_us=150.0)),
        ("madeup-mla-b200-d2h-logits", MLA, specs.B200, _ragged(rng, 8, 32768), BF16, BF16,
         dict(n_steps=4, d2h_logits=True, cpu_sampling_us=400.0)),
        ("llama-70b-a100-b4x8192", L70, specs.A100_SXM_80GB, [8192] * 4, BF16, BF16,
         dict(n_steps=3, gemm_efficiency=0.9, schedule_us=800.0)),
        ("tied-int4-h100-6-steps-greedy", TIED, H100, _ragged(rng, 3, 4096), INT4, BF16,
         dict(n_steps=6, greedy=True, small_kernel_us=2.0)),
        ("madeup-gqa-host-heavy", TOY, FAST_GPU, [512] * 2, BF16, FP8,
         dict(n_steps=4, schedule_us=3000.0, bookkeep_us=900.0)),
        ("mla-rq0-gap-heavy", MLA_RQ0, H100, [100, 2000, 37], BF16, BF16,
         dict(n_steps=4, gpu_gap_us=7.0, schedule_us=20.0, bookkeep_us=10.0, sync_wake_us=5.0)),
        ("madeup-gqa-ordered-complete-last-step", TOY, H200, [4096] * 8, BF16, BF16,
         dict(n_steps=3, shuffle=False, extra_events=False, truncate_last=False)),
        ("madeup-gqa-two-steps", TOY, H100, [8192], BF16, BF16, dict(n_steps=2)),
        ("tied-fp32-eager-item-sync", TIED, SLOW_GPU, [64, 64], FP32, FP32,
         dict(n_steps=3, mode="eager", item_sync_layers=(1, 9), python_gap_us=3.0)),
        ("madeup-gqa-eager-slow-gpu-d2h", TOY, SLOW_GPU, [1], BF16, BF16,
         dict(n_steps=4, mode="eager", d2h_logits=True, cpu_sampling_us=150.0)),
    ]


def _k(name, ts, dur, step):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": 7,
            "args": {"correlation": int(ts * 4), "step": step}}


# Every alternative of every pattern is the only one that matches some row (drop any one and a
# row changes class), plus the traps: attention before GEMM, "flash" alone, upper case.
_CLASS_ROWS = [   # (name, duration us)
    ("void vllm::paged_attention_v2_kernel<c10::BFloat16, c10::BFloat16, 128, 16, 128>", 4.0),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", 4.5),                # attention before gemm
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
]
CLASS_TABLE, _t = [], 0.0          # (name, start offset, duration), 0.5 to 1.5 us apart
for _i, (_n, _d) in enumerate(_CLASS_ROWS):
    CLASS_TABLE.append((_n, _t, _d))
    _t += _d + 0.5 * (1 + _i % 3)
del _i, _n, _d, _t


def _class_table_trace() -> dict:
    ev = []
    for step, base in ((3, 1000.0), (4, 1200.0), (5, 1500.0)):
        rows = CLASS_TABLE if step < 5 else CLASS_TABLE[:4]
        ev += [_k(n, base + off * (1.5 if step == 4 else 1.0), d, step) for n, off, d in rows]
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 990.0, "dur": 5.0, "pid": 9,
               "tid": 9, "args": {}})
    ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)",
               "ts": 1100.0, "dur": 50.0, "pid": 0, "tid": 7, "args": {}})
    ev.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})
    return {"traceEvents": ev[::-1]}


def _tie_trace() -> dict:
    """non_gemm_kernels and launch_gaps equal (4 us per step): the listed order decides."""
    ev = []
    for step, base in ((0, 0.0), (1, 25.0), (2, 50.0)):
        ev += [_k("nvjet_tst_gemv", base, 10.0, step), _k("rms_norm_kernel", base + 12.0, 2.0, step),
               _k("act_and_mul_kernel", base + 16.0, 2.0, step),
               _k("argmax_kernel", base + 18.0, 2.0, step)]
    return {"traceEvents": ev[:-3]}


def _ignored_events_trace() -> dict:
    """Events that carry args["step"] (and a dur) but are no kernels: a gpu_memcpy and a cpu_op
    inside the steps, a gpu_memcpy of a later step number, kernel-category events whose "ph" is
    not "X". Only the "X" kernels count."""
    ev = []
    for step, b in ((0, 0.0), (1, 100.0), (2, 200.0)):
        ev += [_k("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", b, 20.0, step),
               _k("flash_fwd_splitkv_kernel", b + 22.0, 10.0, step),
               _k("rms_norm_kernel", b + 34.0, 2.0, step),
               _k("argmax_kernel", b + 40.0, 3.0, step)]
        ev += [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)",
                "ts": b + 45.0, "dur": 20.0, "pid": 0, "tid": 7, "args": {"step": step}},
               {"ph": "X", "cat": "cpu_op", "name": "aten::argmax", "ts": b + 70.0, "dur": 12.0,
                "pid": 9, "tid": 9, "args": {"step": step}},
               {"ph": "i", "cat": "kernel", "name": "nvjet_tst_marker", "ts": b + 85.0, "dur": 6.0,
                "s": "t", "pid": 0, "tid": 7, "args": {"step": step}},
               {"ph": "B", "cat": "kernel", "name": "rms_norm_kernel", "ts": b + 37.0, "dur": 2.0,
                "pid": 0, "tid": 7, "args": {"step": step}}]
    ev = [e for e in ev if e["ts"] < 221.0]          # the profiler stopped inside step 2
    ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)",
               "ts": 150.0, "dur": 4.0, "pid": 0, "tid": 7, "args": {"step": 9}})
    ev.append({"ph": "i", "cat": "kernel", "name": "argmax_kernel", "ts": 60.0, "dur": 1.0,
               "s": "t", "pid": 0, "tid": 7, "args": {"step": 6}})
    return {"traceEvents": ev[::-1]}


def _out_of_time_order_trace() -> dict:
    """Step numbers that do not grow with time (21 runs first, then 20, then 22): steps are
    ordered by number, so step 20 spans [a_20, a_21), a negative window, and 22 never counts."""
    ev = []
    for step, b in ((21, 1000.0), (20, 1100.0), (22, 1250.0)):
        ev += [_k("nvjet_tst_a", b, 30.0, step), _k("flash_fwd_splitkv_kernel", b + 31.0, 12.5, step),
               _k("rms_norm_kernel", b + 45.0, 2.0, step), _k("softmax_kernel", b + 48.0, 4.0, step)]
    return {"traceEvents": ev}


def _near_zero_tie_trace() -> dict:
    """non_gemm_kernels 0 and launch_gaps 2^-21 us (4.8e-10 ms) per step: equal under the 1e-9 ms
    tie band, so non_gemm_kernels (listed first) ranks first; a plain sort swaps them."""
    gap = 2.0 ** -21
    ev = []
    for step, b in ((0, 0.0), (1, 64.0), (2, 128.0)):
        ev += [_k("nvjet_tst_64x8", b, 10.0, step), _k("flash_fwd_splitkv_kernel", b + 10.0 + gap, 6.0, step),
               _k("argmax_kernel", b + 16.0 + gap, 2.0, step)]
    return {"traceEvents": ev[::-1]}


def _signed_buckets_trace(floor: dict) -> dict:
    """Buckets of both signs (a made-up trace whose GEMMs beat peak bandwidth): gemm_efficiency
    -W/2 and attention +W/2 (W = weights_ms), non_gemm_kernels 0 from a 0 us kernel, launch_gaps
    0, sampling_cpu 42 us. A bucket near 0 is no tie with a negative one, nor +x with -x."""
    w_us, kv_us = 1e3 * floor["weights_ms"], 1e3 * floor["kv_ms"]
    gemm, attn = w_us / 2, w_us / 2 + kv_us
    ev = []
    for step, b in ((0, 0.0), (1, 100.0), (2, 200.0)):
        ev += [_k("nvjet_tst_64x8", b, gemm, step), _k("flash_fwd_splitkv_kernel", b + gemm, attn, step),
               _k("rms_norm_kernel", b + gemm + attn, 0.0, step),
               _k("argmax_kernel", b + gemm + attn, 2.0, step)]
    return {"traceEvents": ev[:-2][::-1]}


def _steps_trace(rng: random.Random) -> dict:
    """Steps numbered 7, 9, 12, 13 (not contiguous), events in random order."""
    ev = []
    t = 50_000.0
    for step in (7, 9, 12, 13):
        for name, dur in (("nvjet_tst_a", 30.0), ("flash_fwd_splitkv_kernel", 12.5),
                          ("rms_norm_kernel", 2.0), ("softmax_kernel", 4.0)):
            ev.append(_k(name, t, dur, step))
            t += dur + (1.0 if step != 9 else 3.5)
        t += 200.0 + 50 * (step % 3)
    rng.shuffle(ev)
    return {"traceEvents": ev}


def check(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(KEYS):
        fail(f"expected a dict with exactly the keys {list(KEYS)}")
    expect_equal(out["complete_steps"], exp["complete_steps"], name="['complete_steps']")
    for k in KEYS[1:-1]:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL, atol=ATOL)
    check_ranking(out["ranking"], exp, BUCKETS)


def check_ranking(rank, exp, order) -> None:
    if not isinstance(rank, (list, tuple)) or sorted(rank) != sorted(order):
        fail(f"['ranking']: expected a list holding each of {list(order)} once")
    for a, b in zip(rank, rank[1:]):
        va, vb = exp[a + "_ms"], exp[b + "_ms"]
        tol = ATOL + RTOL * max(abs(va), abs(vb))
        if vb > va + tol:
            fail(f"['ranking']: {a!r} is ranked above {b!r}, but {b!r} is the larger bucket")
        if abs(va - vb) <= ATOL and order.index(a) > order.index(b):
            fail(f"['ranking']: {a!r} and {b!r} are equal; ties follow the listed order")


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"mbu-gap-diagnosis:{g.salt}")
    for name, m, gpu, lens, wd, kd, kw in _generated(rng):
        trace = decode_trace(m, gpu, lens, weight_dtype=wd, kv_dtype=kd,
                             seed=rng.randrange(2**31), **kw)
        with g.case(name):
            check(g.call("gap_buckets", trace, m, gpu, lens, wd, kd),
                  ref.gap_buckets(trace, m, gpu, lens, wd, kd))
    for name, trace in (("kernel-class-table", _class_table_trace()), ("ranking-tie", _tie_trace()),
                        ("ranking-tie-near-zero", _near_zero_tie_trace()),
                        ("non-contiguous-step-numbers", _steps_trace(rng)),
                        ("ignored-events-with-steps", _ignored_events_trace()),
                        ("step-numbers-out-of-time-order", _out_of_time_order_trace())):
        with g.case(name):
            check(g.call("gap_buckets", trace, TINY, HUGE_BW, [16], BF16, BF16),
                  ref.gap_buckets(trace, TINY, HUGE_BW, [16], BF16, BF16))
    with g.case("ranking-signed-buckets-zero-duration-kernel"):
        trace = _signed_buckets_trace(ref.floor_ms(TINY, SLOW_GPU, [16], BF16, BF16))
        check(g.call("gap_buckets", trace, TINY, SLOW_GPU, [16], BF16, BF16),
              ref.gap_buckets(trace, TINY, SLOW_GPU, [16], BF16, BF16))
    for m, gpu, lens, wd, kd in ((specs.LLAMA_3_1_8B, specs.H100_SXM, [2048] * 16, BF16, BF16),
                                 (TOY, SLOW_GPU, [8192] * 32, FP8, FP8),
                                 (MLA, specs.B200, [1, 70000], INT4, BF16),
                                 (MLA_RQ0, specs.H100_SXM, [4096, 3], BF16, FP8),
                                 (TIED, specs.H200_SXM, (300, 5), BF16, FP32),
                                 (ONE, specs.H100_SXM, [1], BF16, BF16),
                                 (MLA_RANK_1, specs.H200_SXM, [3, 5], FP8, BF16)):
        with g.case(f"floor-{m.name.lower().replace(' ', '-')}-{gpu.name.lower().replace(' ', '-')}"
                    f"-{wd.value}-{kd.value}-b{len(lens)}"):
            out, exp = g.call("floor_ms", m, gpu, lens, wd, kd), ref.floor_ms(m, gpu, lens, wd, kd)
            if not isinstance(out, dict) or set(out) != set(exp):
                fail(f"expected a dict with exactly the keys {sorted(exp)}")
            for k in exp:
                expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=1e-9)
    # input checks
    good = decode_trace(TOY, specs.H100_SXM, [64], n_steps=3, seed=5)
    one_step = decode_trace(TOY, specs.H100_SXM, [64], n_steps=1, seed=5)
    no_step = {"traceEvents": [dict(e, args={}) if e.get("cat") == "kernel" else e
                               for e in good["traceEvents"]]}
    bool_step = {"traceEvents": [dict(e, args=dict(e["args"], step=True))
                                 if e.get("cat") == "kernel" and e["args"].get("step") == 1 else e
                                 for e in good["traceEvents"]]}
    events_dict = {"traceEvents": {i: e for i, e in enumerate(good["traceEvents"])}}
    odd_heads = dataclasses.replace(TOY, name="gqa-16q-6kv", n_kv_heads=6)
    L8, H = specs.LLAMA_3_1_8B, specs.H100_SXM
    for name, args in (("single-step-trace", (one_step, TOY, H, [64], BF16, BF16)),
                       ("kernel-without-step", (no_step, TOY, H, [64], BF16, BF16)),
                       ("bool-step", (bool_step, TOY, H, [64], BF16, BF16)),
                       ("bare-event-list", (good["traceEvents"], TOY, H, [64], BF16, BF16)),
                       ("trace-events-not-a-list", (events_dict, TOY, H, [64], BF16, BF16)),
                       ("heads-not-a-multiple-of-kv-heads", (good, odd_heads, H, [64], BF16, BF16)),
                       ("bool-context-length", (good, TOY, H, [64, True], BF16, BF16)),
                       ("moe-model", (good, specs.MIXTRAL_8X7B, H, [64], BF16, BF16)),
                       ("empty-batch", (good, TOY, H, [], BF16, BF16)),
                       ("zero-context", (good, TOY, H, [64, 0], BF16, BF16)),
                       ("one-int-not-a-list", (good, TOY, H, 64, BF16, BF16))):
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "gap_buckets", *args)
    with g.case("rejects-floor-moe", group=INPUT_CHECKS):
        g.raises("ValueError", "floor_ms", specs.MIXTRAL_8X7B, H, [64], BF16, BF16)
    for field in ("n_layers", "hidden_size", "n_heads", "vocab_size", "n_kv_heads", "head_dim",
                  "n_routed_experts"):
        bad = dataclasses.replace(TOY, **{field: 1 if field == "n_routed_experts" else 0})
        with g.case(f"rejects-floor-{field}-{getattr(bad, field)}", group=INPUT_CHECKS):
            g.raises("ValueError", "floor_ms", bad, H, [64], BF16, BF16)
    del L8
