"""Seeded decode-step traces in a subset of the PyTorch profiler's Chrome trace format.

Public: a submission may import it to make practice traces for the ``mbu-gap-diagnosis`` and
``batch1-gap`` exercises. It only *generates* events; it computes no floor, bucket or verdict
(the exercises' rules say how to read a trace, and the graders recompute everything from the
events themselves).

A trace is ``{"traceEvents": [event, ...], "displayTimeUnit": "ms"}``. The events an analysis
reads are complete events (``"ph": "X"``) of three categories, times in microseconds::

    {"ph": "X", "cat": "kernel",       "name": ..., "ts": ..., "dur": ..., "pid": 0, "tid": 7,
     "args": {"correlation": c, "step": k, "device": 0, "stream": 7}}      # one CUDA stream
    {"ph": "X", "cat": "cpu_op",       "name": ..., "ts": ..., "dur": ..., "pid": P, "tid": P,
     "args": {}}                                                           # one host thread
    {"ph": "X", "cat": "cuda_runtime", "name": ..., "ts": ..., "dur": ..., "pid": P, "tid": P,
     "args": {"correlation": c}}

CPU events nest (a ``cudaLaunchKernel`` lies inside the ``aten::``/``_C::`` op that issued it,
every op of a step inside ``ProfilerStep#k``); kernels never overlap on the stream. Like a real
export, a trace also carries events an analysis ignores (``"ph": "M"`` metadata, ``ac2g`` flow
arrows, ``gpu_memcpy`` copies) and lists events in no particular order (``shuffle``).

One decode step of a dense model (GQA or MLA; a ``ModelConfig`` of ``inferprep.specs``):

- host: ``ProfilerStep#k`` wraps ``Scheduler.schedule``, ``Forward`` (the model), ``Sample``
  (the sampler), a ``.tolist()`` of the sampled ids (``aten::to`` ... ``cudaMemcpyAsync`` then a
  blocking ``cudaStreamSynchronize``) and ``Bookkeep``;
- GPU: an embedding gather, per layer norm / QKV GEMM / rotary / KV-cache write / split-KV
  attention and its combine / O GEMM / norm / gate-up GEMM / activation / down GEMM (MLA layers
  have their own projections), a final norm, the LM-head GEMM, then the sampling kernels.

``mode="graph"``: the model's kernels come from one ``cudaGraphLaunch`` and run back to back
(``gpu_gap_us`` apart); ``mode="eager"``: every kernel is issued by its own op (``dispatch_us``
of framework work, then a ``cudaLaunchKernel`` of ``launch_us``) and the GPU starts a kernel at
``max(stream free, launch returned) + gpu_gap_us``. The sampler is eager in both modes, as in
vLLM (``gpu_model_runner``: ``Sample`` outside the captured graph).

Variants: ``d2h_logits`` (the logits are copied to the host with a blocking sync and sampled on
the CPU: no sampling kernels), ``item_sync_layers`` (eager: an ``.item()`` after those layers,
a host-device round trip mid-step), ``cpu_sampling_us`` (host work inside ``Sample``),
``truncate_last`` (the profiler stopped in the middle of the last step).

Durations: a GEMM reads its weight matrix at ``gemm_efficiency`` of ``gpu.hbm_bytes_per_s``,
split-KV attention reads the layer's KV cache at ``attention_efficiency`` (+2 us), every other
kernel takes about ``small_kernel_us`` (sampling kernels ``sampling_kernel_us``); each
duration is scaled by ``1 + U(-jitter, jitter)``. All times are whole nanoseconds.
"""

from __future__ import annotations

import random

from inferprep.specs import DType, GPU, ModelConfig

GPU_PID, STREAM = 0, 7
_PCIE_BYTES_PER_S = 25e9          # effective D2H copy rate of the made-up host link (logits copy)

# Kernel names. GEMMs: cuBLAS on Hopper (nvjet_tst_*, sm90_xmma_*), Ampere (ampere_*_gemm),
# CUTLASS, cuBLAS GEMV at batch 1. Attention: FlashAttention-2 split-KV (vLLM's vllm-flash-attn).
GEMM_NAMES = [
    "nvjet_tst_64x8_64x16_4x1_v_bz_TNT",
    "nvjet_tst_128x8_64x12_2x1_v_bz_splitK_TNT",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_tn",
    "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8::Params)",
    "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>, float, float)",
]
FP8_GEMM_NAME = "void cutlass::device_kernel<vllm::cutlass_3x_gemm_sm90_fp8<cutlass::float_e4m3_t, cutlass::bfloat16_t>::GemmKernel>(vllm::cutlass_3x_gemm_sm90_fp8<cutlass::float_e4m3_t, cutlass::bfloat16_t>::GemmKernel::Params)"
ATTN_NAME = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, true, true, false, false>(flash::Flash_fwd_params)"
ATTN_COMBINE_NAME = "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 5, false>(flash::Flash_fwd_params)"
MLA_ATTN_NAME = "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)"
MLA_COMBINE_NAME = "void flash::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, float, 512, 32>(Flash_fwd_mla_params)"
SMALL = {
    "embed": ("aten::embedding", "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)"),
    "rms_norm": ("_C::rms_norm", "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)"),
    "fused_add_rms_norm": ("_C::fused_add_rms_norm", "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"),
    "rotary": ("_C::rotary_embedding", "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)"),
    "cache_write": ("_C_cache_ops::reshape_and_cache_flash", "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)"),
    "mla_cache_write": ("_C_cache_ops::concat_and_cache_mla", "void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*)"),
    "act": ("_C::silu_and_mul", "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)"),
    "fp8_quant": ("_C::dynamic_per_token_scaled_fp8_quant", "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)"),
}
SAMPLING = [
    ("aten::_softmax", "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"),
    ("flashinfer::top_k_top_p_sampling_from_probs", "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)2, (cub::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, float*, int*, int*, unsigned int, float, unsigned int, unsigned long, unsigned long)"),
]
GREEDY = ("aten::argmax", "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)")


def _weight_mats(m: ModelConfig) -> list[tuple[str, int]]:
    """The GEMMs of one layer, in order, with their weight element counts (no layer totals)."""
    d, H = m.hidden_size, m.n_heads
    if m.kv_lora_rank > 0:
        n, p, v, rq, rkv = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, m.q_lora_rank, m.kv_lora_rank
        q = [("q_a", d * rq), ("q_b", rq * H * (n + p))] if rq > 0 else [("q", d * H * (n + p))]
        return q + [("kv_a", d * (rkv + p)), ("kv_b", rkv * H * (n + v)), ("o", H * v * d)]
    hd, K = m.head_dim, m.n_kv_heads
    return [("qkv", d * (H + 2 * K) * hd), ("o", H * hd * d)]


def _kernel_plan(m: ModelConfig, ctx_elems_layer: int, w_bytes: float, kv_bytes: float, fp8: bool,
                 gemm_names: dict) -> list[tuple]:
    """[(op name, kernel name, kind, bytes)] for one step; kind in gemm/attn/attn_small/small/sampling."""
    plan = [SMALL["embed"] + ("small", 0)]

    def gemm(tag: str, elems: int) -> None:
        if fp8:
            plan.append(SMALL["fp8_quant"] + ("small", 0))
            plan.append(("_C::cutlass_scaled_mm", FP8_GEMM_NAME, "gemm", elems * w_bytes))
        else:
            plan.append(("aten::mm", gemm_names[tag], "gemm", elems * w_bytes))

    mats = dict(_weight_mats(m))
    d, F = m.hidden_size, m.ffn_size
    kv_layer = ctx_elems_layer * kv_bytes
    for layer in range(m.n_layers):
        plan.append(SMALL["rms_norm" if layer == 0 else "fused_add_rms_norm"] + ("small", 0))
        if m.kv_lora_rank > 0:
            if "q_a" in mats:
                gemm("q_a", mats["q_a"])
                plan.append(SMALL["rms_norm"] + ("small", 0))
                gemm("q_b", mats["q_b"])
            else:
                gemm("q", mats["q"])
            gemm("kv_a", mats["kv_a"])
            plan.append(SMALL["rms_norm"] + ("small", 0))
            plan.append(SMALL["rotary"] + ("small", 0))
            plan.append(SMALL["mla_cache_write"] + ("small", 0))
            gemm("kv_b", mats["kv_b"])
            plan.append(("_flashmla_C::fwd_kvcache_mla", MLA_ATTN_NAME, "attn", kv_layer))
            plan.append(("_flashmla_C::fwd_kvcache_mla", MLA_COMBINE_NAME, "attn_small", 0))
        else:
            gemm("qkv", mats["qkv"])
            plan.append(SMALL["rotary"] + ("small", 0))
            plan.append(SMALL["cache_write"] + ("small", 0))
            plan.append(("_vllm_fa2_C::fwd_kvcache", ATTN_NAME, "attn", kv_layer))
            plan.append(("_vllm_fa2_C::fwd_kvcache", ATTN_COMBINE_NAME, "attn_small", 0))
        gemm("o", mats["o"])
        plan.append(SMALL["fused_add_rms_norm"] + ("small", 0))
        gemm("gate_up", 2 * d * F)
        plan.append(SMALL["act"] + ("small", 0))
        gemm("down", F * d)
    plan.append(SMALL["fused_add_rms_norm"] + ("small", 0))
    gemm("lm_head", m.vocab_size * d)
    return plan


def _sampling_plan(greedy: bool) -> list[tuple]:
    return [GREEDY + ("sampling", 0)] if greedy else [s + ("sampling", 0) for s in SAMPLING]


def decode_trace(model: ModelConfig, gpu: GPU, context_lens: list[int], *,
                 weight_dtype: DType = DType.BF16, kv_dtype: DType = DType.BF16,
                 n_steps: int = 4, mode: str = "graph", seed: int = 0,
                 gemm_efficiency: float = 0.85, attention_efficiency: float = 0.6,
                 small_kernel_us: float = 3.0, sampling_kernel_us: float = 5.0,
                 gpu_gap_us: float = 1.0, dispatch_us: float = 20.0, launch_us: float = 5.0,
                 python_gap_us: float = 0.0, graph_launch_us: float = 10.0,
                 schedule_us: float = 300.0, bookkeep_us: float = 100.0,
                 cpu_sampling_us: float = 0.0, sync_wake_us: float = 20.0,
                 d2h_logits: bool = False, greedy: bool = False, item_sync_layers: tuple = (),
                 truncate_last: bool = True, jitter: float = 0.05, shuffle: bool = True,
                 extra_events: bool = True, ts0_us: float | None = None) -> dict:
    """A seeded trace of ``n_steps`` decode steps; the same arguments give the same trace.

    ``context_lens[i]``: keys sequence i attends to (its KV read per layer per step).
    See the module docstring for the layout and every knob.
    """
    if mode not in ("graph", "eager"):
        raise ValueError("mode must be 'graph' or 'eager'")
    if n_steps < 1:
        raise ValueError("n_steps must be >= 1")
    if not 0 < gemm_efficiency <= 1 or not 0 < attention_efficiency <= 1:
        raise ValueError("efficiencies must be in (0, 1]")
    if model.n_routed_experts > 0:
        raise ValueError("dense models only")
    rng = random.Random(f"chrome_trace:{seed}")
    ns = lambda us: int(round(us * 1000))                       # noqa: E731
    jit = lambda us: max(0, ns(us * (1 + rng.uniform(-jitter, jitter))))   # noqa: E731
    bw = gpu.hbm_bytes_per_s
    pid = rng.randrange(1000, 60000)
    tags = ["qkv", "o", "q", "q_a", "q_b", "kv_a", "kv_b", "gate_up", "down", "lm_head"]
    gemm_names = {t: rng.choice(GEMM_NAMES) for t in tags}
    if model.kv_lora_rank > 0:
        elems_layer = model.kv_lora_rank + model.qk_rope_head_dim
    else:
        elems_layer = 2 * model.n_kv_heads * model.head_dim
    plan = _kernel_plan(model, elems_layer * sum(context_lens), weight_dtype.bytes_per_element,
                        kv_dtype.bytes_per_element, weight_dtype == DType.FP8, gemm_names)
    layer_ends = []                                             # plan index after each layer
    for i, (op, _, _, _) in enumerate(plan):
        if op.startswith("_C::silu_and_mul"):
            layer_ends.append(i + 3 if weight_dtype == DType.FP8 else i + 2)

    cpu: list[dict] = []                                        # host events
    ker: list[dict] = []                                        # kernel events
    flows: list[dict] = []
    corr = 1000 + rng.randrange(1000)
    t = ns(ts0_us) if ts0_us is not None else ns(rng.uniform(1e6, 1e8))
    gpu_free = t

    def cpu_ev(name, cat, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": pid,
             "args": args or {}}
        cpu.append(e)
        return e

    def kernel_dur(kind, byts):
        if kind == "gemm":
            lo = byts / bw * 1e6
            return max(ns(lo) + 1, jit(lo / gemm_efficiency))
        if kind == "attn":
            lo = byts / bw * 1e6
            return max(ns(lo) + 1, jit(lo / attention_efficiency + 2.0))
        if kind == "sampling":
            return max(1, jit(sampling_kernel_us))
        return max(1, jit(small_kernel_us))

    def run_kernel(name, kind, byts, step, c, ready):
        nonlocal gpu_free
        start = max(gpu_free, ready) + jit(gpu_gap_us)
        dur = kernel_dur(kind, byts)
        ker.append({"ph": "X", "cat": "kernel", "name": name, "ts": start, "dur": dur, "pid": GPU_PID,
                    "tid": STREAM, "args": {"correlation": c, "step": step, "device": 0, "stream": STREAM}})
        gpu_free = start + dur

    def eager_launch(op, kname, kind, byts, step):
        """An op that dispatches for dispatch_us then launches one kernel; advances t."""
        nonlocal t, corr
        corr += 1
        disp, lau = jit(dispatch_us), max(1, jit(launch_us))
        cpu_ev(op, "cpu_op", t, disp + lau)
        cpu_ev("cudaLaunchKernel", "cuda_runtime", t + disp, lau, {"correlation": corr})
        if extra_events and corr % 7 == 0:
            flows.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": t + disp,
                          "pid": pid, "tid": pid, "bp": "e"})
        run_kernel(kname, kind, byts, step, corr, t + disp + lau)
        t += disp + lau + jit(python_gap_us)

    def blocking_copy(outer: list[str], copy_us: float, step: int):
        """Nested ``outer`` ops around a cudaMemcpyAsync and a blocking cudaStreamSynchronize
        that returns ``sync_wake_us`` after the copy (queued behind every kernel) is done.
        Advances t; returns when the stream is free again."""
        nonlocal t, corr
        start = t
        pad = 100 * len(outer)
        t += pad + jit(dispatch_us) // 2
        corr += 1
        lau = max(1, jit(launch_us))
        cpu_ev("cudaMemcpyAsync", "cuda_runtime", t, lau, {"correlation": corr})
        t += lau
        copy_start = max(gpu_free, t)
        copy_ns = max(1, ns(copy_us))
        if extra_events:
            flows.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)",
                          "ts": copy_start, "dur": copy_ns, "pid": GPU_PID, "tid": STREAM,
                          "args": {"correlation": corr, "device": 0, "stream": STREAM}})
        done = copy_start + copy_ns + jit(sync_wake_us)
        cpu_ev("cudaStreamSynchronize", "cuda_runtime", t, done - t)
        t = done + pad
        for depth, name in enumerate(outer):
            cpu_ev(name, "cpu_op", start + 100 * depth, t - start - 200 * depth)
        return copy_start + copy_ns

    step_first_kernel = []
    for step in range(n_steps):
        step_start = t
        step_first_kernel.append(len(ker))
        cpu_ev("Scheduler.schedule", "cpu_op", t, jit(schedule_us))
        t += cpu[-1]["dur"] + jit(python_gap_us)
        f0 = t
        if mode == "graph":
            corr += 1
            g = max(1, jit(graph_launch_us))
            cpu_ev("cudaGraphLaunch", "cuda_runtime", t + 1000, g, {"correlation": corr})
            ready = t + 1000 + g
            for op, kname, kind, byts in plan:
                run_kernel(kname, kind, byts, step, corr, ready)
            t += 1000 + g + 1000
        else:
            syncs = set(layer_ends[i] for i in item_sync_layers if i < len(layer_ends))
            for i, (op, kname, kind, byts) in enumerate(plan):
                eager_launch(op, kname, kind, byts, step)
                if i + 1 in syncs:
                    gpu_free = blocking_copy(["aten::item", "aten::_local_scalar_dense"], 2.0, step)
        cpu_ev("Forward", "cpu_op", f0, t - f0)
        s0 = t
        if d2h_logits:
            logits_us = len(context_lens) * model.vocab_size * 4 / _PCIE_BYTES_PER_S * 1e6
            gpu_free = blocking_copy(["aten::to", "aten::_to_copy", "aten::copy_"], logits_us, step)
            s1 = t
            a = jit(cpu_sampling_us * 0.6)
            cpu_ev("aten::topk", "cpu_op", t + 500, a)
            b = jit(cpu_sampling_us * 0.4)
            cpu_ev("aten::multinomial", "cpu_op", t + 1000 + a, b)
            t += a + b + 1500
            cpu_ev("Sample", "cpu_op", s1, t - s1)
        else:
            t += jit(cpu_sampling_us)
            for op, kname, kind, byts in _sampling_plan(greedy):
                eager_launch(op, kname, kind, byts, step)
            cpu_ev("Sample", "cpu_op", s0, t - s0)
            gpu_free = blocking_copy(["aten::to", "aten::_to_copy", "aten::copy_"], 2.0, step)
        cpu_ev("Bookkeep", "cpu_op", t, jit(bookkeep_us))
        t += cpu[-1]["dur"]
        cpu_ev(f"ProfilerStep#{step}", "cpu_op", step_start, t - step_start)
        t += jit(python_gap_us)
        gpu_free = max(gpu_free, t)          # nothing else queued: the stream waits for the host

    if truncate_last and n_steps > 1:
        first = step_first_kernel[-1]
        n_last = len(ker) - first
        keep = first + rng.randrange(1, max(2, n_last))
        cut = ker[keep - 1]["ts"] + ker[keep - 1]["dur"]
        del ker[keep:]
        kept = []
        for e in cpu:
            if e["ts"] >= cut:
                continue
            if e["ts"] + e["dur"] > cut:
                e["dur"] = cut - e["ts"]
            kept.append(e)
        cpu = kept
        flows = [e for e in flows if e["ts"] < cut and e["ts"] + e.get("dur", 0) <= cut]

    events = cpu + ker + flows
    for e in events:
        e["ts"] = e["ts"] / 1000
        if "dur" in e:
            e["dur"] = e["dur"] / 1000
    if extra_events:
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}})
        events.append({"ph": "M", "name": "process_name", "pid": GPU_PID, "tid": 0, "args": {"name": "GPU 0"}})
        events.append({"ph": "M", "name": "thread_name", "pid": GPU_PID, "tid": STREAM, "args": {"name": f"stream {STREAM}"}})
    if shuffle:
        rng.shuffle(events)
    return {"traceEvents": events, "displayTimeUnit": "ms"}
