"""Hidden cases for flops-per-token: the tables' models plus made-up but consistent ones
(tied embeddings, MHA, MQA, head_dim != d/H, MoE with shared experts and dense first layers,
MLA without a query LoRA), seeded random configs; then the input checks: each ValueError of
the statement from each function that promises it."""

from __future__ import annotations

import dataclasses

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.specs import ModelConfig

PARAM_KEYS = ("embedding", "lm_head", "attention", "mlp", "norm", "total", "active_matmul")
FLOP_KEYS = ("weights", "attention", "total")
RTOL = 1e-9

TIED_1B = ModelConfig(name="tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                      head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MHA = ModelConfig(name="mha-7b", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
MQA_WIDE_HEADS = ModelConfig(name="mqa-wide-heads", n_layers=26, hidden_size=2304, n_heads=8,
                             n_kv_heads=1, head_dim=256, ffn_size=9216, vocab_size=256000,
                             tied_embeddings=True)
MOE_SHARED = ModelConfig(name="moe-shared", n_layers=12, hidden_size=1024, n_heads=16, n_kv_heads=4,
                         head_dim=64, ffn_size=4096, vocab_size=50000, n_routed_experts=60,
                         n_shared_experts=2, experts_per_token=4, moe_ffn_size=512,
                         first_dense_layers=2)
MLA_NO_QLORA = ModelConfig(name="mla-lite", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                           head_dim=192, ffn_size=10944, vocab_size=102400, n_routed_experts=64,
                           n_shared_experts=2, experts_per_token=6, moe_ffn_size=1408,
                           first_dense_layers=1, q_lora_rank=0, kv_lora_rank=512,
                           qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
MLA_DENSE = ModelConfig(name="mla-dense", n_layers=4, hidden_size=512, n_heads=8, n_kv_heads=8,
                        head_dim=48, ffn_size=1536, vocab_size=1000, q_lora_rank=96,
                        kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=40)
ALL_DENSE_MOE = ModelConfig(name="moe-all-dense", n_layers=3, hidden_size=256, n_heads=4,
                            n_kv_heads=2, head_dim=64, ffn_size=1024, vocab_size=777,
                            n_routed_experts=8, experts_per_token=8, moe_ffn_size=128,
                            first_dense_layers=3)


# The allowed edges: head_dim 1; one routed expert chosen by top-1 (next to a shared one and a
# dense first layer); MLA with latent and query ranks of 1 and head_dim (7) unlike n + p (3).
HEAD_DIM_1 = ModelConfig(name="head-dim-1", n_layers=2, hidden_size=8, n_heads=4, n_kv_heads=2, head_dim=1,
                         ffn_size=16, vocab_size=10)
ONE_EXPERT = ModelConfig(name="moe-one-expert", n_layers=3, hidden_size=32, n_heads=4, n_kv_heads=2,
                         head_dim=8, ffn_size=64, vocab_size=100, n_routed_experts=1, n_shared_experts=1,
                         experts_per_token=1, moe_ffn_size=24, first_dense_layers=1)
MLA_RANK_1 = ModelConfig(name="mla-rank-1", n_layers=3, hidden_size=64, n_heads=4, n_kv_heads=4, head_dim=7,
                         ffn_size=128, vocab_size=100, q_lora_rank=1, kv_lora_rank=1, qk_nope_head_dim=2,
                         qk_rope_head_dim=1, v_head_dim=3)


def _random_model(seed: int) -> ModelConfig:
    g = torch.Generator().manual_seed(1000 + seed)

    def ri(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    kv = ri(1, 8)
    heads = kv * ri(1, 8)
    hd = 16 * ri(1, 16)
    moe = seed % 2 == 1
    n_layers = ri(1, 64)
    return ModelConfig(
        name=f"random-{seed}", n_layers=n_layers, hidden_size=64 * ri(2, 128), n_heads=heads,
        n_kv_heads=kv, head_dim=hd, ffn_size=ri(100, 30000), vocab_size=ri(1000, 300000),
        tied_embeddings=bool(ri(0, 1)),
        n_routed_experts=(E := ri(2, 128)) if moe else 0,
        n_shared_experts=ri(0, 2) if moe else 0,
        experts_per_token=ri(1, E) if moe else 0,
        moe_ffn_size=ri(64, 4096) if moe else 0,
        first_dense_layers=ri(0, n_layers) if moe else 0)


def _models() -> list[ModelConfig]:
    return ([specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.MIXTRAL_8X7B, specs.DEEPSEEK_V3,
             TIED_1B, MHA, MQA_WIDE_HEADS, MOE_SHARED, MLA_NO_QLORA, MLA_DENSE, ALL_DENSE_MOE,
             HEAD_DIM_1, ONE_EXPERT, MLA_RANK_1]
            + [_random_model(s) for s in range(8)])


def _exact(actual, expected: int, name: str) -> None:
    """Exact int check whose message does not reveal the hidden expected value."""
    if isinstance(actual, bool) or not isinstance(actual, int):
        fail(f"{name}: expected an int, got {type(actual).__name__}")
    if actual != expected:
        fail(f"{name}: got {actual}, which is {'too large' if actual > expected else 'too small'}")


def _expect_dict(out, expected: dict, keys, *, exact: bool) -> None:
    if not isinstance(out, dict):
        fail(f"expected a dict with keys {list(keys)}, got {type(out).__name__}")
    if set(out) != set(keys):
        fail(f"expected exactly the keys {sorted(keys)}, got {sorted(map(str, out))}")
    for k in keys:
        if exact:
            _exact(out[k], expected[k], f"[{k!r}]")
        else:
            expect_close(out[k], float(expected[k]), name=f"[{k!r}]", rtol=RTOL)


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def grade(g: Grading) -> None:
    ref = g.reference()
    for m in _models():
        with g.case(f"param-counts-{_slug(m.name)}"):
            _expect_dict(g.call("param_counts", m), ref.param_counts(m), PARAM_KEYS, exact=True)
    for i, m in enumerate(_models()):
        for L in ((1, 4096, 131072) if i < 4 else (1 + 997 * i,)):
            with g.case(f"flops-{_slug(m.name)}-ctx{L}"):
                _expect_dict(g.call("flops_per_token", m, L), ref.flops_per_token(m, L),
                             FLOP_KEYS, exact=False)
    for m in _models():
        with g.case(f"crossover-{_slug(m.name)}"):
            _exact(g.call("attention_crossover_context", m), ref.attention_crossover_context(m),
                   "crossover context")
    with g.case("crossover-exact-boundary"):
        # weights = 2*(attn + mlp + head) and per_key divide exactly: the crossover is the quotient
        m = ModelConfig(name="exact", n_layers=1, hidden_size=8, n_heads=1, n_kv_heads=1, head_dim=8,
                        ffn_size=8, vocab_size=8)
        _exact(g.call("attention_crossover_context", m), ref.attention_crossover_context(m),
               "crossover context")
    with g.case("mla-ignores-kv-heads-and-head-dim"):
        # the statement: n_kv_heads and head_dim are ignored for MLA models (no check applies)
        m = dataclasses.replace(MLA_DENSE, name="mla-no-gqa-fields", n_kv_heads=0, head_dim=0)
        _expect_dict(g.call("param_counts", m), ref.param_counts(m), PARAM_KEYS, exact=True)

    # Input checks last. Every function checks the model; flops_per_token also checks context_len.
    checks = [(f"context-{name}", "flops_per_token", (specs.LLAMA_3_1_8B, bad))
              for name, bad in (("zero", 0), ("negative", -5), ("float", 2.5), ("bool", True))]
    bad_models = [
        ("heads-not-multiple-of-kv-heads", dataclasses.replace(specs.LLAMA_3_1_8B, n_kv_heads=5)),
        ("zero-kv-heads", dataclasses.replace(specs.LLAMA_3_1_8B, n_kv_heads=0)),
        ("zero-head-dim", dataclasses.replace(specs.LLAMA_3_1_8B, head_dim=0)),
        ("zero-layers", dataclasses.replace(specs.LLAMA_3_1_8B, n_layers=0)),
        ("top-k-above-experts", dataclasses.replace(specs.MIXTRAL_8X7B, experts_per_token=9)),
        ("top-k-zero", dataclasses.replace(MOE_SHARED, experts_per_token=0)),
        ("top-2-of-one-expert", dataclasses.replace(ONE_EXPERT, experts_per_token=2)),
        ("dense-layers-above-layers", dataclasses.replace(specs.DEEPSEEK_V3, first_dense_layers=62)),
        ("dense-layers-negative", dataclasses.replace(MOE_SHARED, first_dense_layers=-1)),
    ]
    for name, m in bad_models:
        checks += [(f"{name}-param-counts", "param_counts", (m,)),
                   (f"{name}-flops", "flops_per_token", (m, 4096)),
                   (f"{name}-crossover", "attention_crossover_context", (m,))]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
