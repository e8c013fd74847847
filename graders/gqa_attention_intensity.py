"""Hidden cases for gqa-attention-intensity: tabled GQA and MLA models plus made-up ones (MHA,
MQA, wide heads, MLA variants, seeded random GQA, the one-layer one-head model, an MLA of latent
rank 1), batches from 1 to 4096 and contexts from 1 to 1M (the intensity must not move), KV
dtypes, weight dtypes down to INT4 and up to FP32 (odd batches: 2b/4 is not an integer), the four
GPUs plus one whose ridge is exactly 256 (an MQA model lands exactly on it: compute-bound) and one
whose ridge is 1 (group size 1 already reaches it); then the ValueError cases as input checks."""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
KEYS = ("intensity", "ridge", "fraction_of_ridge", "bound")

MHA = ModelConfig(name="mha", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
MQA_WIDE = ModelConfig(name="mqa-wide", n_layers=26, hidden_size=2304, n_heads=8, n_kv_heads=1,
                       head_dim=256, ffn_size=9216, vocab_size=256000)
MQA_256 = ModelConfig(name="mqa-256-heads", n_layers=2, hidden_size=4096, n_heads=256, n_kv_heads=1,
                      head_dim=16, ffn_size=1024, vocab_size=1000)
MLA_LITE = ModelConfig(name="mla-lite", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                       head_dim=192, ffn_size=10944, vocab_size=102400, kv_lora_rank=512,
                       qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
MLA_ODD = ModelConfig(name="mla-odd", n_layers=5, hidden_size=1024, n_heads=40, n_kv_heads=40,
                      head_dim=80, ffn_size=2048, vocab_size=5000, q_lora_rank=256,
                      kv_lora_rank=320, qk_nope_head_dim=48, qk_rope_head_dim=32, v_head_dim=96)
EXACT_GPU = dataclasses.replace(specs.H100_SXM, name="ridge-256", bf16_dense_flops=float(2**50),
                                fp8_dense_flops=float(2**51), hbm_bytes_per_s=float(2**42))
# The smallest model the statement allows: one layer, one head, one KV head, head_dim 1.
ONE_OF_EACH = ModelConfig(name="one-of-each", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1,
                          head_dim=1, ffn_size=4, vocab_size=10)
# The smallest MLA: latent rank 1 (kv_lora_rank > 0 is MLA, however small).
MLA_RANK_1 = ModelConfig(name="mla-rank-1", n_layers=1, hidden_size=64, n_heads=4, n_kv_heads=4,
                         head_dim=3, ffn_size=128, vocab_size=100, kv_lora_rank=1,
                         qk_nope_head_dim=2, qk_rope_head_dim=1, v_head_dim=2)
# A ridge of 1 (BF16) and 2 (FP8) FLOP/byte: every group size, even 1, reaches it.
LOW_RIDGE_GPU = dataclasses.replace(specs.H100_SXM, name="ridge-1", bf16_dense_flops=float(2**40),
                                    fp8_dense_flops=float(2**41), hbm_bytes_per_s=float(2**40))


def _random(seed: int) -> ModelConfig:
    g = torch.Generator().manual_seed(700 + seed)
    kv = int(torch.randint(1, 17, (1,), generator=g))
    return ModelConfig(name=f"random-{seed}", n_layers=int(torch.randint(1, 100, (1,), generator=g)),
                       hidden_size=1024, n_heads=kv * int(torch.randint(1, 17, (1,), generator=g)),
                       n_kv_heads=kv, head_dim=16 * int(torch.randint(1, 17, (1,), generator=g)),
                       ffn_size=4096, vocab_size=1000)


MODELS = [specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.MIXTRAL_8X7B, specs.DEEPSEEK_V3, MHA,
          MQA_WIDE, MQA_256, MLA_LITE, MLA_ODD, ONE_OF_EACH, MLA_RANK_1] + [_random(s) for s in range(4)]
GPUS = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, EXACT_GPU, LOW_RIDGE_GPU]


def _exact(actual, expected: int, name: str) -> None:
    if isinstance(actual, bool) or not isinstance(actual, int):
        fail(f"{name}: expected an int, got {type(actual).__name__}")
    if actual != expected:
        fail(f"{name}: got {actual}, which is {'too large' if actual > expected else 'too small'}")


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def grade(g: Grading) -> None:
    ref = g.reference()
    for m in MODELS:
        for kd in (DType.BF16, DType.FP8, DType.FP32):
            for b, L in ((1, 1), (64, 4096), (4096, 1_000_000), (3, 77)):
                with g.case(f"attention-{_slug(m.name)}-{kd.value}-b{b}-L{L}"):
                    expect_close(g.call("decode_attention_intensity", m, kd, b, L),
                                 ref.decode_attention_intensity(m, kd, b, L), rtol=RTOL)
    for b in (1, 8, 296, 1000):
        for wd in (DType.BF16, DType.FP8, DType.INT4, DType.FP32):
            with g.case(f"weight-gemm-b{b}-{wd.value}"):
                expect_close(g.call("decode_weight_gemm_intensity", b, wd),
                             ref.decode_weight_gemm_intensity(b, wd), rtol=RTOL)
    for m in MODELS:
        for gpu in GPUS:
            for kd, cd in ((DType.BF16, DType.BF16), (DType.FP8, DType.FP8), (DType.FP8, DType.BF16)):
                if cd is DType.FP8 and gpu.fp8_dense_flops is None:
                    continue
                with g.case(f"regime-{_slug(m.name)}-{_slug(gpu.name)}-kv-{kd.value}-math-{cd.value}"):
                    out = g.call("attention_regime", m, gpu, kd, cd)
                    exp = ref.attention_regime(m, gpu, kd, cd)
                    if not isinstance(out, dict) or set(out) != set(KEYS):
                        fail(f"attention_regime must return a dict with exactly the keys {list(KEYS)}")
                    for k in KEYS[:3]:
                        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)
                    if out["bound"] != exp["bound"]:
                        fail(f"['bound']: got {out['bound']!r}, which is not the roof that binds")
    for gpu in GPUS:
        for kd, cd in ((DType.BF16, DType.BF16), (DType.FP8, DType.BF16), (DType.FP8, DType.FP8),
                       (DType.INT4, DType.BF16)):
            if cd is DType.FP8 and gpu.fp8_dense_flops is None:
                continue
            with g.case(f"group-size-{_slug(gpu.name)}-kv-{kd.value}-math-{cd.value}"):
                _exact(g.call("heads_per_kv_head_for_ridge", gpu, kd, cd),
                       ref.heads_per_kv_head_for_ridge(gpu, kd, cd), "heads per KV head")
    # Input checks (the statement's ValueErrors), after every core case.
    m = specs.LLAMA_3_1_8B
    for label, bad in (("0", 0), ("negative", -2), ("float", 1.0), ("bool", True), ("nan", math.nan),
                       ("list", [4])):
        with g.case(f"rejects-batch-{label}", group=INPUT_CHECKS):
            g.raises("ValueError", "decode_attention_intensity", m, DType.BF16, bad, 10)
        with g.case(f"rejects-context-{label}", group=INPUT_CHECKS):
            g.raises("ValueError", "decode_attention_intensity", m, DType.BF16, 10, bad)
        with g.case(f"rejects-gemm-batch-{label}", group=INPUT_CHECKS):
            g.raises("ValueError", "decode_weight_gemm_intensity", bad, DType.BF16)
    for label, kv in (("not-dividing", 6), ("zero", 0), ("negative", -8)):
        bad_model = dataclasses.replace(m, n_kv_heads=kv)
        with g.case(f"rejects-n_kv_heads-{label}", group=INPUT_CHECKS):
            g.raises("ValueError", "decode_attention_intensity", bad_model, DType.BF16, 1, 1)
        with g.case(f"rejects-regime-n_kv_heads-{label}", group=INPUT_CHECKS):
            g.raises("ValueError", "attention_regime", bad_model, specs.H100_SXM, DType.BF16, DType.BF16)
    for name, fn, args in (
            ("regime-fp8-on-a100", "attention_regime", (m, specs.A100_SXM_80GB, DType.FP8, DType.FP8)),
            ("regime-int8-math", "attention_regime", (m, specs.H100_SXM, DType.BF16, DType.INT8)),
            ("group-size-int8-math", "heads_per_kv_head_for_ridge", (specs.H100_SXM, DType.BF16, DType.INT8)),
            ("group-size-fp8-on-a100", "heads_per_kv_head_for_ridge", (specs.A100_SXM_80GB, DType.BF16, DType.FP8)),
            ("group-size-fp32-math", "heads_per_kv_head_for_ridge", (specs.H100_SXM, DType.BF16, DType.FP32))):
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
