"""Hidden grader for headline-claim-check.

Cases: active parameters and KV bytes of the four table models and made-up ones (tied LM head,
MLA without a query LoRA, MLA with v_head_dim != qk_nope_head_dim, MoE with dense first layers
and no shared expert, GQA with one KV head); claims that are physical, need one condition, several, or none can rescue; per-node
(n_gpus = 8) claims; FP8/INT4 weights and FP8/INT4 KV (INT4 is 0.5 bytes, never 0); a context so
long that no batch helps; the batch's memory check where GB vs GiB flips the answer both ways;
then every ValueError of the statement as input checks. Ceilings are kept away from integer
boundaries, except in the binary-exact cases (fraction_of_peak exactly 1 and 4,
max_weight_bytes_per_param exactly 0.5), which hit the statement's <= and >= exactly.
"""

from __future__ import annotations

import dataclasses
import math

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import (A100_SXM_80GB, B200, DEEPSEEK_V3, H100_SXM, H200_SXM, LLAMA_3_1_8B, LLAMA_3_1_70B,
                             MIXTRAL_8X7B, DType, ModelConfig)

RTOL = 1e-9
FLOATS = ("bytes_per_token", "implied_bytes_per_s", "fraction_of_peak", "max_weight_bytes_per_param",
          "min_tokens_per_step")
KEYS = set(FLOATS) | {"physical", "min_gpus", "min_batch", "conditions"}

TIED_SMALL = ModelConfig(name="made-up-tied", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8, head_dim=64,
                         ffn_size=8192, vocab_size=128256, tied_embeddings=True, max_context=131072)
MLA_NO_QLORA = dataclasses.replace(DEEPSEEK_V3, name="made-up-mla-no-q-lora", n_layers=27, hidden_size=2048,
                                   n_heads=16, n_kv_heads=16, ffn_size=10944, vocab_size=102400, n_routed_experts=64,
                                   n_shared_experts=2, experts_per_token=6, moe_ffn_size=1408, first_dense_layers=1,
                                   q_lora_rank=0)
MOE_NO_SHARED = dataclasses.replace(MIXTRAL_8X7B, name="made-up-moe", n_routed_experts=16, experts_per_token=4,
                                    moe_ffn_size=4096, first_dense_layers=2, ffn_size=11008)
MQA = dataclasses.replace(LLAMA_3_1_8B, name="made-up-mqa", n_kv_heads=1, n_layers=20)
# Every real MLA model here has v_head_dim == qk_nope_head_dim (128): this one does not (192 vs 96), so
# an o-projection or kv_b sized with qk_nope_head_dim in place of v_head_dim shows.
MLA_WIDE_V = dataclasses.replace(DEEPSEEK_V3, name="made-up-mla-wide-v", n_layers=12, hidden_size=3072, n_heads=24,
                                 n_kv_heads=24, ffn_size=8192, vocab_size=65536, n_routed_experts=32,
                                 n_shared_experts=1, experts_per_token=4, moe_ffn_size=1024, first_dense_layers=2,
                                 q_lora_rank=768, kv_lora_rank=256, qk_nope_head_dim=96, qk_rope_head_dim=32,
                                 v_head_dim=192, head_dim=128)
# The smallest ranks and expert count that still switch a branch on: MLA with kv_lora_rank = q_lora_rank = 1
# and MoE layers with a single routed expert (plus one shared), so a "> 1" in place of "> 0" shows.
MLA_RANKS_1 = dataclasses.replace(MLA_WIDE_V, name="made-up-mla-ranks-1-one-expert", q_lora_rank=1, kv_lora_rank=1,
                                  n_routed_experts=1, experts_per_token=1, n_shared_experts=1)
MODELS = [LLAMA_3_1_8B, LLAMA_3_1_70B, MIXTRAL_8X7B, DEEPSEEK_V3, TIED_SMALL, MLA_NO_QLORA, MOE_NO_SHARED, MQA,
          MLA_WIDE_V, MLA_RANKS_1]
# A toy model (832 weights, 16 B of BF16 KV per token) on a toy GPU (1000 B/s): a claim below one token/s, and
# BW / N = 1333.33 B, whose fraction matters at this scale.
TOY = ModelConfig(name="made-up-toy", n_layers=1, hidden_size=8, n_heads=2, n_kv_heads=1, head_dim=4, ffn_size=16,
                  vocab_size=32, max_context=4096)
TOY_GPU = dataclasses.replace(H100_SXM, name="made-up-toy-gpu", hbm_bytes_per_s=1000.0, hbm_bytes=10**6)
# A made-up model whose active parameter count is exactly 2**29 (16 layers of 2**24: attention 2**22 with
# d = 1024, 8 heads of 128, 8 KV heads, plus an MLP of 3 * 1024 * 4096; LM head 1024 * 262144 = 2**28) and
# whose BF16 KV is 2**16 bytes per token: with power-of-two claims and bandwidths every quantity below is
# exact in binary floating point, whatever the order of the operations.
BINARY_MODEL = ModelConfig(name="made-up-binary-2^29", n_layers=16, hidden_size=1024, n_heads=8, n_kv_heads=8,
                           head_dim=128, ffn_size=4096, vocab_size=262144, max_context=131072)
FAST = dataclasses.replace(H200_SXM, name="made-up-fast", hbm_bytes_per_s=12e12, hbm_bytes=288 * 10**9)


def _check(got, want: dict) -> None:
    if not isinstance(got, dict):
        fail(f"expected a dict, got {type(got).__name__}")
    if set(got) != KEYS:
        fail(f"dict keys differ: missing {sorted(KEYS - set(got))}, unexpected {sorted(map(str, set(got) - KEYS))}")
    for k in FLOATS:
        expect_close(got[k], want[k], name=k, rtol=RTOL)
    for k in ("physical", "min_gpus", "min_batch"):
        expect_equal(got[k], want[k], name=k)
    c = got["conditions"]
    expect_equal(list(c) if isinstance(c, (list, tuple)) else c, want["conditions"], name="conditions")


def _clear(ref, args) -> bool:
    model, gpu, n, ctx, wd, kd, ng = args[:7]
    p = ref.decode_weight_params(model) * wd.bytes_per_element
    k = ctx * ref.kv_bytes_per_token(model, kd)
    bw = ng * gpu.hbm_bytes_per_s
    xs = [n * (p + k) / gpu.hbm_bytes_per_s]
    if n * k < bw:
        xs.append(n * p / (bw - n * k))
    return all(abs(x - round(x)) > 1e-9 * max(1.0, x) for x in xs)


def grade(g: Grading) -> None:
    ref = g.reference()
    for m in MODELS:
        tag = m.name.replace(" ", "-")
        with g.case(f"params-{tag}"):
            expect_equal(g.call("decode_weight_params", m), ref.decode_weight_params(m))
        for kd in (DType.BF16, DType.FP8, DType.INT4):
            with g.case(f"kv-{tag}-{kd.value}"):
                expect_close(g.call("kv_bytes_per_token", m, kd), ref.kv_bytes_per_token(m, kd), rtol=RTOL)
    B, F8, I4 = DType.BF16, DType.FP8, DType.INT4
    claims = [
        ("8b-1000-h100", (LLAMA_3_1_8B, H100_SXM, 1000.0, 2048, B, B, 1, 8, 5.0)),
        ("8b-150-h100-physical", (LLAMA_3_1_8B, H100_SXM, 150.0, 2048, B, B, 1, 8, 5.0)),
        ("70b-1000-h100-nothing-alone", (LLAMA_3_1_70B, H100_SXM, 1000.0, 2048, B, B, 1, 8, 5.0)),
        ("70b-1000-node-batch-only", (LLAMA_3_1_70B, H100_SXM, 1000.0, 2048, B, B, 8, 8, 5.0)),
        ("70b-fp8-300-h200-node", (LLAMA_3_1_70B, H200_SXM, 300.0, 8192, F8, F8, 2, 8, 3.0)),
        ("70b-int4-120-h100", (LLAMA_3_1_70B, H100_SXM, 120.0, 1024, I4, F8, 1, 4, 2.5)),
        ("8b-quantization-rescues", (LLAMA_3_1_8B, H100_SXM, 350.0, 512, B, B, 1, 1, 1.0)),
        ("8b-only-int4-rescues", (LLAMA_3_1_8B, H100_SXM, 600.0, 512, B, B, 1, 1, 1.0)),
        ("mixtral-active-experts", (MIXTRAL_8X7B, A100_SXM_80GB, 180.0, 4096, B, B, 2, 8, 4.0)),
        ("deepseek-v3-fp8-h200-node", (DEEPSEEK_V3, H200_SXM, 350.0, 32768, F8, B, 8, 16, 3.0)),
        ("deepseek-v3-physical", (DEEPSEEK_V3, B200, 90.0, 4096, F8, B, 8, 8, 2.0)),
        ("long-context-no-batch", (LLAMA_3_1_8B, H100_SXM, 40.0, 1_000_000, B, B, 1, 8, 1.0)),
        ("zero-context", (TIED_SMALL, FAST, 2000.0, 0, B, B, 1, 8, 1.5)),
        ("mla-made-up", (MLA_NO_QLORA, H100_SXM, 900.0, 8192, B, B, 1, 2, 4.0)),
        ("moe-made-up", (MOE_NO_SHARED, B200, 700.0, 16384, F8, F8, 1, 3, 1.3)),
        ("mqa-made-up", (MQA, A100_SXM_80GB, 400.0, 65536, B, F8, 1, 8, 2.0)),
        # v_head_dim (192) != qk_nope_head_dim (96): the o and kv_b projections must use v_head_dim
        ("mla-wide-v-made-up", (MLA_WIDE_V, H100_SXM, 3000.0, 8192, B, B, 1, 4, 2.5)),
        ("mla-wide-v-fp8", (MLA_WIDE_V, H100_SXM, 4000.0, 4096, F8, F8, 1, 1, 1.2)),
        ("70b-int4-weights-int4-kv", (LLAMA_3_1_70B, H200_SXM, 75.0, 32768, I4, I4, 1, 2, 2.0)),
        # INT4 KV is 0.5 bytes per element: 6.55 GB of KV at 200K tokens makes 190 tok/s unphysical (1.22x the
        # H100); an INT4 KV truncated to 0 bytes would call it physical.
        ("8b-int4-kv-long-context", (LLAMA_3_1_8B, H100_SXM, 190.0, 200_000, B, I4, 1, 2, 1.5)),
        # The batch's memory check, decimal GB: 6 sequences need 76.2 GB, under the H100's 80e9 bytes
        # but over 80e9 bytes read as 74.5 (GiB); 8 sequences need 83.7 GB, over 80e9 but under 80 GiB.
        ("batch-fits-80-gb", (LLAMA_3_1_8B, H100_SXM, 260.0, 77824, B, B, 1, 1, 1.0)),
        ("batch-over-80-gb", (LLAMA_3_1_8B, H100_SXM, 316.0, 65536, B, B, 1, 1, 1.0)),
        ("toy-under-one-token-per-s", (TOY, TOY_GPU, 0.75, 16, B, B, 1, 2, 1.2)),
    ]
    for name, args in claims:
        if not _clear(ref, args):
            raise RuntimeError(f"claim case {name} sits on an integer boundary")
        with g.case(f"claim-{name}"):
            _check(g.call("check_claim", *args), ref.check_claim(*args))
    # Exact binary tie: FP8 weights (W = P bytes), no KV, bandwidth 512 * P B/s and 2048 tok/s give
    # fraction_of_peak exactly 4.0 (every float step is exact); max_tokens_per_step 4.0 must
    # count "speculation" (<=), and ceil gives min_gpus = min_batch = 4 exactly.
    p8 = ref.decode_weight_params(LLAMA_3_1_8B)
    binary = dataclasses.replace(H100_SXM, name="made-up-binary", hbm_bytes_per_s=float(p8 * 512))
    for name, args in [("speculation-exact-tie", (LLAMA_3_1_8B, binary, 2048.0, 0, F8, B, 1, 2, 4.0)),
                       ("speculation-just-short", (LLAMA_3_1_8B, binary, 2048.0, 0, F8, B, 1, 2, 3.999))]:
        with g.case(f"claim-{name}"):
            _check(g.call("check_claim", *args), ref.check_claim(*args))
    # Exact boundaries on a model of 2**29 parameters (see BINARY_MODEL; every float step is exact):
    # - FP8 weights (2**29 B) + 1024 tokens of FP8 KV (2**25 B) at 2048 tok/s on 17 * 2**36 B/s: fraction_of_peak
    #   is exactly 1.0, which is physical (<= 1); min_gpus = min_batch = 1 exactly.
    # - BF16 weights (2**30 B) + 2048 tokens of BF16 KV (2**27 B) at 2048 tok/s on 3 * 2**38 B/s: BW/N - K =
    #   2**28 B, so max_weight_bytes_per_param is exactly 0.5 and "quantization" (>= 0.5, INT4) counts.
    pb = ref.decode_weight_params(BINARY_MODEL)
    if pb != 2**29 or ref.kv_bytes_per_token(BINARY_MODEL, B) != 2**16:
        raise RuntimeError("BINARY_MODEL is not the power-of-two model it should be")
    at_peak = dataclasses.replace(H100_SXM, name="made-up-exactly-at-peak", hbm_bytes_per_s=float(17 * 2**36))
    int4_edge = dataclasses.replace(H100_SXM, name="made-up-int4-edge", hbm_bytes_per_s=float(3 * 2**38))
    # - BF16 weights and 1024 tokens of BF16 KV (2**26 B) at 2048 tok/s: on 2**37 B/s, N K = BW exactly, so no
    #   batch reaches the claim (min_batch 0, no division by BW - N K = 0); on 2**38 B/s min_batch is exactly 16
    #   and W + 16 K = 2**31 B, exactly the HBM of a 2**31-byte GPU, so the batch fits (<=).
    kv_edge = dataclasses.replace(H100_SXM, name="made-up-kv-edge", hbm_bytes_per_s=float(2**37))
    mem_edge = dataclasses.replace(H100_SXM, name="made-up-memory-edge", hbm_bytes_per_s=float(2**38), hbm_bytes=2**31)
    for name, args in [("kv-alone-uses-all-bandwidth", (BINARY_MODEL, kv_edge, 2048.0, 1024, B, B, 1, 32, 20.0)),
                       ("batch-fills-memory-exactly", (BINARY_MODEL, mem_edge, 2048.0, 1024, B, B, 1, 1, 1.0)),
                       ("fraction-exactly-1-is-physical", (BINARY_MODEL, at_peak, 2048.0, 1024, F8, F8, 1, 1, 1.0)),
                       ("int4-exactly-enough", (BINARY_MODEL, int4_edge, 2048.0, 2048, B, B, 1, 1, 1.5))]:
        with g.case(f"claim-{name}"):
            _check(g.call("check_claim", *args), ref.check_claim(*args))
    # Input checks (the statement's ValueErrors), after every core case.
    base = (LLAMA_3_1_8B, H100_SXM, 1000.0, 2048, B, B, 1, 8, 5.0)
    bad = [("zero-claim", 2, 0.0), ("nan-claim", 2, math.nan), ("inf-claim", 2, math.inf), ("negative-context", 3, -1),
           ("zero-gpus", 6, 0), ("bool-gpus", 6, True), ("zero-max-gpus", 7, 0), ("bool-max-gpus", 7, True),
           ("float-gpus", 6, 2.0), ("tokens-per-step-below-1", 8, 0.5), ("tokens-per-step-nan", 8, math.nan),
           ("tokens-per-step-inf", 8, math.inf), ("float-context", 3, 2048.0), ("dtype-not-enum", 4, "bf16"),
           ("kv-dtype-not-enum", 5, "int4"), ("gpu-not-a-gpu", 1, "H100 SXM"), ("model-not-a-model", 0, "llama")]
    for name, i, v in bad:
        args = list(base)
        args[i] = v
        with g.case(f"claim-rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "check_claim", *args)
    with g.case("params-rejects-dict", group=INPUT_CHECKS):
        g.raises("ValueError", "decode_weight_params", {"hidden_size": 4096})
    with g.case("kv-rejects-dtype-string", group=INPUT_CHECKS):
        g.raises("ValueError", "kv_bytes_per_token", LLAMA_3_1_8B, "int4")
    with g.case("kv-rejects-model-dict", group=INPUT_CHECKS):
        g.raises("ValueError", "kv_bytes_per_token", {"n_layers": 32}, DType.BF16)
