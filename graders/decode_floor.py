"""Hidden cases for decode-floor: dense tabled and made-up models (tied, MHA, MQA, wide heads,
dense MLA, the one-of-everything model, MLA of ranks 1), the four GPUs and a made-up one, batches of 1 to 64 ragged sequences, mixed weight
and KV dtypes, gap splits across efficiencies and overheads; then the input checks (each ValueError of the
statement, from both functions)."""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep import specs
from inferprep.grading import INPUT_CHECKS, Grading, expect_close, fail
from inferprep.specs import DType, ModelConfig

RTOL = 1e-9
FLOOR_KEYS = ("weight_bytes", "kv_bytes", "floor_ms")
GAP_KEYS = ("weights_ms", "kv_ms", "bandwidth_gap_ms", "overhead_ms", "step_ms", "largest_gap")

TIED = ModelConfig(name="tied-1b", n_layers=16, hidden_size=2048, n_heads=32, n_kv_heads=8,
                   head_dim=64, ffn_size=8192, vocab_size=128256, tied_embeddings=True)
MHA = ModelConfig(name="mha-7b", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                  head_dim=128, ffn_size=11008, vocab_size=32000)
MQA_WIDE = ModelConfig(name="mqa-wide", n_layers=26, hidden_size=2304, n_heads=8, n_kv_heads=1,
                       head_dim=256, ffn_size=9216, vocab_size=256000, tied_embeddings=True)
MLA = ModelConfig(name="mla-dense", n_layers=30, hidden_size=3072, n_heads=24, n_kv_heads=24,
                  head_dim=192, ffn_size=8192, vocab_size=102400, q_lora_rank=768,
                  kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# DeepSeek-V2-Lite-like MLA without a query LoRA (q_lora_rank == 0: the query is a plain
# d x H*(qk_nope + qk_rope) projection); made-up layer count and FFN.
MLA_RQ0 = ModelConfig(name="mla-rq0", n_layers=27, hidden_size=2048, n_heads=16, n_kv_heads=16,
                      head_dim=192, ffn_size=10944, vocab_size=102400, q_lora_rank=0,
                      kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
# The edges of the allowed models: one of everything (head_dim 1), and MLA of ranks 1 whose
# head_dim (7) is not its q.k width (3).
ONE = ModelConfig(name="one-of-each", n_layers=1, hidden_size=1, n_heads=1, n_kv_heads=1, head_dim=1,
                  ffn_size=1, vocab_size=1)
MLA_RANK_1 = ModelConfig(name="mla-rank-1", n_layers=3, hidden_size=64, n_heads=4, n_kv_heads=4,
                         head_dim=7, ffn_size=128, vocab_size=100, q_lora_rank=1, kv_lora_rank=1,
                         qk_nope_head_dim=2, qk_rope_head_dim=1, v_head_dim=3)
MODELS = [specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, TIED, MHA, MQA_WIDE, MLA, MLA_RQ0, ONE, MLA_RANK_1]
ODD_GPU = dataclasses.replace(specs.H100_SXM, name="made-up", hbm_bytes_per_s=1.234e12)
GPUS = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB, ODD_GPU]
DTYPES = [(DType.BF16, DType.BF16), (DType.FP8, DType.FP8), (DType.INT4, DType.FP8),
          (DType.INT8, DType.BF16), (DType.FP32, DType.FP32), (DType.BF16, DType.INT4)]


def _lens(seed: int) -> list[int]:
    g = torch.Generator().manual_seed(300 + seed)
    b = int(torch.randint(1, 65, (1,), generator=g))
    hi = int(torch.randint(2, 200_000, (1,), generator=g))
    return [int(x) for x in torch.randint(1, hi, (b,), generator=g)]


def _check(out, exp, keys) -> None:
    if not isinstance(out, dict) or set(out) != set(keys):
        fail(f"expected a dict with exactly the keys {list(keys)}")
    for k in keys:
        if k == "largest_gap":
            vals = sorted((exp["kv_ms"], exp["bandwidth_gap_ms"], exp["overhead_ms"]))
            tie = vals[2] - vals[1] <= 1e-9 * max(vals[2], 1e-300)
            if not tie and out[k] != exp[k]:
                fail(f"['largest_gap']: got {out[k]!r}, which is not the largest of the three gaps")
        else:
            expect_close(out[k], exp[k], name=f"[{k!r}]", rtol=RTOL)


def _slug(s: str) -> str:
    return s.lower().replace(" ", "-")


def grade(g: Grading) -> None:
    ref = g.reference()
    i = 0
    for m in MODELS:
        for gpu in GPUS:
            for wd, kd in DTYPES[:3] if gpu is not specs.H100_SXM else DTYPES:
                i += 1
                lens = [1] if i % 5 == 0 else ([8192] * 32 if i % 5 == 1 else _lens(i))
                with g.case(f"floor-{_slug(m.name)}-{_slug(gpu.name)}-{wd.value}-{kd.value}-b{len(lens)}"):
                    _check(g.call("decode_floor", m, gpu, lens, wd, kd),
                           ref.decode_floor(m, gpu, lens, wd, kd), FLOOR_KEYS)
    with g.case("floor-tuple-of-lengths"):
        lens = (5, 17, 1)
        _check(g.call("decode_floor", MHA, specs.H100_SXM, lens, DType.BF16, DType.BF16),
               ref.decode_floor(MHA, specs.H100_SXM, lens, DType.BF16, DType.BF16), FLOOR_KEYS)
    for j, (eff, ovh) in enumerate([(1.0, 0.0), (0.8, 0.5), (0.55, 0.0), (0.92, 5.0), (0.7, 1.25),
                                    (1.0, 3)]):
        for m in (specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, MQA_WIDE, MLA, MLA_RQ0):
            lens = _lens(100 + j) if j % 2 else [4096] * 16
            with g.case(f"gaps-{_slug(m.name)}-eff{eff}-ovh{ovh}-b{len(lens)}"):
                _check(g.call("decode_gaps", m, specs.H100_SXM, lens, DType.BF16, DType.FP8, eff, ovh),
                       ref.decode_gaps(m, specs.H100_SXM, lens, DType.BF16, DType.FP8, eff, ovh),
                       GAP_KEYS)
    for ovh in (0, 3, 0.0):
        with g.case(f"gaps-overhead-is-float-{ovh!r}"):
            out = g.call("decode_gaps", MHA, specs.H100_SXM, [100, 7], DType.BF16, DType.BF16, 0.9, ovh)
            _check(out, ref.decode_gaps(MHA, specs.H100_SXM, [100, 7], DType.BF16, DType.BF16, 0.9, ovh),
                   GAP_KEYS)
            if type(out["overhead_ms"]) is not float:
                fail(f"['overhead_ms']: expected a float, got {type(out['overhead_ms']).__name__}")
    # Input checks last; both functions check the batch and the model.
    m, gpu, bf = specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16
    checks = []
    bad_lens = [("empty-batch", []), ("zero-length", [10, 0]), ("float-length", [10, 2.5]),
                ("bool-length", [True]), ("one-int-not-a-list", 4096)]
    bad_models = [("moe", specs.MIXTRAL_8X7B),
                  ("moe-one-routed-expert", dataclasses.replace(m, n_routed_experts=1, experts_per_token=1,
                                                                moe_ffn_size=14336)), ("heads-not-multiple", dataclasses.replace(m, n_kv_heads=7)),
                  ("zero-kv-heads", dataclasses.replace(m, n_kv_heads=0)),
                  ("zero-layers", dataclasses.replace(m, n_layers=0))]
    bad_models += [(f"zero-{f}", dataclasses.replace(m, **{f: 0}))
                   for f in ("hidden_size", "n_heads", "vocab_size", "head_dim")]
    for fn, extra in (("decode_floor", ()), ("decode_gaps", (0.9, 0.0))):
        tag = "floor" if fn == "decode_floor" else "gaps"
        checks += [(f"{tag}-{name}", fn, (m, gpu, lens, bf, bf) + extra) for name, lens in bad_lens]
        checks += [(f"{tag}-{name}", fn, (bad, gpu, [10], bf, bf) + extra) for name, bad in bad_models]
    checks += [(f"gaps-efficiency-{name}", "decode_gaps", (m, gpu, [10], bf, bf, eff, 0.0))
               for name, eff in (("zero", 0.0), ("negative", -0.5), ("above-one", 1.5), ("nan", math.nan))]
    checks += [(f"gaps-overhead-{name}", "decode_gaps", (m, gpu, [10], bf, bf, 0.9, ovh))
               for name, ovh in (("negative", -1.0), ("nan", math.nan), ("infinite", math.inf))]
    for name, fn, args in checks:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args)
