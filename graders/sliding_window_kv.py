"""Hidden cases for sliding-window-kv: vLLM's sliding-layer block count on every side of a block
boundary (the straddling block at C = 129 and 145, C < W, W = 1, B = 1), the three allocators on
the gpt-oss-120b/20b shapes, a Gemma-3-27B-like 5:1 pattern, all-full and all-sliding stacks and
salted made-up patterns (contexts below, at and far above the window, a window larger than the
context, a context that is not a multiple of the block size, FP8 and fractional per-token
sizes, 1 and 0.5 bytes per token), vLLM's per-request budget for several max_num_batched_tokens
(the max_model_len cap and its boundary, max_model_len 1, a budget larger than a full layer's);
then the input checks."""

from __future__ import annotations

import math
import random

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail

S, F = "sliding_attention", "full_attention"
GPT_OSS_120B = [S, F] * 18
GPT_OSS_20B = [S, F] * 12
GEMMA3_27B = [F if i % 6 == 5 else S for i in range(62)]      # 52 sliding + 10 full
THREE_TO_ONE = [S, S, S, F] * 8
ALL_FULL = [F] * 12
ALL_SLIDING = [S] * 10
ALLOCATORS = ("uniform", "hybrid", "token_exact")
RTOL = 1e-9

BLOCK_GRID = (
    [(128, c, 16) for c in (1, 64, 127, 128, 129, 143, 144, 145, 160, 161, 4096, 131072, 1_000_000)]
    + [(100, c, 16) for c in (99, 100, 101, 115, 116, 117, 200)]
    + [(4096, c, 32) for c in (4095, 4096, 4097, 4127, 4128, 4129, 65536)]
    + [(1, c, 16) for c in (1, 2, 16, 17, 33)]
    + [(5, c, 1) for c in (3, 5, 6, 100)]
    + [(128, c, 128) for c in (128, 129, 255, 256, 257)]
    + [(1024, c, 64) for c in (1023, 1025, 1088, 1089)]
)

SEQ_CASES = [
    # (name, layer_types, window, context, bytes per token per layer, block)
    ("gpt-oss-120b", GPT_OSS_120B, 128, 131072, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 129, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 145, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 64, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 1, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 1000, 2048, 16),
    ("gpt-oss-120b-fp8", GPT_OSS_120B, 128, 2**20, 1024, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 32768, 131072, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 100000, 65536, 2048, 16),
    ("gpt-oss-20b", GPT_OSS_20B, 128, 1_000_000, 2048, 32),
    ("gemma3-27b-like", GEMMA3_27B, 1024, 131072, 8192, 16),
    ("gemma3-27b-like", GEMMA3_27B, 1024, 1500, 8192, 64),
    ("three-to-one", THREE_TO_ONE, 512, 40000, 576.5, 16),
    ("all-full", ALL_FULL, 128, 131072, 4096, 16),
    ("all-sliding", ALL_SLIDING, 4096, 100000, 1536, 256),
    ("all-sliding", ALL_SLIDING, 4096, 3000, 1536, 1),
    ("one-byte-per-token", GPT_OSS_20B, 128, 1000, 1, 16),
    ("half-byte-per-token", THREE_TO_ONE, 64, 777, 0.5, 16),
]

BUDGET_CASES = [
    # (name, layer_types, window, max_model_len, max_num_batched_tokens, block)
    ("gpt-oss-120b", GPT_OSS_120B, 128, 131072, 2048, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 131072, 8192, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 131072, 16384, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 131072, 1, 16),
    ("gpt-oss-120b", GPT_OSS_120B, 128, 131072, 131072, 16),
    ("gpt-oss-120b-short-model-len", GPT_OSS_120B, 128, 256, 8192, 16),
    ("cap-boundary", GPT_OSS_120B, 128, 8319, 8192, 16),
    ("cap-boundary", GPT_OSS_120B, 128, 8318, 8192, 16),
    ("cap-boundary", GPT_OSS_120B, 128, 8320, 8192, 16),
    ("gemma3-27b-like", GEMMA3_27B, 1024, 131072, 8192, 32),
    ("three-to-one", THREE_TO_ONE, 1, 32768, 4096, 16),
    ("all-full", ALL_FULL, 128, 32768, 2048, 16),
    ("model-len-one", GPT_OSS_120B, 128, 1, 2048, 16),
]


def _check(out, exp, int_keys=(), float_keys=()) -> None:
    keys = tuple(int_keys) + tuple(float_keys)
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {sorted(keys)}")
    for k in int_keys:
        expect_equal(out[k], exp[k], name=f"[{k!r}]")
    for k in float_keys:
        expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL, atol=1e-12 if k == "saving" else 0.0)


def _random_cases(rng: random.Random) -> tuple[list, list]:
    seq, bud = [], []
    for i in range(6):
        n = rng.randint(2, 64)
        layers = [rng.choice((S, S, F)) for _ in range(n)]
        w = rng.choice((64, 128, 256, 1000, 4096, 8192))
        b = rng.choice((1, 16, 32, 64))
        c = rng.choice((w - 1, w, w + 1, w + b, w + b + 1, rng.randint(1, 300_000)))
        s = rng.choice((512, 1024, 2048, 4096, 1234.5))
        seq.append((f"made-up-{i}-{n}-layers", layers, w, max(1, c), s, b))
        bud.append((f"made-up-{i}-{n}-layers", layers, w, rng.randint(1, 300_000),
                    rng.choice((1, 512, 2048, 8192, 65536)), b))
    return seq, bud


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"sliding-window-kv:{g.salt}")
    rnd_seq, rnd_bud = _random_cases(rng)
    grid = list(BLOCK_GRID) + [(w, c, b) for _, _, w, c, _, b in rnd_seq]
    for w, c, b in grid:
        with g.case(f"blocks-W{w}-C{c}-B{b}"):
            expect_equal(g.call("sliding_layer_blocks", w, c, b), ref.sliding_layer_blocks(w, c, b),
                         name="blocks")
    for name, layers, w, c, s, b in SEQ_CASES + rnd_seq:
        for alloc in ALLOCATORS:
            with g.case(f"{alloc}-{name}-W{w}-C{c}-B{b}-s{s}"):
                _check(g.call("sequence_kv", layers, w, c, s, b, alloc),
                       ref.sequence_kv(layers, w, c, s, b, alloc),
                       float_keys=("bytes", "no_window_bytes", "saving"))
    with g.case("tuple-of-layer-types"):
        layers = tuple(GPT_OSS_120B)
        _check(g.call("sequence_kv", layers, 128, 4097, 2048, 16, "hybrid"),
               ref.sequence_kv(layers, 128, 4097, 2048, 16, "hybrid"),
               float_keys=("bytes", "no_window_bytes", "saving"))
    for name, layers, w, m, t, b in BUDGET_CASES + rnd_bud:
        with g.case(f"budget-{name}-W{w}-M{m}-T{t}-B{b}"):
            _check(g.call("vllm_request_budget", layers, w, m, t, b),
                   ref.vllm_request_budget(layers, w, m, t, b),
                   int_keys=("full_layer_blocks", "sliding_layer_blocks", "request_blocks"),
                   float_keys=("saving",))
    # Input checks.
    L = GPT_OSS_120B
    checks = [
        ("blocks-zero-window", "sliding_layer_blocks", (0, 10, 16)),
        ("blocks-zero-context", "sliding_layer_blocks", (128, 0, 16)),
        ("blocks-zero-block-size", "sliding_layer_blocks", (128, 10, 0)),
        ("blocks-float-context", "sliding_layer_blocks", (128, 2.5, 16)),
        ("blocks-bool-window", "sliding_layer_blocks", (True, 10, 16)),
        ("seq-empty-layers", "sequence_kv", ([], 128, 10, 2048, 16, "hybrid")),
        ("seq-layers-a-string", "sequence_kv", (S, 128, 10, 2048, 16, "hybrid")),
        ("seq-unknown-layer-type", "sequence_kv", ([S, "sliding"], 128, 10, 2048, 16, "hybrid")),
        ("seq-zero-window", "sequence_kv", (L, 0, 10, 2048, 16, "hybrid")),
        ("seq-negative-context", "sequence_kv", (L, 128, -4, 2048, 16, "hybrid")),
        ("seq-zero-block-size", "sequence_kv", (L, 128, 10, 2048, 0, "uniform")),
        ("seq-zero-bytes", "sequence_kv", (L, 128, 10, 0, 16, "hybrid")),
        ("seq-negative-bytes", "sequence_kv", (L, 128, 10, -2048, 16, "hybrid")),
        ("seq-nan-bytes", "sequence_kv", (L, 128, 10, math.nan, 16, "hybrid")),
        ("seq-infinite-bytes", "sequence_kv", (L, 128, 10, math.inf, 16, "hybrid")),
        ("seq-unknown-allocator", "sequence_kv", (L, 128, 10, 2048, 16, "paged")),
        ("budget-empty-layers", "vllm_request_budget", ([], 128, 4096, 2048, 16)),
        ("budget-zero-batched-tokens", "vllm_request_budget", (L, 128, 4096, 0, 16)),
        ("budget-zero-model-len", "vllm_request_budget", (L, 128, 0, 2048, 16)),
        ("budget-zero-window", "vllm_request_budget", (L, 0, 4096, 2048, 16)),
        ("budget-zero-block-size", "vllm_request_budget", (L, 128, 4096, 2048, 0)),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
