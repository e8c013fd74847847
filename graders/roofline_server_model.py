"""Hidden cases for roofline-server-model.

1. ``step_model`` on tabled and made-up dense models (GQA with 8 and 4 KV heads, MHA, MQA, MLA with
   and without a query LoRA, MLA of ranks 1, the one-of-everything model) and GPUs (the four tables and a made-up one), TP 1 to 16 (KV heads
   replicated past TP = K), every dtype (FP8 weights use the FP8 peak where the GPU has one, the
   BF16 peak on an A100), efficiencies below 1, explicit and default links, compute-bound points.
2. Binary-exact boundaries on a model of 2^29 weights and 2^16 KV bytes per token on a GPU of
   2^40 B/s: memory time == compute time (binding "memory"), overhead exactly 10% of the step,
   KV time == weight time, all-reduce time exactly 10% of the step over the default link
   (NVLink / 2); each with a neighbour just on the other side; the KV pool exactly full (blocks of
   16 tokens and of 1) and empty, a one-token context, a link of 1 B/s.
3. ``regime_flags`` on reference steps; ``audit`` on seeded point lists (points inside the
   tolerance that are still flagged), and on the gpt-fast A100 sweep.
Then the statement's ValueErrors as input checks.
"""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
FLOATS = ("weight_s", "kv_s", "compute_s", "comm_s", "overhead_s", "t_s")
AUDIT_KEYS = ("model_s", "residual", "outside_tol", "flags", "checks", "trusted")

GQA4 = ModelConfig(name="made-up-gqa4", n_layers=40, hidden_size=5120, n_heads=32, n_kv_heads=4,
                   head_dim=128, ffn_size=13824, vocab_size=100352)
LLAMA2_7B = ModelConfig(name="Llama-2-7B", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                        head_dim=128, ffn_size=11008, vocab_size=32000, max_context=4096)
MQA = ModelConfig(name="made-up-mqa", n_layers=26, hidden_size=2304, n_heads=16, n_kv_heads=1,
                  head_dim=256, ffn_size=9216, vocab_size=256000, tied_embeddings=True)
MLA = ModelConfig(name="made-up-mla-dense", n_layers=30, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
MLA_RQ0 = ModelConfig(name="made-up-mla-rq0", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=224, ffn_size=10944, vocab_size=102400, q_lora_rank=0,
                      kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=96, v_head_dim=160)
# 16 layers of 2^24 weights (attention 2^22, MLP 3 x 1024 x 4096) + an LM head of 2^28: 2^29 weights;
# BF16 KV 16 x 2 x 8 x 128 x 2 = 2^16 bytes per token; attention 2^16 FLOPs per key.
BINARY = ModelConfig(name="made-up-binary", n_layers=16, hidden_size=1024, n_heads=8, n_kv_heads=8,
                     head_dim=128, ffn_size=4096, vocab_size=262144)
# MLA of ranks 1 (a rank > 0 is MLA however small): one latent element and one RoPE element per token.
MLA_RANK_1 = ModelConfig(name="made-up-mla-rank-1", n_layers=4, hidden_size=256, n_heads=4, n_kv_heads=4,
                         head_dim=64, ffn_size=512, vocab_size=1000, q_lora_rank=1, kv_lora_rank=1,
                         qk_nope_head_dim=32, qk_rope_head_dim=1, v_head_dim=32)
# The smallest model the statement allows: one layer, one head of width 1, widths of 1.
ONE = ModelConfig(name="made-up-one-of-each", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1, head_dim=1,
                  ffn_size=1, vocab_size=1)
# An odd weight count P (odd LM head, even MLP): P s_w / tp and b (2P + A L) / tp are not whole
# numbers at tp = 4 in FP8, and its GPU's NVLink figure is odd, so NVLink / 2 is not whole either.
ODD_P = ModelConfig(name="made-up-odd-weights", n_layers=3, hidden_size=999, n_heads=8, n_kv_heads=2,
                    head_dim=64, ffn_size=2000, vocab_size=32001)
ODD_LINK = dataclasses.replace(specs.H100_SXM, name="made-up-odd-link", nvlink_bytes_per_s=2.0**20 + 1.5)
L8, L70 = specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B
ODD = dataclasses.replace(specs.H100_SXM, name="made-up-gpu", hbm_bytes_per_s=1.234e12,
                          bf16_dense_flops=0.5e15, fp8_dense_flops=1.5e15, nvlink_bytes_per_s=333e9)
GPUS = (specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, ODD)
B, H, F8, I8, I4, F32 = DType.BF16, DType.FP16, DType.FP8, DType.INT8, DType.INT4, DType.FP32
MODELS_TP = {L8: (1, 2, 4, 8, 16), L70: (1, 2, 8, 16), GQA4: (1, 2, 4, 8, 16), LLAMA2_7B: (1, 2, 4, 8),
             MQA: (1, 2, 8, 16), MLA: (1, 2, 4, 8), MLA_RQ0: (1, 4, 16), MLA_RANK_1: (1, 2), ONE: (1,)}
DTYPES = ((B, B), (F8, F8), (I4, F8), (B, I4), (I8, B), (F32, F32), (H, F8), (F8, B))
# gpt-fast README, A100-80GB at 330 W, batch 1, 5-token prompt: tokens/s at TP 1, 2, 4, 8
GPT_FAST_L2 = ((1, 104.9), (2, 168.84), (4, 254.02), (8, 328.43))


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def _check_step(out, want: dict) -> None:
    if not isinstance(out, dict) or set(out) != set(FLOATS) | {"binding"}:
        fail(f"expected a dict with exactly the keys {sorted(set(FLOATS) | {'binding'})}")
    for k in FLOATS:
        if want[k] == 0:
            expect_close(out[k], 0.0, name=f"[{k!r}]", rtol=0.0, atol=0.0)
        else:
            expect_close(out[k], want[k], name=f"[{k!r}]", rtol=RTOL)
    expect_equal(out["binding"], want["binding"], name="['binding']")


def _check_flags(out, want: list) -> None:
    if not isinstance(out, (list, tuple)) or list(out) != want:
        fail(f"flags: got {out!r}"[:300] + f"; expected {want!r}")


def _check_audit(out, want: list) -> None:
    if not isinstance(out, (list, tuple)) or len(out) != len(want):
        fail(f"expected a list of {len(want)} dicts, one per point")
    for i, (o, w) in enumerate(zip(out, want)):
        if not isinstance(o, dict) or set(o) != set(AUDIT_KEYS):
            fail(f"[{i}]: expected a dict with exactly the keys {sorted(AUDIT_KEYS)}")
        expect_close(o["model_s"], w["model_s"], name=f"[{i}]['model_s']", rtol=RTOL)
        expect_close(o["residual"], w["residual"], name=f"[{i}]['residual']", rtol=RTOL, atol=1e-12)
        for k in ("outside_tol", "trusted"):
            expect_equal(o[k], w[k], name=f"[{i}][{k!r}]")
        for k in ("flags", "checks"):
            if not isinstance(o[k], (list, tuple)) or list(o[k]) != w[k]:
                fail(f"[{i}][{k!r}]: got {o[k]!r}"[:300] + f"; expected {w[k]!r}")


def grade(g: Grading) -> None:
    ref = g.reference()
    rnd = random.Random(20240614)                   # the same hidden points every grading
    # 1. the step model
    i = 0
    for m, tps in MODELS_TP.items():
        for tp in tps:
            for _ in range(2):
                gpu = GPUS[i % len(GPUS)]
                wd, kd = DTYPES[i % len(DTYPES)]
                i += 1
                b = rnd.choice((1, 3, 16, 64, 256, 1024))
                L = rnd.choice((1, 6, 64, 1000, 8192, 100_000))
                ov = rnd.choice((0.0, 0.3e-3, 1.8e-3))
                eff = rnd.choice((1.0, 0.85, 0.6))
                alpha = rnd.choice((0.0, 4e-6, 20e-6))
                link = rnd.choice((None, None, 50e9, 450e9))
                args = (m, gpu, tp, b, L, wd, kd, ov, eff, alpha, link)
                with g.case(f"step-{_slug(m.name)}-{_slug(gpu.name)}-tp{tp}-b{b}-L{L}-{wd.value}-{kd.value}"):
                    _check_step(g.call("step_model", *args), ref.step_model(*args))
    for name, args in [
        ("compute-bound-8b-h100-b1024", (L8, specs.H100_SXM, 1, 1024, 64, B, B, 0.3e-3, 0.85, 0.0)),
        ("compute-bound-70b-fp8-h100-tp8", (L70, specs.H100_SXM, 8, 2048, 128, F8, F8, 0.3e-3, 0.9, 5e-6)),
        ("fp8-weights-a100-bf16-math", (L8, specs.A100_SXM_80GB, 1, 1024, 64, F8, F8, 0.0, 1.0, 0.0)),
        ("int8-weights-h100-bf16-math", (L8, specs.H100_SXM, 2, 2048, 64, I8, F8, 0.0, 1.0, 0.0)),
        ("gpt-fast-llama2-7b-tp8", (LLAMA2_7B, specs.A100_SXM_80GB, 8, 1, 6, B, B, 1.8e-3, 1700 / 2039, 4e-6)),
        ("default-link-b200-tp8", (L70, specs.B200, 8, 64, 4096, B, B, 0.0, 1.0, 0.0)),
        ("int-overhead", (L8, specs.H100_SXM, 1, 8, 512, B, B, 0, 1, 0)),
        ("odd-weights-odd-link-tp4", (ODD_P, ODD_LINK, 4, 1, 3, F8, F8, 0.0, 1.0, 0.0)),
    ]:
        with g.case(f"step-{name}"):
            _check_step(g.call("step_model", *args), ref.step_model(*args))

    # 2. binary-exact boundaries
    if ref.decode_weight_params(BINARY) != 2**29 or ref.kv_bytes_per_token_per_gpu(BINARY, 1, B) != 2**16:
        raise RuntimeError("BINARY is not the power-of-two model it should be")
    slow = dataclasses.replace(specs.H100_SXM, name="made-up-2^40", hbm_bytes_per_s=float(2**40),
                               bf16_dense_flops=float(2**40), nvlink_bytes_per_s=float(2**41))
    fast = dataclasses.replace(slow, name="made-up-2^40-fast-math", bf16_dense_flops=float(2**50))
    slower = dataclasses.replace(slow, name="made-up-2^40-slower-math", bf16_dense_flops=float(2**40 - 2**20))
    alpha = 2.0**-19 - 2.0**-29
    ties = [
        # memory (2^30 + 2^27 B) / 2^40 == compute (2^30 + 2^27 FLOP) / 2^40: "memory"
        ("binding-tie-is-memory", (BINARY, slow, 1, 1, 2048, B, B, 0.0, 1.0, 0.0), 1, 10**6, 16),
        ("binding-just-compute", (BINARY, slower, 1, 1, 2048, B, B, 0.0, 1.0, 0.0), 1, 10**6, 16),
        # overhead 2^-13 s, memory 9 x 2^-13 s: exactly 10% of the step
        ("overhead-exactly-10pct", (BINARY, fast, 1, 1, 2048, B, B, 2.0**-13, 1.0, 0.0), 1, 10**6, 16),
        ("overhead-just-under-10pct", (BINARY, fast, 1, 1, 2048, B, B, 2.0**-13 * (1 - 2.0**-20), 1.0, 0.0),
         1, 10**6, 16),
        # KV 4 x 4096 x 2^16 B == weights 2^30 B
        ("kv-equals-weights", (BINARY, fast, 1, 4, 4096, B, B, 0.0, 1.0, 0.0), 4, 10**6, 16),
        ("kv-just-under-weights", (BINARY, fast, 1, 4, 4095, B, B, 0.0, 1.0, 0.0), 4, 10**6, 16),
        # TP 2, default link 2^41 / 2: comm 32 (alpha + 2^-29) = 2^-14 s, memory 9 x 2^-14 s
        ("comm-exactly-10pct-default-link", (BINARY, fast, 2, 1, 2048, B, B, 0.0, 1.0, alpha), 1, 10**6, 16),
        ("comm-just-under-10pct", (BINARY, fast, 2, 1, 2048, B, B, 0.0, 1.0, alpha * (1 - 2.0**-30)), 1, 10**6, 16),
        # the pool: 10 x ceil(1000 / 16) = 630 blocks
        ("pool-exactly-full", (BINARY, fast, 1, 10, 1000, B, B, 0.0, 1.0, 0.0), 10, 630, 16),
        ("pool-one-block-short", (BINARY, fast, 1, 10, 1000, B, B, 0.0, 1.0, 0.0), 10, 629, 16),
        ("pool-ceil-not-floor", (BINARY, fast, 1, 10, 1000, B, B, 0.0, 1.0, 0.0), 10, 625, 16),
        ("pool-exactly-full-block-size-1", (BINARY, fast, 1, 10, 1000, B, B, 0.0, 1.0, 0.0), 10, 10_000, 1),
        ("pool-empty", (BINARY, fast, 1, 10, 1000, B, B, 0.0, 1.0, 0.0), 10, 0, 16),
        ("context-one-token", (BINARY, fast, 1, 10, 1, B, B, 0.0, 1.0, 0.0), 10, 10, 16),
        # a link of 1 B/s (any finite number > 0 is allowed): communication is all there is
        ("link-one-byte-per-s", (BINARY, fast, 2, 1, 2048, B, B, 0.0, 1.0, 0.0, 1.0), 1, 10**6, 16),
    ]
    for name, args, b, nb, bs in ties:
        want = ref.step_model(*args)
        with g.case(f"exact-{name}-step"):
            _check_step(g.call("step_model", *args), want)
        with g.case(f"exact-{name}-flags"):
            _check_flags(g.call("regime_flags", want, b, args[4], args[2], nb, bs),
                         ref.regime_flags(want, b, args[4], args[2], nb, bs))

    # 3. flags on reference steps, then audits
    for j in range(12):
        m = rnd.choice(list(MODELS_TP))
        tp = rnd.choice(MODELS_TP[m])
        b, L = rnd.choice((1, 2, 32, 128)), rnd.choice((16, 1024, 8192, 65536))
        gpu = rnd.choice(GPUS)
        step = ref.step_model(m, gpu, tp, b, L, B, B, rnd.choice((0.0, 0.3e-3, 2e-3)), 0.85,
                              rnd.choice((0.0, 10e-6)))
        nb = rnd.choice((100, 5000, 200_000))
        with g.case(f"flags-{j}-{_slug(m.name)}-tp{tp}-b{b}-L{L}"):
            _check_flags(g.call("regime_flags", step, b, L, tp, nb, 16),
                         ref.regime_flags(step, b, L, tp, nb, 16))
    for j, (m, gpu, wd, kd) in enumerate(((L8, specs.H100_SXM, B, B), (L70, specs.H200_SXM, F8, F8),
                                          (GQA4, ODD, I4, B), (MLA, specs.B200, B, F8))):
        tol = rnd.choice((0.05, 0.1, 0.2))
        pts = []
        for _ in range(8):
            tp = rnd.choice([t for t in MODELS_TP[m] if t <= 8])
            p = {"tp": tp, "batch": rnd.choice((1, 8, 64, 256)), "context_len": rnd.choice((128, 4096, 32768)),
                 "measured_s": 0.0}
            t = ref.step_model(m, gpu, tp, p["batch"], p["context_len"], wd, kd, 0.4e-3, 0.8, 6e-6)["t_s"]
            r = rnd.uniform(-0.6, 0.6)
            while abs(abs(r) - tol) < 1e-6:
                r = rnd.uniform(-0.6, 0.6)
            p["measured_s"] = t * (1 + r)
            if rnd.random() < 0.2:
                p["node"] = "gpu-node-3"
            pts.append(p)
        args = (pts, m, gpu, wd, kd, 0.4e-3, 0.8, 6e-6, 3000, 16, tol)
        with g.case(f"audit-{j}-{_slug(m.name)}-{_slug(gpu.name)}"):
            _check_audit(g.call("audit", *args), ref.audit(*args))
    pts = [{"tp": tp, "batch": 1, "context_len": 6, "measured_s": 1 / tps} for tp, tps in GPT_FAST_L2]
    for name, consts in (("pure-roofline", (0.0, 1.0, 0.0)), ("fitted", (1.8e-3, 1700 / 2039, 4e-6))):
        args = (pts, LLAMA2_7B, specs.A100_SXM_80GB, B, B, *consts, 10**6, 16, 0.05)
        with g.case(f"audit-gpt-fast-a100-{name}"):
            _check_audit(g.call("audit", *args), ref.audit(*args))
    args = (pts, LLAMA2_7B, specs.A100_SXM_80GB, B, B, 1.8e-3, 1700 / 2039, 4e-6, 10**6, 16, 0.05, 25e9)
    with g.case("audit-gpt-fast-a100-explicit-link"):
        _check_audit(g.call("audit", *args), ref.audit(*args))

    # Input checks, after every core case.
    base = (L8, specs.H100_SXM, 1, 8, 1024, B, B, 0.3e-3, 0.85, 0.0)

    def step_with(i, v):
        a = list(base)
        a[i] = v
        return tuple(a)
    checks = [(f"step-{n}", "step_model", step_with(i, v)) for n, i, v in (
        ("moe", 0, specs.MIXTRAL_8X7B), ("model-dict", 0, {"n_layers": 32}), ("gpu-string", 1, "H100"),
        ("tp-zero", 2, 0), ("tp-bool", 2, True), ("tp-3", 2, 3), ("batch-zero", 3, 0), ("batch-float", 3, 8.0),
        ("context-zero", 4, 0), ("dtype-string", 5, "bf16"), ("overhead-negative", 7, -1e-3),
        ("overhead-nan", 7, math.nan), ("efficiency-zero", 8, 0.0), ("efficiency-above-one", 8, 1.2),
        ("efficiency-nan", 8, math.nan), ("latency-negative", 9, -1e-6), ("latency-inf", 9, math.inf))]
    checks += [("step-tp-12-with-8-kv-heads", "step_model",
                (dataclasses.replace(L8, n_heads=48), specs.H100_SXM, 12, 1, 1, B, B, 0.0, 1.0, 0.0)),
               ("step-zero-kv-heads", "step_model", (dataclasses.replace(L8, n_kv_heads=0),) + base[1:]),
               ("step-zero-head-dim", "step_model", (dataclasses.replace(L8, head_dim=0),) + base[1:]),
               ("step-moe-one-routed-expert", "step_model",
                (dataclasses.replace(L8, n_routed_experts=1, experts_per_token=1, moe_ffn_size=14336),) + base[1:]),
               ("step-heads-not-divisible-by-tp", "step_model", (MLA, specs.H100_SXM, 16) + base[3:]),
               ("step-link-zero", "step_model", base + (0.0,)),
               ("step-link-negative", "step_model", base + (-1e9,))]
    s = ref.step_model(*base)
    checks += [(f"step-zero-{f}", "step_model", (dataclasses.replace(L8, **{f: 0}),) + base[1:])
               for f in ("n_layers", "hidden_size", "n_heads", "vocab_size", "ffn_size")]
    checks += [("flags-context-zero", "regime_flags", (s, 8, 0, 1, 100, 16)),
               ("flags-tp-zero", "regime_flags", (s, 8, 1024, 0, 100, 16)),
               ("flags-block-size-zero", "regime_flags", (s, 8, 1024, 1, 100, 0)),
               ("flags-num-blocks-negative", "regime_flags", (s, 8, 1024, 1, -1, 16)),
               ("flags-batch-zero", "regime_flags", (s, 0, 1024, 1, 100, 16))]
    good = [{"tp": 1, "batch": 8, "context_len": 1024, "measured_s": 0.006}]
    rest = (L8, specs.H100_SXM, B, B, 0.3e-3, 0.85, 0.0, 1000, 16)
    checks += [("audit-empty", "audit", ([],) + rest + (0.1,)),
               ("audit-missing-key", "audit", ([{"tp": 1, "batch": 8, "measured_s": 0.006}],) + rest + (0.1,)),
               ("audit-measured-zero", "audit", ([dict(good[0], measured_s=0.0)],) + rest + (0.1,)),
               ("audit-measured-nan", "audit", ([dict(good[0], measured_s=math.nan)],) + rest + (0.1,)),
               ("audit-tol-zero", "audit", (good,) + rest + (0.0,)),
               ("audit-tol-negative", "audit", (good,) + rest + (-0.1,)),
               ("audit-point-tp-3", "audit", ([dict(good[0], tp=3)],) + rest + (0.1,))]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
