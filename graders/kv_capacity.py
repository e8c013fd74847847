"""Hidden cases for kv-capacity: the public vLLM log, Llama 3.1 70B at TP 4/8/16, MLA models at
TP 8/16, made-up GQA/MQA/MHA/MLA shapes; every boundary the statement states hit exactly (the
ceiling of the requested bytes, a pool of exactly k pages, L a multiple of the block or one past,
one sequence exactly, max_num_seqs tied with the pool, the smallest model, device and sequence
allowed); every KV dtype incl. INT4 half bytes;
block sizes 1..256; seeded and salted random configurations; the multiple choice as a set; then
the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail
from inferprep.specs import DType, ModelConfig

GiB = 2**30
INT_KEYS = ("requested_bytes", "available_kv_bytes", "kv_heads_per_gpu", "num_blocks",
            "blocks_per_seq", "max_seqs", "max_seqs_effective")
FLOAT_KEYS = ("kv_bytes_per_token_per_gpu", "page_bytes", "vllm_max_concurrency")
KEYS = INT_KEYS + FLOAT_KEYS + ("binding",)
H100_REPORTED = 85_029_615_043          # 79.19 GiB (mellea PR #416 log)
H100_SMI = 81_559 * 2**20               # nvidia-smi total of an H100 80GB (vllm#55169)

# Qwen/Qwen3-0.6B config.json: 28 layers, 16 heads, 8 KV heads, head_dim 128.
QWEN3_SHAPE = ModelConfig(name="qwen3-0.6b-shape", n_layers=28, hidden_size=1024, n_heads=16,
                          n_kv_heads=8, head_dim=128, ffn_size=3072, vocab_size=151936,
                          tied_embeddings=True, max_context=40960)
GQA4 = ModelConfig(name="gqa4-made-up", n_layers=36, hidden_size=3072, n_heads=32, n_kv_heads=4,
                   head_dim=96, ffn_size=8192, vocab_size=64000)
MQA = ModelConfig(name="mqa-made-up", n_layers=18, hidden_size=2048, n_heads=8, n_kv_heads=1,
                  head_dim=256, ffn_size=16384, vocab_size=256000)
MHA = ModelConfig(name="mha-made-up", n_layers=24, hidden_size=1024, n_heads=16, n_kv_heads=16,
                  head_dim=64, ffn_size=4096, vocab_size=50000)
MLA = ModelConfig(name="mla-made-up", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                  head_dim=160, ffn_size=8192, vocab_size=102400, q_lora_rank=0,
                  kv_lora_rank=256, qk_nope_head_dim=128, qk_rope_head_dim=32, v_head_dim=128)
# odd latent width x odd layers: INT4 pages end in half a byte
MLA_ODD = ModelConfig(name="mla-odd-made-up", n_layers=15, hidden_size=1024, n_heads=8,
                      n_kv_heads=8, head_dim=97, ffn_size=4096, vocab_size=32000, q_lora_rank=0,
                      kv_lora_rank=500, qk_nope_head_dim=64, qk_rope_head_dim=33, v_head_dim=64)
MODELS = [QWEN3_SHAPE, specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.DEEPSEEK_V3, specs.KIMI_K2,
          GQA4, MQA, MHA, MLA, MLA_ODD]
DTYPES = [DType.BF16, DType.FP8, DType.FP16, DType.FP32, DType.INT8, DType.INT4]
BLOCKS = [16, 32, 64, 1, 128, 256, 8, 528]
LLAMA70_BF16 = 70_552_387_584 * 2       # matmul weights + embedding, BF16 bytes
# The smallest shapes the statement allows: one layer; an MLA latent of width 1 without a RoPE
# key (half a byte per token in INT4; 2 heads, so that it still stores 1 latent head); a GQA
# model of one head of dimension 1.
MLA_TINY = ModelConfig(name="mla-tiny-made-up", n_layers=1, hidden_size=8, n_heads=2, n_kv_heads=2,
                       head_dim=1, ffn_size=8, vocab_size=8, q_lora_rank=0, kv_lora_rank=1,
                       qk_nope_head_dim=1, qk_rope_head_dim=0, v_head_dim=1)
GQA_TINY = ModelConfig(name="gqa-tiny-made-up", n_layers=1, hidden_size=8, n_heads=1, n_kv_heads=1,
                       head_dim=1, ffn_size=8, vocab_size=8)


def _valid_tps(m: ModelConfig) -> list[int]:
    out = []
    for tp in (1, 2, 4, 8, 16):
        if m.n_heads % tp:
            continue
        if m.kv_lora_rank == 0:
            k = m.n_kv_heads
            if (tp <= k and k % tp) or (tp > k and tp % k):
                continue
        out.append(tp)
    return out


def _check(out, exp) -> None:
    if not isinstance(out, dict) or set(out) != set(KEYS):
        fail(f"expected a dict with exactly the keys {sorted(KEYS)}")
    for k in INT_KEYS:
        expect_equal(out[k], exp[k], name=f"[{k!r}]")
    for k in FLOAT_KEYS:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=1e-12)
    expect_equal(out["binding"], exp["binding"], name="['binding']")


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-").replace(".", "")


def _random_args(rng: random.Random, ref) -> tuple:
    """A valid configuration (every argument drawn from rng; resampled until the reference accepts it)."""
    while True:
        m = rng.choice(MODELS)
        tp = rng.choice(_valid_tps(m))
        dt = rng.choice(DTYPES)
        block = rng.choice(BLOCKS)
        total = rng.randrange(16 * GiB, 200 * GiB)
        util = rng.choice([0.5, 0.8, 0.85, 0.9, 0.92, 0.95, 1.0, rng.uniform(0.3, 1.0)])
        weights = rng.randrange(0, int(total * util * 0.7))
        act = rng.randrange(0, 4 * GiB)
        nt = rng.randrange(0, GiB)
        graph = rng.choice([0, rng.randrange(1, 2 * GiB)])
        L = rng.randrange(1, rng.choice([2_000, 40_000, 300_000]))
        mns = rng.choice([1, 64, 256, 1024, rng.randrange(1, 5000)])
        args = (total, util, weights, act, nt, graph, m, tp, dt, block, L, mns)
        try:
            ref.kv_capacity(*args)
        except ValueError:
            continue
        return args


def _named_cases(ref) -> list[tuple[str, tuple]]:
    bf, q = DType.BF16, QWEN3_SHAPE
    cases = [("vllm-log-h100-qwen3-shape",
              (H100_REPORTED, 0.8, 1_202_590_843, 246_960_620, 171_798_692, 0, q, 1, bf, 16, 8192, 256)),
             ("vllm-log-with-graph-estimate",
              (H100_REPORTED, 0.8, 1_202_590_843, 246_960_620, 171_798_692, 139_586_437, q, 1, bf, 16,
               8192, 256)),
             ("nvidia-smi-total-qwen3-shape",
              (H100_SMI, 0.9, 1_202_590_843, 246_960_620, 171_798_692, 0, q, 1, bf, 16, 40960, 1024))]
    for tp in (4, 8, 16):
        for L in (4000, 4001):
            cases.append((f"llama-3.1-70b-h100-tp{tp}-L{L}",
                          (H100_REPORTED, 0.9, LLAMA70_BF16 // tp, 2 * GiB, GiB // 2, GiB,
                           specs.LLAMA_3_1_70B, tp, bf, 16, L, 256)))
    ds_w = 671_025_397_760 // 8          # FP8 weights of DeepSeek-V3 over 8 GPUs
    for tp, L in ((8, 32768), (16, 131072)):
        cases.append((f"deepseek-v3-h200-tp{tp}-mla-on-every-rank",
                      (150_000_000_000, 0.9, ds_w * 8 // tp, 3 * GiB, GiB // 2, GiB,
                       specs.DEEPSEEK_V3, tp, bf, 64, L, 512)))
    cases.append(("kimi-k2-tp16-fp8-kv",
                  (150_000_000_000, 0.92, 1_026_407_202_816 // 16, 3 * GiB, GiB // 2, GiB // 2,
                   specs.KIMI_K2, 16, DType.FP8, 64, 65_536, 256)))
    cases.append(("mqa-one-head-tp8-replicated",
                  (H100_REPORTED, 0.9, 2 * 10**9, GiB, GiB // 4, GiB // 8, MQA, 8, bf, 16, 8192, 1024)))
    cases.append(("mha-16-heads-tp16", (H100_REPORTED, 0.85, 10**9, GiB, 0, 0, MHA, 16, bf, 32, 2048, 4096)))
    cases.append(("gqa4-tp2-fp32-kv", (H100_REPORTED, 0.9, 14 * 10**9, GiB, GiB // 4, GiB // 2, GQA4, 2,
                                       DType.FP32, 16, 1000, 256)))
    cases.append(("gqa4-tp8-int4-kv", (H100_REPORTED, 0.9, 4 * 10**9, GiB, GiB // 4, GiB // 2, GQA4, 8,
                                       DType.INT4, 16, 1000, 100000)))
    cases.append(("mla-odd-int4-half-byte-pages",
                  (H100_REPORTED, 0.9, 3 * 10**9, GiB, GiB // 4, GiB // 2, MLA_ODD, 2, DType.INT4, 1, 7, 10**6)))
    cases.append(("mla-odd-int4-block-17",
                  (H100_REPORTED, 0.9, 3 * 10**9, GiB, GiB // 4, GiB // 2, MLA_ODD, 8, DType.INT4, 17, 900, 10**6)))
    cases.append(("mla-made-up-tp4-int8-kv",
                  (H100_REPORTED, 0.75, 5 * 10**9, GiB, GiB // 4, GiB // 2, MLA, 4, DType.INT8, 64, 12345, 10**5)))
    cases.append(("utilisation-one", (H100_REPORTED, 1.0, 2 * 10**9, GiB, GiB // 4, GiB // 2, q, 2, DType.FP16,
                                      16, 100, 10**6)))
    cases.append(("context-shorter-than-block", (H100_REPORTED, 0.9, 2 * 10**9, GiB, 0, 0, q, 4, bf, 256, 3,
                                                 10**7)))
    cases.append(("block-size-1", (H100_REPORTED, 0.9, 2 * 10**9, GiB, 0, 0, specs.LLAMA_3_1_8B, 1, bf, 1,
                                   5000, 10**6)))

    # Boundaries with binary-exact inputs. Llama 3.1 8B, TP 2, BF16, block 16: page = 16 x 65,536 B.
    m, tp, page = specs.LLAMA_3_1_8B, 2, 16 * 65_536
    # total odd, utilisation 0.5: requested = (total + 1) / 2 exactly; the pool is then 40,000 pages
    # exactly, one byte short of it without the ceiling.
    weights = 10**9
    total = 2 * (40_000 * page + weights) - 1
    cases.append(("requested-rounds-up-to-exactly-k-pages",
                  (total, 0.5, weights, 0, 0, 0, m, tp, bf, 16, 16 * 1000, 10**6)))
    cases.append(("pool-one-byte-short-of-k-pages",
                  (total - 2, 0.5, weights, 0, 0, 0, m, tp, bf, 16, 16 * 1000, 10**6)))
    # one sequence exactly: num_blocks == blocks_per_seq
    cases.append(("exactly-one-sequence",
                  (2 * (625 * page + weights), 0.5, weights, 0, 0, 0, m, tp, bf, 16, 10_000, 10**6)))
    # max_num_seqs tied with the pool, and one below it
    base = (2 * (40_000 * page + weights), 0.5, weights, 0, 0, 0, m, tp, bf, 16, 16 * 1000)
    cases.append(("max-num-seqs-ties-the-pool", base + (40,)))
    cases.append(("max-num-seqs-one-below-the-pool", base + (39,)))
    cases.append(("max-num-seqs-one-above-the-pool", base + (41,)))
    # L a multiple of the block vs one past it, at a pool where it flips max_seqs
    cases.append(("context-one-past-a-block", base[:-1] + (16 * 1000 + 1, 10**6)))
    # every lower bound at once: a 1-byte device, 1 byte left (a page of half a byte: 2 blocks),
    # one layer and head, an MLA latent of width 1 with no RoPE key, one-token sequences
    cases.append(("smallest-mla-one-byte-device", (1, 1.0, 0, 0, 0, 0, MLA_TINY, 1, DType.INT4, 1, 1, 5)))
    cases.append(("smallest-gqa-head-dim-1", (100, 0.5, 10, 0, 0, 0, GQA_TINY, 1, DType.INT4, 2, 3, 100)))
    return cases


def grade(g: Grading) -> None:
    ref = g.reference()
    cases = _named_cases(ref)
    fixed = random.Random("kv-capacity:hidden")
    cases += [(f"seeded-{i}", _random_args(fixed, ref)) for i in range(24)]
    salted = random.Random(f"kv-capacity:{g.salt}")
    cases += [(f"salted-{i}", _random_args(salted, ref)) for i in range(8)]
    for name, args in cases:
        m, tp, dt = args[6], args[7], args[8]
        if name.startswith(("seeded-", "salted-")):
            name = f"{name}-{_slug(m.name)}-tp{tp}-{dt.value}"
        with g.case(name):
            _check(g.call("kv_capacity", *args), ref.kv_capacity(*args))

    with g.case("ceiling-reasons-as-a-set"):
        out = g.call("ceiling_reasons")
        if not isinstance(out, list) or not all(isinstance(x, str) for x in out):
            fail("expected a list of option ids (strs)")
        if out != sorted(out) or len(set(out)) != len(out):
            fail("expected the ids sorted, each once")
        want = set(ref.ceiling_reasons())
        if set(out) != want:
            wrong = len(set(out) - want)
            missing = len(want - set(out))
            fail(f"not the set of true reasons: {wrong} false option(s) chosen, "
                 f"{missing} true one(s) left out")

    # Input checks last.
    bf, q = DType.BF16, QWEN3_SHAPE
    ok = (H100_REPORTED, 0.9, 2 * 10**9, GiB, GiB // 4, GiB // 2, q, 2, bf, 16, 4096, 256)

    def with_(i, v):
        a = list(ok)
        a[i] = v
        return tuple(a)

    checks = [
        ("float-weight-bytes", with_(2, 1.12 * GiB)),
        ("float-total-bytes", with_(0, 79.19 * GiB)),
        ("negative-activation-bytes", with_(3, -1)),
        ("zero-total", with_(0, 0)),
        ("utilisation-zero", with_(1, 0.0)),
        ("utilisation-percent", with_(1, 90)),
        ("utilisation-above-one", with_(1, 1.01)),
        ("utilisation-nan", with_(1, math.nan)),
        ("tp-zero", with_(7, 0)),
        ("tp-3-kv-heads-8", with_(6, dataclasses.replace(q, n_heads=24))[:7] + (3,) + ok[8:]),
        ("tp-16-kv-heads-6", with_(6, dataclasses.replace(q, n_heads=48, n_kv_heads=6))[:7] + (16,) + ok[8:]),
        ("tp-8-heads-20", with_(6, dataclasses.replace(q, n_heads=20, n_kv_heads=4))[:7] + (8,) + ok[8:]),
        ("block-size-zero", with_(9, 0)),
        ("context-zero", with_(10, 0)),
        ("context-float", with_(10, 4096.0)),
        ("max-num-seqs-zero", with_(11, 0)),
        ("zero-layers", with_(6, dataclasses.replace(q, n_layers=0))),
        ("zero-heads", with_(6, dataclasses.replace(q, n_heads=0))),
        ("gqa-zero-kv-heads", with_(6, dataclasses.replace(q, n_kv_heads=0))),
        ("gqa-zero-head-dim", with_(6, dataclasses.replace(q, head_dim=0))),
        ("no-memory-left", with_(2, 80 * 10**9)),
        ("pool-below-one-sequence", with_(10, 10**8)),
    ]
    for name, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", "kv_capacity", *args)
