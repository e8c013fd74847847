"""Hidden cases for prefill-decode-crossover: tabled models on the tabled GPUs in BF16 and FP8,
made-up models (tied, MQA, wide heads, MoE with shared experts, dense MLA, and the edges: head_dim
1, every routed expert active, MLA of ranks 1) and made-up GPUs,
prompt lengths around the crossover and far past it (attention dominates), tensor parallel, the
exact tie (compute == memory counts as compute-bound); then the input checks (each model size
at 0 among them). Float coin flips
(compute within 1e-9 of memory) are never graded."""

from __future__ import annotations

import dataclasses

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
KEYS = ("compute_ms", "memory_ms", "ttft_ms", "bound")

TIED = ModelConfig(name="tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                   head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MQA_WIDE = ModelConfig(name="mqa-wide", n_layers=26, hidden_size=2304, n_heads=8, n_kv_heads=1,
                       head_dim=256, ffn_size=9216, vocab_size=256000, tied_embeddings=True)
MOE = ModelConfig(name="moe-shared", n_layers=24, hidden_size=2048, n_heads=16, n_kv_heads=4,
                  head_dim=128, ffn_size=8192, vocab_size=151936, n_routed_experts=60,
                  n_shared_experts=4, experts_per_token=4, moe_ffn_size=1408, first_dense_layers=1)
MLA = ModelConfig(name="mla-dense", n_layers=30, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# DeepSeek-V2-Lite-like MLA without a query LoRA (q_lora_rank == 0: the query is a plain
# d x H*(qk_nope + qk_rope) projection); made-up layer count and FFN, dense.
MLA_RQ0 = ModelConfig(name="mla-rq0", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=192, ffn_size=10944, vocab_size=102400, q_lora_rank=0,
                      kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# With power-of-two peak and bandwidth, compute time equals memory time exactly at P = 35.
EXACT_TIE = ModelConfig(name="exact-tie", n_layers=1, hidden_size=8, n_heads=2, n_kv_heads=1, head_dim=8,
                        ffn_size=8, vocab_size=16)
# The edges of the allowed models: head_dim 1, every routed expert active (top-k = E), MLA of
# ranks 1 (a rank > 0 is MLA however small; its head_dim, 7, is not qk_nope + qk_rope = 3).
HEAD_DIM_1 = ModelConfig(name="head-dim-1", n_layers=2, hidden_size=64, n_heads=4, n_kv_heads=2,
                         head_dim=1, ffn_size=128, vocab_size=100)
MOE_ALL_ACTIVE = dataclasses.replace(MOE, name="moe-all-experts-active", n_routed_experts=4,
                                     experts_per_token=4)
MLA_RANK_1 = ModelConfig(name="mla-rank-1", n_layers=3, hidden_size=64, n_heads=4, n_kv_heads=4,
                         head_dim=7, ffn_size=128, vocab_size=100, q_lora_rank=1, kv_lora_rank=1,
                         qk_nope_head_dim=2, qk_rope_head_dim=1, v_head_dim=3)
# More edges of the MoE rules: top-1 routing (k = 1) and every layer dense (first_dense_layers =
# n_layers), both allowed.
MOE_TOP_1 = dataclasses.replace(MOE, name="moe-top-1", experts_per_token=1)
MOE_ALL_DENSE = dataclasses.replace(MOE, name="moe-every-layer-dense", first_dense_layers=24)
# Bandwidth so rich that a one-token prompt is already compute-bound (about 100x): crossover 1.
BANDWIDTH_RICH = dataclasses.replace(specs.H100_SXM, name="bandwidth-rich", bf16_dense_flops=1e13,
                                     fp8_dense_flops=2e13, hbm_bytes_per_s=1e15)
MODELS = [specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.MIXTRAL_8X7B, specs.DEEPSEEK_V3,
          TIED, MQA_WIDE, MOE, MLA, MLA_RQ0, HEAD_DIM_1, MOE_ALL_ACTIVE, MLA_RANK_1]


def _made_up_gpu(seed: int):
    g = torch.Generator().manual_seed(900 + seed)
    u = torch.rand(3, generator=g, dtype=torch.float64).tolist()
    bf16 = 10 ** (13.5 + 2 * u[0])
    return dataclasses.replace(specs.H100_SXM, name=f"made-up-{seed}", bf16_dense_flops=bf16,
                               fp8_dense_flops=None if u[2] < 0.3 else 2 * bf16,
                               hbm_bytes_per_s=10 ** (11.5 + 1.5 * u[1]))


GPUS = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB] + \
    [_made_up_gpu(s) for s in range(3)]


def _dtypes(gpu):
    return [DType.BF16] + ([DType.FP8] if gpu.fp8_dense_flops is not None else [])


def _close_call(ref, m, gpu, dt, P, n=1) -> bool:
    c, mem = ref._times_s(m, gpu, dt, P, n)
    return abs(c - mem) <= 1e-9 * max(c, mem)


def _exact(actual, expected: int, name: str) -> None:
    if isinstance(actual, bool) or not isinstance(actual, int):
        fail(f"{name}: expected an int, got {type(actual).__name__}")
    if actual != expected:
        fail(f"{name}: got {actual}, which is {'too large' if actual > expected else 'too small'}")


def _check_ttft(out, exp, tie: bool) -> None:
    if not isinstance(out, dict) or set(out) != set(KEYS):
        fail(f"ttft must return a dict with exactly the keys {list(KEYS)}")
    for k in KEYS[:3]:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)
    if not tie and out["bound"] != exp["bound"]:
        fail(f"['bound']: got {out['bound']!r}, which is not the term that sets this TTFT")


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def grade(g: Grading) -> None:
    ref = g.reference()
    with g.case("crossover-compute-bound-from-one-token"):
        _exact(g.call("prefill_crossover_tokens", specs.LLAMA_3_1_8B, BANDWIDTH_RICH, DType.BF16),
               ref.prefill_crossover_tokens(specs.LLAMA_3_1_8B, BANDWIDTH_RICH, DType.BF16), "crossover")
    for m in (MOE_TOP_1, MOE_ALL_DENSE):
        with g.case(f"crossover-{_slug(m.name)}"):
            _exact(g.call("prefill_crossover_tokens", m, specs.H100_SXM, DType.BF16),
                   ref.prefill_crossover_tokens(m, specs.H100_SXM, DType.BF16), "crossover")
        with g.case(f"ttft-{_slug(m.name)}-P1000"):
            _check_ttft(g.call("ttft", m, specs.H100_SXM, DType.BF16, 1000),
                        ref.ttft(m, specs.H100_SXM, DType.BF16, 1000), False)
    for m in MODELS:
        for gpu in GPUS:
            for dt in _dtypes(gpu):
                exp = ref.prefill_crossover_tokens(m, gpu, dt)
                if _close_call(ref, m, gpu, dt, exp) or (exp > 1 and _close_call(ref, m, gpu, dt, exp - 1)):
                    continue
                with g.case(f"crossover-{_slug(m.name)}-{_slug(gpu.name)}-{dt.value}"):
                    _exact(g.call("prefill_crossover_tokens", m, gpu, dt), exp, "crossover")
    for m in MODELS:
        for gpu, dt in ((specs.H100_SXM, DType.BF16), (specs.H200_SXM, DType.FP8), (GPUS[-1], DType.BF16)):
            x = ref.prefill_crossover_tokens(m, gpu, dt)
            for P in sorted({1, 100, max(1, x - 1), x, 4096, 100_000}):
                for n in (1, 8):
                    if n == 8 and P not in (x, 4096):
                        continue
                    with g.case(f"ttft-{_slug(m.name)}-{_slug(gpu.name)}-{dt.value}-P{P}-tp{n}"):
                        _check_ttft(g.call("ttft", m, gpu, dt, P, n), ref.ttft(m, gpu, dt, P, n),
                                    _close_call(ref, m, gpu, dt, P, n))
    with g.case("ttft-default-n-gpus"):
        _check_ttft(g.call("ttft", specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, 512),
                    ref.ttft(specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, 512), False)
    # The >= boundary, hit exactly: integer counts over power-of-two peak and bandwidth make
    # compute time equal memory time at P = 35 in any order of float operations.
    tie_gpu = dataclasses.replace(specs.H100_SXM, name="binary", bf16_dense_flops=float(2**50),
                                  fp8_dense_flops=float(2**51), hbm_bytes_per_s=float(2**45))
    for dt in (DType.BF16, DType.FP8):
        with g.case(f"crossover-exact-tie-{dt.value}"):
            _exact(g.call("prefill_crossover_tokens", EXACT_TIE, tie_gpu, dt),
                   ref.prefill_crossover_tokens(EXACT_TIE, tie_gpu, dt), "crossover")
    for n in (1, 4):
        with g.case(f"ttft-exact-tie-is-compute-bound-tp{n}"):
            out = g.call("ttft", EXACT_TIE, tie_gpu, DType.BF16, 35, n)
            _check_ttft(out, ref.ttft(EXACT_TIE, tie_gpu, DType.BF16, 35, n), False)

    # Input checks last.
    m, h100, bf = specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16
    checks = [(f"prompt-{name}", "ttft", (m, h100, bf, bad))
              for name, bad in (("zero", 0), ("negative", -1), ("float", 3.0), ("bool", True))]
    checks += [("n-gpus-zero", "ttft", (m, h100, bf, 10, 0)), ("n-gpus-bool", "ttft", (m, h100, bf, 10, True)),
               ("ttft-fp8-on-a100", "ttft", (m, specs.A100_SXM_80GB, DType.FP8, 10)),
               ("ttft-int8", "ttft", (m, h100, DType.INT8, 10)),
               ("crossover-fp8-on-a100", "prefill_crossover_tokens", (m, specs.A100_SXM_80GB, DType.FP8)),
               ("crossover-int4", "prefill_crossover_tokens", (m, h100, DType.INT4))]
    bad_models = [("heads-not-multiple", dataclasses.replace(m, n_kv_heads=3)),
                  ("zero-kv-heads", dataclasses.replace(m, n_kv_heads=0)),
                  ("top-k-above-experts", dataclasses.replace(specs.MIXTRAL_8X7B, experts_per_token=9)),
                  ("dense-layers-above-layers", dataclasses.replace(MOE, first_dense_layers=25)),
                  ("top-k-zero", dataclasses.replace(MOE, experts_per_token=0)),
                  ("one-expert-top-k-two", dataclasses.replace(MOE, n_routed_experts=1, experts_per_token=2))]
    bad_models += [(f"zero-{f}", dataclasses.replace(m, **{f: 0}))
                   for f in ("n_layers", "hidden_size", "n_heads", "vocab_size", "head_dim")]
    for name, bad in bad_models:
        checks += [(f"ttft-{name}", "ttft", (bad, h100, bf, 10)),
                   (f"crossover-{name}", "prefill_crossover_tokens", (bad, h100, bf))]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
