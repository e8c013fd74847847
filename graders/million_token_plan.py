"""Hidden cases for million-token-plan: KV bytes and causal prefill FLOPs of tabled and made-up
dense models (GQA, MHA, MQA, MLA, MLA with v != n and head_dim holding the RoPE width, tied) at
1 to 3M tokens, 2^20 and 10^6 side by side; TP x CP
plans on the four GPUs and a made-up one, with fewer KV heads than TP ranks (replication: the
trap), ragged context over CP, every dtype, and boundary cases where need sits a fraction of a
percent from the budget, exactly on it (binary-exact ties fit) or 4 KiB over it; the replacement
rule through each of its four branches (FP8 KV already, INT4 KV, a TP-4 plan that must become
TP 8 x CP k), a node search that needs 28 to about 1,750 nodes, answers that keep or lower the GPU
count, and TP 8 checked only when step 3 is reached; the menu of single changes on several plans
(one with n_heads x head_dim != hidden_size); then the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
BF16, FP8, FP32, INT4, INT8, FP16 = DType.BF16, DType.FP8, DType.FP32, DType.INT4, DType.INT8, DType.FP16
L70, L8 = specs.LLAMA_3_1_70B, specs.LLAMA_3_1_8B
H100, H200, B200, A100 = specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB
ODD_GPU = dataclasses.replace(H100, name="made-up-96GB", hbm_bytes=96 * 10**9)
M20 = 2**20

GQA4 = ModelConfig(name="made-up-gqa4", n_layers=48, hidden_size=6144, n_heads=48, n_kv_heads=4,
                   head_dim=128, ffn_size=16384, vocab_size=100352)
MHA = ModelConfig(name="made-up-mha", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
MQA_WIDE = ModelConfig(name="made-up-mqa", n_layers=26, hidden_size=2304, n_heads=8, n_kv_heads=1,
                       head_dim=256, ffn_size=9216, vocab_size=256000, tied_embeddings=True)
MLA = ModelConfig(name="made-up-mla", n_layers=30, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
MLA_RQ0 = dataclasses.replace(MLA, name="made-up-mla-rq0", q_lora_rank=0, n_heads=16, n_kv_heads=16)
# MLA with v != n and head_dim holding the RoPE width, as Hugging Face's DeepseekV3Config sets it:
# a value width taken from qk_nope_head_dim or a query width taken from head_dim is off.
MLA_V = ModelConfig(name="made-up-mla-v160", n_layers=24, hidden_size=2560, n_heads=16, n_kv_heads=16,
                    head_dim=224, ffn_size=9728, vocab_size=102400, q_lora_rank=1024,
                    kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=96, v_head_dim=160)
MLA_V_RQ0 = dataclasses.replace(MLA_V, name="made-up-mla-v160-rq0", q_lora_rank=0)
# 12 query heads: TP 4 is valid, TP 8 is not (checked only once replacement reaches step 3).
HEADS12 = ModelConfig(name="made-up-12-heads", n_layers=28, hidden_size=1536, n_heads=12, n_kv_heads=4,
                      head_dim=128, ffn_size=8960, vocab_size=151936)
# the smallest models allowed: GQA with one head of width 1; MLA with LoRA ranks of 1
ONES = ModelConfig(name="made-up-ones", n_layers=1, hidden_size=64, n_heads=1, n_kv_heads=1, head_dim=1,
                   ffn_size=128, vocab_size=1000)
MLA_RANK1 = dataclasses.replace(MLA, name="made-up-mla-ranks-1", q_lora_rank=1, kv_lora_rank=1)
# tiny, tied, with an odd parameter count (124,605): one parameter is 8e-6 of the weights, and INT4
# weights are a half byte off a whole number (weights / tp, not a floor)
TINY_TIED = ModelConfig(name="made-up-tiny-tied", n_layers=3, hidden_size=65, n_heads=1, n_kv_heads=1, head_dim=3,
                        ffn_size=97, vocab_size=1001, tied_embeddings=True)
MODELS = [L70, L8, GQA4, MHA, MQA_WIDE, MLA, MLA_RQ0, MLA_V, MLA_V_RQ0, ONES, MLA_RANK1]
PLAN_KEYS_INT = ("cp", "kv_heads_per_gpu")
PLAN_KEYS_FLOAT = ("weights_per_gpu", "kv_per_gpu", "need", "budget")


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-").replace(".", "")


def _check_plan(out, exp) -> None:
    keys = PLAN_KEYS_INT + PLAN_KEYS_FLOAT + ("fits",)
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {sorted(keys)}")
    for k in PLAN_KEYS_INT + ("fits",):
        expect_equal(out[k], exp[k], name=f"[{k!r}]")
    for k in PLAN_KEYS_FLOAT:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _check_repl(out, exp, where: str = "") -> None:
    keys = ("fits", "replacement", "n_gpus")
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"{where}expected a dict with exactly the keys {sorted(keys)}")
    for k in keys:
        expect_equal(out[k], exp[k], name=f"{where}[{k!r}]")


def _boundary_cases(ref, rng: random.Random) -> list:
    """Plans whose need is put exactly on, just under or just over the budget via the reserve."""
    bases = [
        ("llama-70b", L70, H100, 8, 8, M20, BF16, BF16),
        ("llama-70b-1e6", L70, H100, 8, 8, 10**6, BF16, BF16),
        ("llama-70b-kv4", dataclasses.replace(L70, n_kv_heads=4), H100, 8, 8, M20, BF16, BF16),
        ("llama-70b-mqa", dataclasses.replace(L70, n_kv_heads=1), H200, 8, 8, M20, BF16, FP8),
        ("gqa4-tp8", GQA4, H100, 16, 8, M20, BF16, BF16),
        ("llama-8b-tp2", L8, H100, 8, 2, M20, BF16, BF16),
        ("mla", MLA, B200, 8, 8, 3 * M20, FP8, BF16),
        ("llama-70b-int4", L70, H100, 8, 8, M20, INT4, FP8),
        ("mla-v160", MLA_V, H100, 8, 8, 4 * M20, BF16, BF16),
    ]
    out = []
    for name, m, gpu, n, tp, ctx, wd, kd in bases:
        r0 = ref.plan_fits(m, gpu, n, tp, ctx, wd, kd, 0.875, 0.0)
        slack = r0["budget"] - r0["weights_per_gpu"] - r0["kv_per_gpu"]
        if slack < 0:
            continue
        out.append((f"boundary-tie-{name}", m, gpu, n, tp, ctx, wd, kd, 0.875, slack))
        for tag, delta in (("kv", r0["kv_per_gpu"]), ("weights", r0["weights_per_gpu"])):
            frac = rng.choice((0.003, 0.006, 0.009))
            out.append((f"boundary-under-{tag}-{name}", m, gpu, n, tp, ctx, wd, kd, 0.875,
                        max(0.0, slack - frac * delta)))
            out.append((f"boundary-over-{tag}-{name}", m, gpu, n, tp, ctx, wd, kd, 0.875,
                        slack + frac * delta))
        # 4 KiB over a budget of 70e9: 6e-8 relative, exact in binary (every term is a multiple
        # of 1/4), so only an exact comparison says it does not fit.
        out.append((f"boundary-over-4kib-{name}", m, gpu, n, tp, ctx, wd, kd, 0.875, slack + 4096.0))
    return out


PLANS = [
    # (name, model, gpu, n_gpus, tp, context, weight dtype, kv dtype, util, reserve)
    ("tiny-tied-int4", TINY_TIED, H100, 1, 1, 1000, INT4, BF16, 0.9, 0.0),
    # MLA with q_lora_rank 1: its norm of length r_q = 1 per layer is counted (30 parameters, 9e-9)
    ("mla-ranks-1-int4", MLA_RANK1, H100, 8, 8, M20, INT4, BF16, 0.9, 4e9),
    ("llama-70b-8xh100", L70, H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-8xh100-1e6", L70, H100, 8, 8, 10**6, BF16, BF16, 0.9, 4e9),
    ("llama-70b-kv4-trap", dataclasses.replace(L70, n_kv_heads=4), H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-mqa-trap", dataclasses.replace(L70, n_kv_heads=1), H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-kv16", dataclasses.replace(L70, n_kv_heads=16), H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-mha-cp8", dataclasses.replace(L70, n_kv_heads=64), H100, 64, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-tp4-cp2", L70, H100, 8, 4, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-tp2-cp4", L70, H200, 8, 2, M20, FP8, FP8, 0.9, 2e9),
    ("llama-70b-ragged-cp3", L70, H100, 24, 8, 1_000_001, BF16, BF16, 0.85, 3e9),
    ("llama-70b-a100", L70, A100, 16, 8, M20, BF16, BF16, 0.9, 4e9),
    # an MLA latent of width 1 is still MLA: one latent per GPU whatever tp is
    ("mla-latent-width-1", dataclasses.replace(MLA, name="made-up-mla-rank1", kv_lora_rank=1), H100, 8, 8, M20,
     BF16, BF16, 0.9, 4e9),
    ("llama-70b-b200-fp32-kv", L70, B200, 8, 8, M20, FP8, FP32, 0.92, 5e9),
    ("llama-8b-1xh100", L8, H100, 1, 1, M20, BF16, BF16, 0.9, 2e9),
    ("llama-8b-odd-gpu", L8, ODD_GPU, 4, 4, 3_000_000, INT4, INT8, 1.0, 0.0),
    ("gqa4-tp8-replicated", GQA4, H200, 8, 8, M20, BF16, FP16, 0.9, 4e9),
    ("mha-tp4", MHA, H100, 8, 4, 500_000, BF16, BF16, 0.9, 1e9),
    ("mqa-wide-tp8", MQA_WIDE, H100, 8, 8, M20, BF16, BF16, 0.8, 1e9),
    ("mla-tp8", MLA, H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("mla-rq0-tp16", MLA_RQ0, H200, 32, 16, 2 * M20, BF16, FP8, 0.9, 4e9),
    ("mla-v160-tp8", MLA_V, H100, 8, 8, 4 * M20, BF16, BF16, 0.9, 4e9),
    ("mla-v160-rq0-tp4-cp4", MLA_V_RQ0, B200, 16, 4, 3 * M20, FP8, BF16, 0.9, 4e9),
    ("tiny-context", L70, H100, 8, 8, 1, BF16, BF16, 0.9, 0),
]

REPLACEMENTS = [
    ("none-llama-70b", L70, H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("none-mqa-trap", dataclasses.replace(L70, n_kv_heads=1), H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("fp8-kv16", dataclasses.replace(L70, n_kv_heads=16), H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("fp8-from-fp32", L70, H100, 8, 8, M20, BF16, FP32, 0.9, 4e9),
    ("cp-mha", dataclasses.replace(L70, n_kv_heads=64), H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("cp-mha-already-fp8", dataclasses.replace(L70, n_kv_heads=64), H100, 8, 8, M20, BF16, FP8, 0.9, 4e9),
    ("cp-mha-int4-kv", dataclasses.replace(L70, n_kv_heads=64), H100, 8, 8, M20, BF16, INT4, 0.9, 4e9),
    ("cp-from-tp4", L70, H100, 4, 4, M20, BF16, BF16, 0.9, 4e9),
    ("cp-from-tp4-mha", MHA, A100, 8, 4, 4 * M20, BF16, BF16, 0.9, 4e9),
    ("cp-1e6-context", dataclasses.replace(L70, n_kv_heads=64), H200, 8, 8, 10**6, BF16, BF16, 0.9, 4e9),
    ("cp-mla", MLA, H100, 8, 8, 16 * M20, BF16, BF16, 0.9, 4e9),
    ("cp-mla-v160", MLA_V, H100, 8, 8, 32 * M20, BF16, BF16, 0.9, 4e9),
    # the node search is bounded only by context_len: 28, about 220 and about 1,750 nodes
    ("cp-28-nodes", L70, H100, 8, 8, 2**25, BF16, BF16, 0.9, 4e9),
    ("cp-hundreds-of-nodes", L70, H100, 8, 8, 2**28, BF16, BF16, 0.9, 4e9),
    ("cp-thousands-of-nodes", L70, H100, 8, 8, 2**31, BF16, BF16, 0.9, 4e9),
    ("cp-thousands-of-nodes-mha", dataclasses.replace(L70, n_kv_heads=64), H200, 16, 8, 2**28, BF16, FP8,
     0.9, 4e9),
    # the smallest k >= 1, not the smallest k above the current node count: same GPUs, or fewer
    ("cp-same-gpus-from-tp4", L70, H100, 8, 4, 2 * M20, BF16, FP8, 0.9, 4e9),
    ("cp-fewer-gpus-from-tp2", L70, H100, 32, 2, M20, BF16, BF16, 0.9, 4e9),
    # fits at TP 4: TP 8 (invalid for 12 heads) is never reached, so no ValueError
    ("none-tp8-never-reached", HEADS12, H100, 4, 4, M20, BF16, BF16, 0.9, 4e9),
    ("impossible-weights", L70, A100, 8, 8, M20, FP32, BF16, 0.9, 40e9),
    ("impossible-reserve", L8, H100, 8, 8, M20, BF16, BF16, 0.5, 40e9),
]

BREAKS = [
    ("llama-70b-8xh100", L70, H100, 8, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-tp4", L70, H100, 8, 4, M20, BF16, BF16, 0.9, 4e9),
    ("llama-70b-h200-fp8", L70, H200, 8, 8, M20, FP8, FP8, 0.9, 4e9),
    ("gqa4-h100", GQA4, H100, 16, 8, M20, BF16, BF16, 0.9, 4e9),
    ("llama-8b-one-h200-bf16-weights-fp8-kv", L8, H200, 1, 1, 400_000, BF16, FP8, 0.9, 4e9),
    ("llama-70b-one-token", L70, H100, 8, 8, 1, BF16, BF16, 0.9, 4e9),
    ("llama-8b-2xh100", L8, H100, 2, 2, 10**6, BF16, BF16, 0.9, 2e9),
    # TP 1: MQA's one KV head fits 2M tokens on one GPU; two KV heads would not (FP8 would be needed)
    ("llama-8b-one-h100-2m", L8, H100, 1, 1, 2 * M20, BF16, BF16, 0.9, 2e9),
    # n_heads x head_dim = 16384 != hidden_size: MHA has 64 KV heads, not hidden_size // head_dim
    ("llama-70b-head-dim-256", dataclasses.replace(L70, head_dim=256), H100, 8, 8, 2**18, BF16, BF16,
     0.9, 4e9),
]


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"million-token-plan:{g.salt}")
    for m in MODELS:
        for ctx in (M20, 10**6, 1, 131072, 3_000_001):
            for dt in (BF16, FP8, FP32, INT4):
                if ctx not in (M20, 10**6) and dt in (FP32, INT4):
                    continue
                with g.case(f"kv-{_slug(m.name)}-{ctx}-{dt.value}"):
                    expect_close(g.call("kv_bytes_per_request", m, ctx, dt),
                                 ref.kv_bytes_per_request(m, ctx, dt), name="kv bytes", rtol=RTOL)
    for m in MODELS:
        for P in (1, 2, 8192, 131072, 10**6, M20, 12345):
            with g.case(f"prefill-{_slug(m.name)}-{P}"):
                out = g.call("prefill_flops", m, P)
                exp = ref.prefill_flops(m, P)
                keys = ("weights", "attention", "total", "attention_share")
                if not isinstance(out, dict) or set(out) != set(keys):
                    fail(f"expected a dict with exactly the keys {sorted(keys)}")
                for k in keys:
                    expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)
    plans = PLANS + _boundary_cases(ref, rng)
    # two salted made-up GQA plans near their boundary
    for i in range(2):
        K = rng.choice((1, 2, 4, 8, 16))
        m = ModelConfig(name=f"salted-{i}", n_layers=rng.choice((40, 64, 80, 96)), hidden_size=8192,
                        n_heads=64, n_kv_heads=K, head_dim=128, ffn_size=rng.choice((22016, 28672)),
                        vocab_size=128256)
        r0 = ref.plan_fits(m, H200, 16, 8, M20, BF16, BF16, 0.875, 0.0)
        slack = r0["budget"] - r0["weights_per_gpu"] - r0["kv_per_gpu"]
        plans.append((f"salted-{i}", m, H200, 16, 8, M20, BF16, BF16, 0.875,
                      max(0.0, slack + rng.choice((-0.004, 0.004)) * r0["kv_per_gpu"])))
    for name, m, gpu, n, tp, ctx, wd, kd, util, res in plans:
        with g.case(f"plan-{name}-{_slug(gpu.name)}-n{n}-tp{tp}"):
            _check_plan(g.call("plan_fits", m, gpu, n, tp, ctx, wd, kd, util, res),
                        ref.plan_fits(m, gpu, n, tp, ctx, wd, kd, util, res))
    for name, m, gpu, n, tp, ctx, wd, kd, util, res in REPLACEMENTS:
        with g.case(f"replacement-{name}"):
            _check_repl(g.call("replacement", m, gpu, n, tp, ctx, wd, kd, util, res),
                        ref.replacement(m, gpu, n, tp, ctx, wd, kd, util, res))
    for name, m, gpu, n, tp, ctx, wd, kd, util, res in BREAKS:
        with g.case(f"what-breaks-{name}"):
            out = g.call("what_breaks", m, gpu, n, tp, ctx, wd, kd, util, res)
            exp = ref.what_breaks(m, gpu, n, tp, ctx, wd, kd, util, res)
            if not isinstance(out, dict) or set(out) != set(exp):
                fail(f"expected a dict with exactly the keys {sorted(exp)}")
            for k in exp:
                _check_repl(out[k], exp[k], where=f"[{k!r}]")
    # Input checks.
    a = (BF16, BF16, 0.9, 4e9)
    checks = [
        ("kv-moe", "kv_bytes_per_request", (specs.MIXTRAL_8X7B, M20, BF16)),
        ("kv-zero-context", "kv_bytes_per_request", (L70, 0, BF16)),
        ("kv-float-context", "kv_bytes_per_request", (L70, 1e6, BF16)),
        ("kv-heads-not-multiple", "kv_bytes_per_request", (dataclasses.replace(L70, n_kv_heads=7), M20, BF16)),
        ("prefill-zero-prompt", "prefill_flops", (L70, 0)),
        ("prefill-bool-prompt", "prefill_flops", (L70, True)),
        ("prefill-zero-layers", "prefill_flops", (dataclasses.replace(L70, n_layers=0), 10)),
        ("plan-gpus-not-multiple-of-tp", "plan_fits", (L70, H100, 12, 8, M20) + a),
        ("plan-zero-tp", "plan_fits", (L70, H100, 8, 0, M20) + a),
        ("plan-zero-context", "plan_fits", (L70, H100, 8, 8, 0) + a),
        ("plan-zero-gpus", "plan_fits", (L70, H100, 0, 8, M20) + a),
        ("kv-one-routed-expert", "kv_bytes_per_request",
         (dataclasses.replace(L70, n_routed_experts=1, experts_per_token=1), M20, BF16)),
        ("kv-zero-kv-heads", "kv_bytes_per_request", (dataclasses.replace(L70, n_kv_heads=0), M20, BF16)),
        ("kv-zero-head-dim", "kv_bytes_per_request", (dataclasses.replace(L70, head_dim=0), M20, BF16)),
        ("what-breaks-mla-latent-width-1", "what_breaks", (MLA_RANK1, H100, 8, 8, M20) + a),
        ("plan-heads-not-divisible-by-tp", "plan_fits", (L70, H100, 6, 3, M20) + a),
        ("plan-kv-heads-vs-tp", "plan_fits", (dataclasses.replace(L70, n_kv_heads=4, n_heads=48), H100, 6, 6, M20) + a),
        ("plan-util-zero", "plan_fits", (L70, H100, 8, 8, M20, BF16, BF16, 0.0, 4e9)),
        ("plan-util-above-one", "plan_fits", (L70, H100, 8, 8, M20, BF16, BF16, 1.1, 4e9)),
        ("plan-util-nan", "plan_fits", (L70, H100, 8, 8, M20, BF16, BF16, math.nan, 4e9)),
        ("plan-negative-reserve", "plan_fits", (L70, H100, 8, 8, M20, BF16, BF16, 0.9, -1.0)),
        ("plan-infinite-reserve", "plan_fits", (L70, H100, 8, 8, M20, BF16, BF16, 0.9, math.inf)),
        ("plan-moe", "plan_fits", (specs.MIXTRAL_8X7B, H100, 8, 8, M20) + a),
        ("replacement-gpus-not-multiple", "replacement", (L70, H100, 10, 4, M20) + a),
        ("replacement-tp8-invalid-when-reached", "replacement", (HEADS12, H100, 4, 4, 16 * M20) + a),
        ("what-breaks-mla", "what_breaks", (MLA, H100, 8, 8, M20) + a),
        ("what-breaks-zero-context", "what_breaks", (L70, H100, 8, 8, 0) + a),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
