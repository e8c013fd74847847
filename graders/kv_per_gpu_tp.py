"""Hidden cases for kv-per-gpu-tp: tabled and made-up GQA/MQA/MHA/MLA models (down to the
smallest allowed: counts of 1, a 1-wide latent without a rope key) at every valid TP
(TP > KV heads included, MLA at TP 1..16 and Kimi K2 up to 64), decode context parallelism on
MLA and on replicated GQA heads, every KV dtype (INT4 half bytes), budgets exactly at a multiple
of the per-token bytes, one byte short, and half a token over with dcp > 1; which_fits at the
limit and one past it, in a salted order; then the input checks."""

from __future__ import annotations

import dataclasses
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

GiB = 2**30
GQA2 = ModelConfig(name="gqa2-made-up", n_layers=40, hidden_size=5120, n_heads=40, n_kv_heads=2,
                   head_dim=128, ffn_size=13824, vocab_size=100000)
MQA = ModelConfig(name="mqa-made-up", n_layers=18, hidden_size=2048, n_heads=8, n_kv_heads=1,
                  head_dim=256, ffn_size=16384, vocab_size=256000)
MHA = ModelConfig(name="mha-made-up", n_layers=24, hidden_size=1024, n_heads=16, n_kv_heads=16,
                  head_dim=64, ffn_size=4096, vocab_size=50000)
MLA = ModelConfig(name="mla-made-up", n_layers=27, hidden_size=2048, n_heads=32, n_kv_heads=32,
                  head_dim=160, ffn_size=8192, vocab_size=102400, q_lora_rank=0,
                  kv_lora_rank=256, qk_nope_head_dim=128, qk_rope_head_dim=32, v_head_dim=128)
MLA_ODD = ModelConfig(name="mla-odd-made-up", n_layers=15, hidden_size=1024, n_heads=16,
                      n_kv_heads=16, head_dim=97, ffn_size=4096, vocab_size=32000, q_lora_rank=0,
                      kv_lora_rank=500, qk_nope_head_dim=64, qk_rope_head_dim=33, v_head_dim=64)
# the smallest models the statement allows: every GQA count 1; MLA with a 1-wide latent, no rope key
ONES = ModelConfig(name="ones-made-up", n_layers=1, hidden_size=64, n_heads=1, n_kv_heads=1,
                   head_dim=1, ffn_size=256, vocab_size=1000)
MLA_TINY = dataclasses.replace(MLA, name="mla-tiny-made-up", kv_lora_rank=1, qk_rope_head_dim=0)
MODELS = [specs.LLAMA_3_1_70B, specs.LLAMA_3_1_8B, specs.MIXTRAL_8X7B, specs.DEEPSEEK_V3,
          specs.KIMI_K2, GQA2, MQA, MHA, MLA, MLA_ODD, ONES, MLA_TINY]
DTYPES = [DType.BF16, DType.FP8, DType.FP16, DType.FP32, DType.INT8, DType.INT4]


def _valid_tps(m: ModelConfig) -> list[int]:
    out = []
    for tp in (1, 2, 4, 8, 16, 32, 64):
        if m.n_heads % tp:
            continue
        if m.kv_lora_rank == 0:
            k = m.n_kv_heads
            if (tp <= k and k % tp) or (tp > k and tp % k):
                continue
        out.append(tp)
    return out


def _copies(m: ModelConfig, tp: int) -> int:
    if m.kv_lora_rank > 0:
        return tp
    return tp // m.n_kv_heads if tp > m.n_kv_heads else 1


def _dcps(m: ModelConfig, tp: int) -> list[int]:
    c = _copies(m, tp)
    return [d for d in range(1, c + 1) if c % d == 0]


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-").replace(".", "")


def grade(g: Grading) -> None:
    ref = g.reference()

    # 1. per-token bytes per GPU: every model, every valid tp, every dcp; dtypes rotate
    i = 0
    for m in MODELS:
        for tp in _valid_tps(m):
            for dcp in _dcps(m, tp):
                if dcp not in (1, 2, _copies(m, tp)):
                    continue
                dt = DTYPES[i % len(DTYPES)] if i % 3 else DType.BF16
                i += 1
                with g.case(f"per-gpu-{_slug(m.name)}-tp{tp}-dcp{dcp}-{dt.value}"):
                    out = g.call("kv_bytes_per_token_per_gpu", m, tp, dt, dcp)
                    expect_close(out, ref.kv_bytes_per_token_per_gpu(m, tp, dt, dcp),
                                 name="kv_bytes_per_token_per_gpu", rtol=1e-12)
    with g.case("per-gpu-default-dcp-is-1"):
        expect_close(g.call("kv_bytes_per_token_per_gpu", specs.DEEPSEEK_V3, 16, DType.FP8),
                     ref.kv_bytes_per_token_per_gpu(specs.DEEPSEEK_V3, 16, DType.FP8),
                     name="kv_bytes_per_token_per_gpu", rtol=1e-12)

    # 2. longest request: budgets at exact multiples, one byte short, half a token over (dcp)
    fixed = random.Random("kv-per-gpu-tp:hidden")
    budgets = []
    for m, tp, dt, dcp in [(specs.LLAMA_3_1_70B, 8, DType.BF16, 1), (specs.DEEPSEEK_V3, 8, DType.BF16, 1),
                           (specs.DEEPSEEK_V3, 8, DType.BF16, 8), (specs.DEEPSEEK_V3, 16, DType.FP8, 4),
                           (specs.LLAMA_3_1_70B, 16, DType.BF16, 2), (GQA2, 8, DType.FP8, 4),
                           (MQA, 8, DType.INT4, 8), (MLA_ODD, 16, DType.INT4, 16),
                           (specs.KIMI_K2, 64, DType.BF16, 64), (MHA, 4, DType.FP32, 1),
                           (specs.LLAMA_3_1_8B, 1, DType.BF16, 1)]:
        held2 = round(2 * ref.kv_bytes_per_token_per_gpu(m, tp, dt, dcp) * dcp)   # bytes x2 per token held
        n = fixed.randrange(1_000, 3_000_000)
        exact = n * held2 // 2 if held2 % 2 == 0 else (2 * n) * held2 // 2     # a whole number of bytes
        budgets += [(f"{_slug(m.name)}-tp{tp}-dcp{dcp}-{dt.value}-exact-multiple", m, tp, dt, dcp, exact),
                    (f"{_slug(m.name)}-tp{tp}-dcp{dcp}-{dt.value}-one-byte-short", m, tp, dt, dcp, exact - 1),
                    (f"{_slug(m.name)}-tp{tp}-dcp{dcp}-{dt.value}-half-a-token-over", m, tp, dt, dcp,
                     exact + held2 // 4)]
    budgets += [("deepseek-v3-tp8-budget-below-one-token", specs.DEEPSEEK_V3, 8, DType.BF16, 1, 70_271),
                ("deepseek-v3-tp8-budget-zero", specs.DEEPSEEK_V3, 8, DType.BF16, 1, 0)]
    for k in range(12):
        m = fixed.choice(MODELS)
        tp = fixed.choice(_valid_tps(m))
        budgets.append((f"seeded-{k}-{_slug(m.name)}", m, tp, fixed.choice(DTYPES),
                        fixed.choice(_dcps(m, tp)), fixed.randrange(0, 150 * 10**9)))
    for name, m, tp, dt, dcp, free in budgets:
        with g.case(f"max-request-{name}"):
            expect_equal(g.call("max_request_tokens", m, tp, dt, free, dcp),
                         ref.max_request_tokens(m, tp, dt, free, dcp), name="max_request_tokens")
    with g.case("max-request-default-dcp-is-1"):
        expect_equal(g.call("max_request_tokens", specs.DEEPSEEK_V3, 8, DType.BF16, 20 * GiB),
                     ref.max_request_tokens(specs.DEEPSEEK_V3, 8, DType.BF16, 20 * GiB), name="max_request_tokens")

    # 3. which_fits: requests at the limit of one deployment and one past it; salted order
    salted = random.Random(f"kv-per-gpu-tp:{g.salt}")
    pool = []
    for m in MODELS:
        for tp in _valid_tps(m)[-3:]:
            dcp = salted.choice(_dcps(m, tp))
            dep = {"model": m, "tp": tp, "kv_dtype": salted.choice(DTYPES),
                   "free_kv_bytes_per_gpu": salted.randrange(GiB, 120 * 10**9)}
            if dcp > 1 or salted.random() < 0.3:
                dep["dcp"] = dcp
            pool.append(dep)
    for k in range(10):
        deps = salted.sample(pool, salted.randrange(2, 9))
        anchor = salted.choice(deps)
        lim = ref.max_request_tokens(anchor["model"], anchor["tp"], anchor["kv_dtype"],
                                     anchor["free_kv_bytes_per_gpu"], anchor.get("dcp", 1))
        for tag, t in (("at-the-limit", max(1, lim)), ("one-past-the-limit", lim + 1)):
            with g.case(f"which-fits-{k}-{tag}"):
                out = g.call("which_fits", t, deps)
                want = ref.which_fits(t, deps)
                if not isinstance(out, list) or len(out) != len(want) \
                        or not all(isinstance(x, bool) for x in out):
                    fail(f"expected a list of {len(want)} bools, one per deployment")
                bad = [j for j, (a, b) in enumerate(zip(out, want)) if a != b]
                if bad:
                    fail(f"wrong verdict for deployment(s) at position(s) {bad}")
    with g.case("which-fits-tuple-of-deployments"):
        deps = tuple(pool[:3])
        expect_equal(g.call("which_fits", 1, deps), ref.which_fits(1, deps), name="which_fits")

    # Input checks last.
    L70, DS, bf = specs.LLAMA_3_1_70B, specs.DEEPSEEK_V3, DType.BF16
    checks = [
        ("tp-zero", "kv_bytes_per_token_per_gpu", (DS, 0, bf)),
        ("zero-layers", "kv_bytes_per_token_per_gpu", (dataclasses.replace(L70, n_layers=0), 8, bf)),
        ("zero-heads", "kv_bytes_per_token_per_gpu", (dataclasses.replace(L70, n_heads=0), 8, bf)),
        ("zero-kv-heads", "kv_bytes_per_token_per_gpu", (dataclasses.replace(L70, n_kv_heads=0), 8, bf)),
        ("zero-head-dim", "kv_bytes_per_token_per_gpu", (dataclasses.replace(L70, head_dim=0), 8, bf)),
        ("tp-3-heads-128", "kv_bytes_per_token_per_gpu", (DS, 3, bf)),
        ("tp-16-kv-heads-6", "kv_bytes_per_token_per_gpu",
         (dataclasses.replace(L70, n_heads=48, n_kv_heads=6), 16, bf)),
        ("tp-4-kv-heads-6", "kv_bytes_per_token_per_gpu",
         (dataclasses.replace(L70, n_heads=48, n_kv_heads=6), 4, bf)),
        ("dcp-zero", "kv_bytes_per_token_per_gpu", (DS, 8, bf, 0)),
        ("dcp-on-unreplicated-gqa", "kv_bytes_per_token_per_gpu", (L70, 8, bf, 2)),
        ("dcp-above-gqa-copies", "kv_bytes_per_token_per_gpu", (L70, 16, bf, 4)),
        ("dcp-not-dividing-mla-copies", "kv_bytes_per_token_per_gpu", (DS, 8, bf, 3)),
        ("dcp-above-tp", "max_request_tokens", (DS, 4, bf, GiB, 8)),
        ("negative-budget", "max_request_tokens", (DS, 8, bf, -1)),
        ("float-budget", "max_request_tokens", (DS, 8, bf, 20.5 * GiB)),
        ("request-zero", "which_fits", (0, [{"model": DS, "tp": 8, "kv_dtype": bf,
                                             "free_kv_bytes_per_gpu": GiB}])),
        ("deployment-missing-budget", "which_fits", (100, [{"model": DS, "tp": 8, "kv_dtype": bf}])),
        ("deployment-bad-dcp", "which_fits", (100, [{"model": L70, "tp": 8, "kv_dtype": bf,
                                                     "free_kv_bytes_per_gpu": GiB, "dcp": 2}])),
        ("deployments-none", "which_fits", (100, None)),
        ("deployments-not-a-list", "which_fits", (100, {"model": DS, "tp": 8, "kv_dtype": bf,
                                                        "free_kv_bytes_per_gpu": GiB})),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
