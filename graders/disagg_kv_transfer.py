"""Hidden cases for disagg-kv-transfer: KV bytes of GQA/MHA/MQA/MLA models in four KV dtypes;
prefill FLOPs with and without a prompt length (attention and the once-per-request LM head);
edge shapes (all counts 1, MLA rank 1, top-1 and all-active MoE, all-dense MoE);
transfer rates on tabled and made-up models and GPUs, BF16 and FP8 math, 1 to 64 GPUs; verdict
boundaries hit exactly with binary-exact models and GPUs; verdicts that flip under the classic
slips (per-instance vs per-GPU, sparse peak, FP8 math at the BF16 peak, query-head KV, Gb/s read
as GB/s); then the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
BF16, FP8, INT4, FP32 = DType.BF16, DType.FP8, DType.INT4, DType.FP32
RATE_KEYS = ("kv_bytes_per_token", "prefill_flops_per_token", "prefill_s_per_token",
             "bytes_per_s_instance", "bytes_per_s_per_gpu", "nic_fraction", "min_link_gbps",
             "verdict")

# Llama-2-7B's shape (meta-llama/Llama-2-7b-hf config.json): MHA, 512 KiB of BF16 KV per token.
MHA_7B = ModelConfig(name="mha-7b", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                     head_dim=128, ffn_size=11008, vocab_size=32000)
MQA_WIDE = ModelConfig(name="mqa-wide", n_layers=26, hidden_size=2304, n_heads=8, n_kv_heads=1,
                       head_dim=256, ffn_size=9216, vocab_size=256000, tied_embeddings=True)
MLA_RQ0 = ModelConfig(name="mla-rq0", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=192, ffn_size=10944, vocab_size=102400, q_lora_rank=0,
                      kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# MLA with qk_nope_head_dim != v_head_dim (every other MLA model here has nope == v, which hides a
# value width read from qk_nope_head_dim); head_dim stays nope + rope, as specs documents.
MLA_V160 = dataclasses.replace(MLA_RQ0, name="mla-rope96-v160", head_dim=224, qk_rope_head_dim=96,
                               v_head_dim=160)
MOE_SMALL = ModelConfig(name="moe-small", n_layers=24, hidden_size=2048, n_heads=16, n_kv_heads=4,
                        head_dim=128, ffn_size=8192, vocab_size=151936, n_routed_experts=64,
                        n_shared_experts=2, experts_per_token=6, moe_ffn_size=1408,
                        first_dense_layers=2)
# Every count a power of two: 2^28 body weights, 2^16 BF16 KV bytes per token.
EXACT = ModelConfig(name="exact", n_layers=16, hidden_size=1024, n_heads=8, n_kv_heads=8,
                    head_dim=128, ffn_size=4096, vocab_size=32768)
MODELS = [specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.MIXTRAL_8X7B, specs.DEEPSEEK_V3,
          specs.KIMI_K2, MHA_7B, MQA_WIDE, MLA_RQ0, MOE_SMALL, EXACT, MLA_V160]

ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", bf16_dense_flops=1.5e15,
                              fp8_dense_flops=3.1e15, nic_bytes_per_s=100e9)
EXACT_GPU = dataclasses.replace(specs.H100_SXM, name="exact-gpu", bf16_dense_flops=2.0 ** 50,
                                fp8_dense_flops=2.0 ** 51, nic_bytes_per_s=2.0 ** 37)
# Edge shapes the statement allows: every count 1; MLA with ranks of 1 (MLA means rank > 0);
# MoE with top-1 routing, with every expert active, and with every layer dense.
TINY = ModelConfig(name="tiny-all-ones", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1,
                   head_dim=1, ffn_size=1, vocab_size=1)
MLA_R1 = dataclasses.replace(MLA_RQ0, name="mla-rank-1", q_lora_rank=1, kv_lora_rank=1)
MOE_TOP1 = dataclasses.replace(MOE_SMALL, name="moe-top-1", experts_per_token=1)
MOE_ALL_ACTIVE = dataclasses.replace(MOE_SMALL, name="moe-all-active", n_routed_experts=8,
                                     experts_per_token=8)
MOE_ALL_DENSE = dataclasses.replace(MOE_SMALL, name="moe-all-layers-dense", first_dense_layers=24)
EDGE_MODELS = [TINY, MLA_R1, MOE_TOP1, MOE_ALL_ACTIVE, MOE_ALL_DENSE]

GPUS = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, ODD_GPU]


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def _check_rate(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(RATE_KEYS):
        fail(f"expected a dict with exactly the keys {list(RATE_KEYS)}")
    for k in RATE_KEYS:
        if k == "verdict":
            if out[k] not in ("ok", "tight", "breaks"):
                fail(f"['verdict']: got {out[k]!r}, not one of 'ok', 'tight', 'breaks'")
            if out[k] != exp[k]:
                fail(f"['verdict']: got {out[k]!r}, which does not match nic_fraction under the rule")
        else:
            expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def grade(g: Grading) -> None:
    ref = g.reference()
    rnd = random.Random(f"disagg-kv-transfer:{g.salt}")

    # 1. KV bytes per token.
    for m in MODELS:
        for dt in (BF16, FP8, INT4, FP32):
            with g.case(f"kv-bytes-{_slug(m.name)}-{dt.value}"):
                expect_close(g.call("kv_bytes_per_token", m, dt), ref.kv_bytes_per_token(m, dt),
                             name="kv_bytes_per_token", rtol=RTOL)

    for m in EDGE_MODELS:
        with g.case(f"kv-bytes-{_slug(m.name)}-bf16"):
            expect_close(g.call("kv_bytes_per_token", m, BF16), ref.kv_bytes_per_token(m, BF16),
                         name="kv_bytes_per_token", rtol=RTOL)

    # 2. Prefill FLOPs per token.
    for m in EDGE_MODELS:
        for P in (None, 777):
            with g.case(f"prefill-flops-{_slug(m.name)}-{'linear' if P is None else f'prompt-{P}'}"):
                out = g.call("prefill_flops_per_token", m) if P is None else \
                    g.call("prefill_flops_per_token", m, P)
                expect_close(out, ref.prefill_flops_per_token(m, P), name="prefill_flops_per_token",
                             rtol=RTOL)
    for m in MODELS:
        for P in (None, 1, 2, 777, 8192, 131072, rnd.randrange(3, 1 << 20)):
            with g.case(f"prefill-flops-{_slug(m.name)}-{'linear' if P is None else f'prompt-{P}'}"):
                exp = ref.prefill_flops_per_token(m, P)
                out = g.call("prefill_flops_per_token", m) if P is None else \
                    g.call("prefill_flops_per_token", m, P)
                expect_close(out, exp, name="prefill_flops_per_token", rtol=RTOL)

    # 3. Transfer rates on a grid of models, GPUs, math and KV dtypes, GPU counts, lengths.
    combos = []
    for i, m in enumerate(MODELS):
        for j, gpu in enumerate(GPUS):
            cdt = BF16 if gpu is specs.A100_SXM_80GB or (i + j) % 2 else FP8
            kdt = (BF16, FP8, BF16, INT4)[(i + 2 * j) % 4]
            n = (1, 8, 2, 32, 4, 16, 64)[(i + j) % 7]
            P = (None, 8192, None, 131072, 1000)[(i * 3 + j) % 5]
            mfu = (0.5, 0.4, 0.35, 0.6, 1.0)[(i + 3 * j) % 5]
            combos.append((m, gpu, n, cdt, mfu, kdt, P))
    for _ in range(12):                                 # salted extras
        gpu = rnd.choice(GPUS)
        combos.append((rnd.choice(MODELS), gpu, rnd.choice((1, 2, 4, 8, 16, 24, 32)),
                       BF16 if gpu is specs.A100_SXM_80GB else rnd.choice((BF16, FP8)),
                       rnd.choice((0.3, 0.45, 0.5, 0.55, 0.7)), rnd.choice((BF16, FP8)),
                       rnd.choice((None, 1, 4096, 32768, rnd.randrange(2, 200_000)))))
    for m, gpu, n, cdt, mfu, kdt, P in combos:
        name = (f"rate-{_slug(m.name)}-{_slug(gpu.name)}-x{n}-{cdt.value}-mfu{mfu}-kv-{kdt.value}-"
                + ("linear" if P is None else f"prompt-{P}"))
        with g.case(name):
            _check_rate(g.call("kv_transfer_rate", m, gpu, n, cdt, mfu, kdt, P),
                        ref.kv_transfer_rate(m, gpu, n, cdt, mfu, kdt, P))

    # 4. Verdicts that the classic slips flip (tabled models and GPUs, MFU 0.5, BF16 KV).
    named = [
        ("llama-3.1-8b-eight-h100-fp8", specs.LLAMA_3_1_8B, specs.H100_SXM, 8, FP8, None),
        ("llama-3.1-8b-one-b200-fp8", specs.LLAMA_3_1_8B, specs.B200, 1, FP8, None),
        ("llama-3.1-70b-eight-h100-bf16-prompt-8192", specs.LLAMA_3_1_70B, specs.H100_SXM, 8, BF16, 8192),
        ("mha-7b-one-h100-fp8", MHA_7B, specs.H100_SXM, 1, FP8, None),
        ("mha-7b-one-h100-bf16", MHA_7B, specs.H100_SXM, 1, BF16, None),
        ("mha-7b-one-b200-fp8", MHA_7B, specs.B200, 1, FP8, None),
        ("mha-7b-one-b200-fp8-prompt-131072", MHA_7B, specs.B200, 1, FP8, 131072),
        ("mha-7b-four-b200-fp8", MHA_7B, specs.B200, 4, FP8, None),
        ("mha-7b-one-a100-bf16", MHA_7B, specs.A100_SXM_80GB, 1, BF16, None),
        ("deepseek-v3-32-h100-fp8", specs.DEEPSEEK_V3, specs.H100_SXM, 32, FP8, None),
        ("kimi-k2-16-h200-fp8-prompt-32768", specs.KIMI_K2, specs.H200_SXM, 16, FP8, 32768),
    ]
    for name, m, gpu, n, cdt, P in named:
        with g.case(f"verdict-{name}"):
            _check_rate(g.call("kv_transfer_rate", m, gpu, n, cdt, 0.5, BF16, P),
                        ref.kv_transfer_rate(m, gpu, n, cdt, 0.5, BF16, P))

    # 5. Exact boundaries: EXACT on EXACT_GPU emits 2^36 B/s per GPU (BF16 math, BF16 KV, MFU 0.5).
    boundary = [
        ("half-of-nic", 1, BF16, BF16, 2.0 ** 37),
        ("just-under-half", 1, BF16, BF16, 2.0 ** 37 + 2.0 ** 21),
        ("all-of-nic", 1, BF16, BF16, 2.0 ** 36),
        ("just-over-all", 1, BF16, BF16, 2.0 ** 36 - 2.0 ** 20),
        ("all-of-nic-four-gpus", 4, BF16, BF16, 2.0 ** 36),
        ("half-of-nic-eight-gpus", 8, BF16, BF16, 2.0 ** 37),
        ("all-of-nic-fp8-math", 2, FP8, BF16, 2.0 ** 37),
        ("half-of-nic-fp8-kv", 1, BF16, FP8, 2.0 ** 36),
    ]
    for name, n, cdt, kdt, nic in boundary:
        gpu = dataclasses.replace(EXACT_GPU, nic_bytes_per_s=nic)
        with g.case(f"boundary-{name}"):
            _check_rate(g.call("kv_transfer_rate", EXACT, gpu, n, cdt, 0.5, kdt),
                        ref.kv_transfer_rate(EXACT, gpu, n, cdt, 0.5, kdt))

    # 6. link_verdict: exact boundaries, Gb/s vs GB/s, salted order.
    links = [(25e9, 400), (50e9, 400), (50.000001e9, 400), (24.999e9, 400), (0.0, 400),
             (39.3e9, 400), (60e9, 400), (4e9, 25), (3.2e9, 25), (1.5e9, 25), (10e9, 400),
             (12.5e9, 100), (6.25e9, 100), (12.5e9 + 1e3, 100), (2.0 ** 33, 800), (90e9, 800),
             (3, 200), (1e11, 1600),
             # links of 1 Gb/s or less; 2^-7 Gb/s is 976,562.5 B/s, a fraction of exactly 1
             (976562.5, 2.0 ** -7), (6.25e7, 0.5)]
    rnd.shuffle(links)
    for k, (rate, gbps) in enumerate(links):
        with g.case(f"link-verdict-{k}-{rate:g}-Bps-on-{gbps}-Gbps"):
            out = g.call("link_verdict", rate, gbps)
            expect_equal(out, ref.link_verdict(rate, gbps), name="link_verdict")

    # Input checks last.
    m, gpu = specs.LLAMA_3_1_8B, specs.H100_SXM
    checks = [
        ("kv-bytes-heads-not-multiple", "kv_bytes_per_token", (dataclasses.replace(m, n_kv_heads=7), BF16)),
        ("kv-bytes-zero-layers", "kv_bytes_per_token", (dataclasses.replace(m, n_layers=0), BF16)),
        ("flops-moe-experts-per-token-left-at-zero", "prefill_flops_per_token",
         (dataclasses.replace(MOE_SMALL, experts_per_token=0),)),
        ("kv-bytes-model-a-dict", "kv_bytes_per_token", ({"n_layers": 32}, BF16)),
        ("kv-bytes-zero-kv-heads", "kv_bytes_per_token", (dataclasses.replace(m, n_kv_heads=0), BF16)),
        ("flops-moe-top-2-of-one-expert", "prefill_flops_per_token",
         (dataclasses.replace(MOE_SMALL, n_routed_experts=1, experts_per_token=2),)),
        ("flops-gqa-head-dim-zero", "prefill_flops_per_token", (dataclasses.replace(m, head_dim=0),)),
        ("flops-prompt-zero", "prefill_flops_per_token", (m, 0)),
        ("flops-prompt-float", "prefill_flops_per_token", (m, 8192.0)),
        ("flops-prompt-bool", "prefill_flops_per_token", (m, True)),
        ("rate-fp8-on-a100", "kv_transfer_rate", (m, specs.A100_SXM_80GB, 1, FP8, 0.5, BF16)),
        ("rate-int8-math", "kv_transfer_rate", (m, gpu, 1, DType.INT8, 0.5, BF16)),
        ("rate-fp32-math", "kv_transfer_rate", (m, gpu, 1, FP32, 0.5, BF16)),
        ("rate-zero-gpus", "kv_transfer_rate", (m, gpu, 0, BF16, 0.5, BF16)),
        ("rate-float-gpus", "kv_transfer_rate", (m, gpu, 8.0, BF16, 0.5, BF16)),
        ("rate-mfu-zero", "kv_transfer_rate", (m, gpu, 1, BF16, 0.0, BF16)),
        ("rate-gpu-a-string", "kv_transfer_rate", (m, "H100 SXM", 1, BF16, 0.5, BF16)),
        ("rate-mfu-above-one", "kv_transfer_rate", (m, gpu, 1, BF16, 1.5, BF16)),
        ("rate-mfu-percent", "kv_transfer_rate", (m, gpu, 1, BF16, 50, BF16)),
        ("rate-mfu-nan", "kv_transfer_rate", (m, gpu, 1, BF16, math.nan, BF16)),
        ("rate-prompt-zero", "kv_transfer_rate", (m, gpu, 1, BF16, 0.5, BF16, 0)),
        ("rate-kv-dtype-string", "kv_transfer_rate", (m, gpu, 1, BF16, 0.5, "bf16")),
        ("link-negative-rate", "link_verdict", (-1.0, 400)),
        ("link-nan-rate", "link_verdict", (math.nan, 400)),
        ("link-infinite-rate", "link_verdict", (math.inf, 400)),
        ("link-zero-gbps", "link_verdict", (1e9, 0)),
        ("link-negative-gbps", "link_verdict", (1e9, -400)),
        ("link-infinite-gbps", "link_verdict", (1e9, math.inf)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
