"""Hidden cases for hetero-pools: node counts for the tabled GPUs and made-up ones (exact >=
boundaries, power-of-two rounding, other node sizes, no weights with exactly zero spare), role
assignment with node and bandwidth ties, decode step times on and off one node, ceil pool sizing
with exact boundaries, and the prefill/decode compatibility check field by field (strings are
case-sensitive); then the input checks."""

from __future__ import annotations

import dataclasses
import math
import random

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_equal, fail

RTOL = 1e-9
K2 = specs.KIMI_K2
KV_TOK = K2.n_layers * (K2.kv_lora_rank + K2.qk_rope_head_dim) * 2      # 70,272 B (BF16 MLA)
ROOM_128K = 131072 * KV_TOK
MADE = dataclasses.replace(specs.H100_SXM, name="made-up-80", hbm_bytes=80 * 10**9)
FAST_BW = dataclasses.replace(specs.B200, name="fast-bw", hbm_bytes_per_s=9.0e12, fp8_dense_flops=1.0e15,
                              bf16_dense_flops=0.5e15)
BIG_SLOW = dataclasses.replace(specs.H200_SXM, name="big-slow", hbm_bytes=288 * 10**9,
                               hbm_bytes_per_s=3.0e12)
GPUS = [specs.B200, specs.H100_SXM, specs.H200_SXM, specs.A100_SXM_80GB, BIG_SLOW]

BASE = {"model": "moonshotai/Kimi-K2-Instruct", "weight_format": "fp8_block128",
        "kv_cache_dtype": "fp8_e4m3", "kv_scale": 1.0, "block_size": 64, "kv_layout": "NHD",
        "tp_head_split": 1, "rope_scaling": None, "hybrid_kv_manager": False}


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def _cfg(**kw) -> dict:
    c = dict(BASE)
    c.update(kw)
    return c


def _grade_min_nodes(g: Grading, ref) -> None:
    cases = []
    for gpu in GPUS:
        for W, wn in ((1.0e12, "1tb"), (1.03e12, "k2")):
            for room, rn in ((ROOM_128K, "room128k"), (ROOM_128K / 2, "room128k-fp8"), (0.0, "noroom")):
                for p2 in (True, False):
                    cases.append((f"min-nodes-{_slug(gpu.name)}-{wn}-{rn}-{'pow2' if p2 else 'any'}",
                                  (gpu, W, 0.9, 4e9, room, 8, p2)))
    # exact >= boundaries: 0.75 * 80e9 = 60e9; W / (8 n) and every term integer-valued
    cases += [
        ("min-nodes-boundary-n2-exact", (MADE, 512e9, 0.75, 4e9, 24e9, 8, False)),
        ("min-nodes-boundary-n3-exact", (MADE, 480e9, 0.75, 4e9, 36e9, 8, False)),
        ("min-nodes-boundary-n3-exact-pow2", (MADE, 480e9, 0.75, 4e9, 36e9, 8, True)),
        ("min-nodes-boundary-one-node-exact", (MADE, 256e9, 0.75, 4e9, 24e9, 8, True)),
        ("min-nodes-boundary-just-over", (MADE, 480e9, 0.75, 4e9, 36e9 + 1, 8, False)),
        # W / (8 * 2) = 24e9 + 0.5 bytes (exact in float64): free(2) is half a byte short of the room
        ("min-nodes-boundary-half-byte-short", (MADE, 384e9 + 8, 0.75, 4e9, 32e9, 8, False)),
        ("min-nodes-four-gpus-per-node", (specs.H100_SXM, 1.0e12, 0.9, 4e9, ROOM_128K, 4, False)),
        ("min-nodes-nvl72-like", (specs.B200, 5.0e12, 0.9, 4e9, ROOM_128K, 72, True)),
        ("min-nodes-many-nodes-pow2", (specs.A100_SXM_80GB, 4.0e12, 0.8, 2e9, 20e9, 8, True)),
        ("min-nodes-many-nodes-any", (specs.A100_SXM_80GB, 4.0e12, 0.8, 2e9, 20e9, 8, False)),
        ("min-nodes-no-weights", (specs.H100_SXM, 0.0, 0.9, 4e9, 10e9, 8, True)),
        # W = 0 and util * hbm - reserve - room == 0 exactly (0.5 * 80e9 - 30e9 - 10e9): fits on 1
        ("min-nodes-no-weights-exact-zero-spare", (specs.H100_SXM, 0.0, 0.5, 30e9, 10e9, 8, True)),
        ("min-nodes-no-weights-exact-zero-spare-any", (specs.H100_SXM, 0, 0.5, 30e9, 10e9, 8, False)),
        ("min-nodes-util-one", (specs.H100_SXM, 1.0e12, 1.0, 0.0, 0.0, 8, False)),
    ]
    for name, args in cases:
        with g.case(name):
            expect_equal(g.call("min_nodes", *args), ref.min_nodes(*args), name="nodes")
    with g.case("min-nodes-default-is-8-per-node-pow2"):
        # H100 at 128K room; then the made-up GPU where 8 per node (not 7 or 9) decides 2 vs 4 nodes
        for args in ((specs.H100_SXM, 1.0e12, 0.9, 4e9, ROOM_128K), (MADE, 512e9, 0.75, 4e9, 24e9),
                     (MADE, 400e9, 0.75, 4e9, 32e9)):
            expect_equal(g.call("min_nodes", *args), ref.min_nodes(*args), name=f"nodes(W={args[1]:g})")


def _grade_roles(g: Grading, ref) -> None:
    rng = random.Random(f"hetero-pools:{g.salt}")
    cases = [
        ("roles-b200-vs-h100", {"h100": specs.H100_SXM, "b200": specs.B200}, 1.0e12, ROOM_128K),
        ("roles-h200-vs-h100", {"H100": specs.H100_SXM, "H200": specs.H200_SXM}, 1.0e12, ROOM_128K),
        ("roles-node-tie-bandwidth-decides", {"b200": specs.B200, "fast-bw": FAST_BW}, 1.0e12, ROOM_128K),
        ("roles-node-tie-small-model", {"h200": specs.H200_SXM, "b200": specs.B200}, 3.0e11, ROOM_128K),
        ("roles-fewer-nodes-beats-bandwidth", {"h100": specs.H100_SXM, "big-slow": BIG_SLOW}, 1.0e12, ROOM_128K),
        ("roles-same-gpu-name-decides", {"zeta": specs.H100_SXM, "alpha": specs.H100_SXM}, 1.0e12, ROOM_128K),
        ("roles-a100-vs-h100-no-room", {"a100": specs.A100_SXM_80GB, "h100": specs.H100_SXM}, 1.0e12, 0.0),
    ]
    rng.shuffle(cases)
    for name, pools, W, room in cases:
        for p2 in (True, False):
            with g.case(f"{name}-{'pow2' if p2 else 'any'}"):
                out = g.call("assign_roles", pools, W, 0.9, 4e9, room, 8, p2)
                exp = ref.assign_roles(pools, W, 0.9, 4e9, room, 8, p2)
                if not isinstance(out, dict) or set(out) != set(exp):
                    fail(f"expected a dict with exactly the keys {sorted(exp)}")
                for k in ("decode", "prefill", "decode_nodes", "prefill_nodes"):
                    expect_equal(out[k], exp[k], name=f"[{k!r}]")
    # the defaults (8 GPUs per node, powers of two): the made-up 80 GB GPU needs 2 nodes of 8 exactly
    with g.case("roles-defaults-8-per-node-pow2"):
        pools = {"made-80": MADE, "b200": specs.B200}
        for args in ((512e9, 0.75, 4e9, 24e9), (400e9, 0.75, 4e9, 32e9)):
            out, exp = g.call("assign_roles", pools, *args), ref.assign_roles(pools, *args)
            if not isinstance(out, dict) or set(out) != set(exp):
                fail(f"expected a dict with exactly the keys {sorted(exp)}")
            for k in ("decode", "prefill", "decode_nodes", "prefill_nodes"):
                expect_equal(out[k], exp[k], name=f"[{k!r}] (W={args[0]:g})")


def _grade_steps(g: Grading, ref) -> None:
    cases = [
        ("step-b200-one-node", (specs.B200, 1, 1.0e12, 32.96e9, 0.8, 60, 155.0, 273.0)),
        ("step-h100-four-nodes", (specs.H100_SXM, 4, 1.0e12, 36.73e9, 0.8, 60, 155.0, 273.0)),
        ("step-h100-two-nodes-ep16", (specs.H100_SXM, 2, 1.0e12, 5.0e9, 0.9, 60, 118.0, 195.0)),
        ("step-deepseek-58-layers", (specs.H200_SXM, 2, 6.71e11, 20e9, 0.85, 58, 155, 273)),
        ("step-four-gpus-per-node", (specs.H100_SXM, 8, 1.0e12, 10e9, 1.0, 60, 173.0, 314.0, 4)),
        ("step-no-moe-layers", (specs.H100_SXM, 4, 1.0e12, 10e9, 0.8, 0, 155.0, 273.0)),
        ("step-made-up-gpu", (FAST_BW, 3, 2.0e12, 1.5e10, 0.7, 45, 90.5, 120.25)),
        # a toy model: 1000 B over 24 GPUs is 41.67 B each, not a whole number
        ("step-tiny-weights-uneven-split", (specs.H100_SXM, 3, 1000.0, 0.0, 1.0, 0, 0.0, 0.0)),
    ]
    for name, args in cases:
        with g.case(name):
            expect_close(g.call("decode_step_ms", *args), ref.decode_step_ms(*args), name="step_ms", rtol=RTOL)


def _grade_pools(g: Grading, ref) -> None:
    keys = ("prefill_tokens_per_s", "decode_tokens_per_s", "prefill_instances", "decode_instances",
            "prefill_nodes", "decode_nodes")
    cases = [
        ("pools-question-load", (20.0, 8192, 1024, 395_776.0, 17_860.0, 4, 1)),
        ("pools-exact-boundaries", (20.0, 8192, 1024, 163_840.0, 10_240.0, 4, 1)),
        ("pools-exact-boundaries-twice", (20.0, 8192, 1024, 81_920.0, 5_120.0, 2, 1)),
        ("pools-just-over", (20.0, 8192, 1024, 163_839.0, 10_239.5, 4, 2)),
        ("pools-long-outputs", (2.5, 1000, 6000, 50_000.0, 4_000.0, 1, 1)),
        ("pools-int-rate", (7, 3000, 300, 10_000, 1_000, 2, 1)),
        ("pools-zero-load", (0.0, 8192, 1024, 1e5, 1e4, 4, 1)),
        ("pools-rates-below-one-token-per-s", (0.01, 10, 10, 0.5, 0.25, 1, 1)),
    ]
    for name, args in cases:
        with g.case(name):
            out = g.call("pool_sizes", *args)
            exp = ref.pool_sizes(*args)
            if not isinstance(out, dict) or set(out) != set(keys):
                fail(f"expected a dict with exactly the keys {list(keys)}")
            for k in keys:
                if k.endswith("tokens_per_s"):
                    expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)
                else:
                    expect_equal(out[k], exp[k], name=f"[{k!r}]")


def _grade_mismatches(g: Grading, ref) -> None:
    cases = [
        ("pd-identical", BASE, _cfg()),
        ("pd-weight-format", BASE, _cfg(weight_format="nvfp4")),
        ("pd-kv-dtype", BASE, _cfg(kv_cache_dtype="bf16")),
        ("pd-kv-dtype-e5m2", BASE, _cfg(kv_cache_dtype="fp8_e5m2")),
        ("pd-kv-dtype-alias-fp8", BASE, _cfg(kv_cache_dtype="fp8")),
        ("pd-kv-dtype-auto-is-bf16", _cfg(kv_cache_dtype="auto", kv_scale=None), _cfg(kv_cache_dtype="bf16", kv_scale=0.5)),
        ("pd-kv-dtype-auto-vs-fp16", _cfg(kv_cache_dtype="auto"), _cfg(kv_cache_dtype="fp16")),
        ("pd-kv-scale", BASE, _cfg(kv_scale=0.5)),
        ("pd-kv-scale-none-is-one", _cfg(kv_scale=None), BASE),
        ("pd-kv-scale-none-vs-two", _cfg(kv_scale=None), _cfg(kv_scale=2.0)),
        ("pd-kv-scale-ignored-for-bf16", _cfg(kv_cache_dtype="bf16", kv_scale=1.0), _cfg(kv_cache_dtype="bf16", kv_scale=0.25)),
        ("pd-kv-scale-ignored-when-one-side-bf16", _cfg(kv_scale=0.5), _cfg(kv_cache_dtype="auto", kv_scale=1.0)),
        ("pd-block-size", BASE, _cfg(block_size=16)),
        ("pd-layout", BASE, _cfg(kv_layout="HND")),
        ("pd-tp-split", BASE, _cfg(tp_head_split=8)),
        ("pd-rope", BASE, _cfg(rope_scaling={"type": "yarn", "factor": 32.0})),
        ("pd-rope-none-is-empty", BASE, _cfg(rope_scaling={})),
        ("pd-rope-factor", _cfg(rope_scaling={"type": "yarn", "factor": 32.0}), _cfg(rope_scaling={"type": "yarn", "factor": 16.0})),
        ("pd-hybrid", BASE, _cfg(hybrid_kv_manager=True)),
        ("pd-model", BASE, _cfg(model="deepseek-ai/DeepSeek-V3")),
        # strings compare as given: a difference in case alone is a mismatch
        ("pd-strings-differ-only-in-case", BASE, _cfg(model="moonshotai/kimi-k2-instruct",
                                                      weight_format="FP8_BLOCK128", kv_layout="nhd")),
        ("pd-several", _cfg(kv_scale=None), _cfg(weight_format="mxfp8", kv_cache_dtype="fp8", kv_scale=0.5,
                                                  block_size=128, hybrid_kv_manager=True)),
        ("pd-everything", BASE, {"model": "m2", "weight_format": "bf16", "kv_cache_dtype": "fp8_e5m2",
                                 "kv_scale": 3.0, "block_size": 32, "kv_layout": "HND", "tp_head_split": 2,
                                 "rope_scaling": {"factor": 4.0}, "hybrid_kv_manager": True}),
    ]
    for name, a, b in cases:
        with g.case(name):
            expect_equal(g.call("pd_mismatches", a, b), ref.pd_mismatches(a, b), name="mismatches")


def grade(g: Grading) -> None:
    ref = g.reference()
    _grade_min_nodes(g, ref)
    _grade_roles(g, ref)
    _grade_steps(g, ref)
    _grade_pools(g, ref)
    _grade_mismatches(g, ref)
    H = specs.H100_SXM
    missing = dict(BASE)
    del missing["kv_layout"]
    checks = [
        ("min-nodes-util-zero", "min_nodes", (H, 1e12, 0.0, 4e9, 1e9)),
        ("min-nodes-util-above-one", "min_nodes", (H, 1e12, 1.5, 4e9, 1e9)),
        ("min-nodes-negative-weights", "min_nodes", (H, -1e12, 0.9, 4e9, 1e9)),
        ("min-nodes-never-fits", "min_nodes", (H, 1e12, 0.9, 40e9, 40e9)),
        ("min-nodes-exact-zero-spare-with-weights", "min_nodes", (H, 1e12, 0.5, 30e9, 10e9)),
        ("min-nodes-exact-zero-spare-one-byte", "min_nodes", (H, 1.0, 0.5, 30e9, 10e9)),
        ("min-nodes-util-zero-nothing-to-hold", "min_nodes", (H, 0.0, 0.0, 0.0, 0.0)),
        ("min-nodes-nan-room", "min_nodes", (H, 1e12, 0.9, 4e9, math.nan)),
        ("roles-three-pools", "assign_roles",
         ({"a": H, "b": specs.B200, "c": specs.H200_SXM}, 1e12, 0.9, 4e9, 1e9)),
        ("step-zero-nodes", "decode_step_ms", (H, 0, 1e12, 1e9, 0.8, 60, 155.0, 273.0)),
        ("step-efficiency-zero", "decode_step_ms", (H, 1, 1e12, 1e9, 0.0, 60, 155.0, 273.0)),
        ("step-negative-latency", "decode_step_ms", (H, 2, 1e12, 1e9, 0.8, 60, -155.0, 273.0)),
        ("step-efficiency-above-one", "decode_step_ms", (H, 1, 1e12, 1e9, 1.5, 60, 155.0, 273.0)),
        ("step-negative-moe-layers", "decode_step_ms", (H, 2, 1e12, 1e9, 0.8, -1, 155.0, 273.0)),
        ("step-float-moe-layers", "decode_step_ms", (H, 2, 1e12, 1e9, 0.8, 60.0, 155.0, 273.0)),
        ("pools-zero-rate", "pool_sizes", (20.0, 8192, 1024, 0.0, 1e4, 4, 1)),
        ("pools-zero-decode-rate", "pool_sizes", (20.0, 8192, 1024, 1e5, 0.0, 4, 1)),
        ("pools-zero-prompt", "pool_sizes", (20.0, 0, 1024, 1e5, 1e4, 4, 1)),
        ("pools-negative-load", "pool_sizes", (-1.0, 8192, 1024, 1e5, 1e4, 4, 1)),
        ("pd-missing-field", "pd_mismatches", (BASE, missing)),
        ("pd-unknown-field", "pd_mismatches", (_cfg(tokenizer="x"), BASE)),
        ("pd-unknown-kv-dtype", "pd_mismatches", (BASE, _cfg(kv_cache_dtype="int8"))),
    ]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
