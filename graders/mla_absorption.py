"""Hidden grader of mla-absorption.

Core: both decode paths are checked against the reference naive path computed in float64 from the
same (dtype-rounded) inputs; the cost and regime functions run on DeepSeek-V3 and other MLA
configs, with one case exactly on the ridge (compute-bound). The absorbed path alone gets two
cases that decompression cannot pass, whatever it chunks: a cache whose decompressed keys and
values overflow float64 (latent components of 1e150 along directions the absorbed query and the
softmax weights never touch; W_UK c and W_UV c reach 1e350) and, last, a long cache whose
decompressed keys would not fit the memory limit. Input checks (the ValueErrors) run after the
core cases.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from inferprep.grading import INPUT_CHECKS, Grading, Trial, expect_close, expect_tensor, fail
from inferprep.specs import A100_SXM_80GB, B200, DEEPSEEK_V3, H100_SXM, H200_SXM, LLAMA_3_1_70B, DType

TOL = {torch.float64: (1e-9, 1e-12), torch.float32: (1e-4, 1e-4), torch.bfloat16: (8e-3, 1e-5),
       torch.float16: (1e-3, 1e-5)}
ENTRIES = ("mla_decode_naive", "mla_decode_absorbed")

# A 16-head MLA with DeepSeek-V3's ranks (the attention shape of DeepSeek-V2-Lite)
V2_LITE = dataclasses.replace(DEEPSEEK_V3, name="DeepSeek-V2-Lite", n_heads=16, n_kv_heads=16, n_layers=27)
ODD = dataclasses.replace(DEEPSEEK_V3, name="made-up MLA", n_heads=24, kv_lora_rank=320, qk_nope_head_dim=96,
                          qk_rope_head_dim=32, v_head_dim=80, head_dim=128)
# Exactly on the ridge: absorbed, one query, BF16 cache: 2*16*(448+64) + 2*16*448 = 30,720 FLOPs over
# (448+64)*2 = 1,024 bytes = 30.0; the GPU's ridge is (30 * 2**40) / 2**40 = 30.0 in any order of
# operations. The statement's rule (>=) makes it compute-bound.
TIE_MLA = dataclasses.replace(DEEPSEEK_V3, name="made-up MLA on the ridge", n_heads=16, n_kv_heads=16,
                              kv_lora_rank=448, qk_rope_head_dim=64)
TIE_GPU = dataclasses.replace(H100_SXM, name="made-up ridge-30", bf16_dense_flops=float(30 * 2**40),
                              fp8_dense_flops=float(60 * 2**40), hbm_bytes_per_s=float(2**40))
# A hair above it: ridge 30 + 2**-36 (exact in float64), so the same kernel is memory-bound.
ABOVE_GPU = dataclasses.replace(TIE_GPU, name="made-up ridge-30-plus", bf16_dense_flops=float(30 * 2**40 + 16))
# The smallest latent the statement allows (kv_lora_rank == 0 is the only "no MLA")
RANK_1 = dataclasses.replace(DEEPSEEK_V3, name="made-up MLA with a latent of rank 1", n_heads=2, n_kv_heads=2,
                             kv_lora_rank=1, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, head_dim=12)


def _inputs(g: Grading, seed: int, B, H, dn, dr, dv, r, S, dtype, lens=None):
    gen = g.rng(seed)
    f = lambda *s, std=1.0: (torch.randn(*s, generator=gen, dtype=torch.float64) * std).to(dtype)  # noqa: E731
    t = [f(B, H, dn), f(B, H, dr), f(B, S, r), f(B, S, dr), f(H, dn, r, std=r ** -0.5), f(H, dv, r, std=r ** -0.5)]
    cl = None if lens is None else torch.tensor(lens, dtype=torch.int64)
    return t, cl


def overflow_inputs(seed: int):
    """float64 inputs on which the absorbed computation is finite but decompression overflows.

    The key dims split into dn_a (queries nonzero) and dn_b (queries exactly 0), the latent into
    r_a (ordinary) and r_b ("hot"). W_UK is 0 on (dn_a, r_b) and about 1e200 on (dn_b, r_b); W_UV
    is about 1e200 on r_b. "Hot" cached tokens (valid positions, not padding) carry about 1e150
    on r_b and a RoPE key that puts their score about 1e4 below the others, so their softmax
    weight is exactly 0; every other token has 0 on r_b. Absorbed: q_lat = W_UK^T q_nope is
    exactly 0 on r_b (every product is 0 * finite), the latent score and o_lat = p @ c_kv are
    finite and o_lat is exactly 0 on r_b, so W_UV o_lat is finite. Decompressed: W_UK c and W_UV c
    of a hot token reach 1e350 = inf, and q . k or p . v then meets 0 * inf = NaN.
    """
    gen = torch.Generator().manual_seed(seed)
    B, H, dn_a, dn_b, dr, dv, r_a, r_b, S = 2, 8, 16, 8, 8, 20, 32, 8, 257
    dn, r = dn_a + dn_b, r_a + r_b
    lens = [257, 190]
    f = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64)  # noqa: E731
    u = lambda *shape: 1.0 + torch.rand(*shape, generator=gen, dtype=torch.float64)  # noqa: E731
    sign = lambda *shape: torch.randint(0, 2, shape, generator=gen).to(torch.float64) * 2 - 1  # noqa: E731
    q_nope = torch.zeros(B, H, dn, dtype=torch.float64)
    q_nope[:, :, :dn_a] = f(B, H, dn_a)
    q_pe = f(B, H, dr)
    q_pe[:, :, 0] = 1.0 + f(B, H).abs()                       # > 1 in every head
    w_uk = torch.zeros(H, dn, r, dtype=torch.float64)
    w_uk[:, :, :r_a] = f(H, dn, r_a) * r_a ** -0.5
    w_uk[:, dn_a:, r_a:] = 1e200 * u(H, dn_b, r_b) * sign(H, dn_b, r_b)
    w_uv = torch.zeros(H, dv, r, dtype=torch.float64)
    w_uv[:, :, :r_a] = f(H, dv, r_a) * r_a ** -0.5
    w_uv[:, :, r_a:] = 1e200 * u(H, dv, r_b) * sign(H, dv, r_b)
    c_kv = torch.zeros(B, S, r, dtype=torch.float64)
    c_kv[:, :, :r_a] = f(B, S, r_a)
    k_pe = f(B, S, dr)
    hot = torch.zeros(B, S, dtype=torch.bool)
    for b, n in enumerate(lens):
        perm = torch.randperm(n, generator=gen)
        hot[b, perm[: n // 3]] = True                          # a third of the valid tokens; 2/3 stay live
    c_kv[:, :, r_a:] = torch.where(hot[:, :, None], 1e150 * u(B, S, r_b) * sign(B, S, r_b), 0.0)
    k_pe[:, :, 0] = torch.where(hot, -1e5 * u(B, S), k_pe[:, :, 0])
    return [q_nope, q_pe, c_kv, k_pe, w_uk, w_uv], torch.tensor(lens, dtype=torch.int64), hot


SHAPES = [
    # name, B, H, dn, dr, dv, r, S, dtype, cache_lens
    ("tiny-f64", 1, 1, 4, 2, 4, 8, 1, torch.float64, None),
    ("dn-eq-dv-f64", 2, 4, 16, 8, 16, 32, 37, torch.float64, None),
    ("dn-ne-dv-f64", 3, 3, 12, 6, 20, 24, 19, torch.float64, None),
    ("ragged-f64", 3, 2, 8, 4, 8, 16, 40, torch.float64, [40, 1, 17]),
    ("ragged-f32", 4, 8, 32, 16, 32, 64, 65, torch.float32, [3, 65, 64, 1]),
    ("deepseek-v3-dims-f32", 2, 128, 128, 64, 128, 512, 96, torch.float32, [96, 41]),
    ("bf16-long", 1, 4, 64, 32, 64, 128, 3000, torch.bfloat16, None),
    ("bf16-ragged", 2, 8, 32, 16, 32, 64, 513, torch.bfloat16, [513, 300]),
    ("f16-ragged-long", 2, 8, 32, 16, 32, 64, 2000, torch.float16, [2000, 257]),
]


def _expect_int(got, want: int, what: str) -> None:
    if isinstance(got, bool) or not isinstance(got, int):
        fail(f"{what}: expected an int, got {type(got).__name__}")
    if got != want:
        fail(f"{what}: got {got}, which is not the count for this config")


def _check_cost(g: Grading, ref, model, mode: str, T: int, kvd: DType, defaults: bool = False) -> None:
    """``defaults``: call with the signature's defaults (q_len=1, a BF16 cache), T and kvd unused."""
    want = ref.mla_decode_cost(model, mode, q_len=1 if defaults else T, kv_dtype=DType.BF16 if defaults else kvd)
    got = (g.call("mla_decode_cost", model, mode) if defaults
           else g.call("mla_decode_cost", model, mode, q_len=T, kv_dtype=kvd))
    if not isinstance(got, dict) or set(got) != set(want):
        fail(f"expected a dict with exactly the keys {sorted(want)}")
    for k in ("flops_per_cached_token", "flops_per_query_token"):
        _expect_int(got[k], want[k], k)
    expect_close(got["bytes_per_cached_token"], want["bytes_per_cached_token"], rtol=1e-12,
                 name="bytes_per_cached_token")
    expect_close(got["intensity"], want["intensity"], rtol=1e-9, name="intensity")


def _check_regime(g: Grading, ref, model, gpu, mode: str, T: int, kvd: DType, md: DType,
                  defaults: bool = False) -> None:
    """``defaults``: call with the signature's defaults (q_len=1, BF16 cache and math), T, kvd, md unused."""
    if defaults:
        T, kvd, md = 1, DType.BF16, DType.BF16
    want = ref.mla_regime(model, gpu, mode, q_len=T, kv_dtype=kvd, math_dtype=md)
    got = (g.call("mla_regime", model, gpu, mode) if defaults
           else g.call("mla_regime", model, gpu, mode, q_len=T, kv_dtype=kvd, math_dtype=md))
    if not isinstance(got, dict) or set(got) != set(want):
        fail(f"expected a dict with exactly the keys {sorted(want)}")
    expect_close(got["intensity"], want["intensity"], rtol=1e-9, name="intensity")
    expect_close(got["ridge"], want["ridge"], rtol=1e-9, name="ridge")
    if got["regime"] != want["regime"]:
        fail(f"regime: got {str(got['regime'])[:40]!r}, which is the wrong side of the ridge")


def _random_mla(trial: Trial):
    rng = trial.rng
    dn, dr = 16 * rng.randint(1, 8), 16 * rng.randint(1, 4)
    return dataclasses.replace(DEEPSEEK_V3, name="small made-up MLA", n_heads=rng.randint(1, 32), n_kv_heads=1,
                               kv_lora_rank=32 * rng.randint(1, 16), qk_nope_head_dim=dn, qk_rope_head_dim=dr,
                               v_head_dim=16 * rng.randint(1, 8), head_dim=dn + dr)


def _ce_decode(g: Grading, ref, trial: Trial) -> None:
    rng, gen = trial.rng, trial.generator()
    B, H, S = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 2 * trial.size + 1)
    dn, dr, dv, r = rng.randint(1, 6), rng.randint(1, 4), rng.randint(1, 6), rng.randint(2, 8)
    dtype = rng.choice([torch.float64, torch.float64, torch.float32, torch.bfloat16, torch.float16])
    f = lambda *s, std=1.0: (torch.randn(*s, generator=gen, dtype=torch.float64) * std).to(dtype)  # noqa: E731
    t = [f(B, H, dn), f(B, H, dr), f(B, S, r), f(B, S, dr), f(H, dn, r, std=r ** -0.5), f(H, dv, r, std=r ** -0.5)]
    cl = None if rng.random() < 0.3 else torch.tensor([rng.randint(1, S) for _ in range(B)], dtype=torch.int64)
    scale = None if rng.random() < 0.7 else round(rng.uniform(0.05, 1.0), 4)
    entry = trial.pick({"naive-": ENTRIES[0], "absorbed-": ENTRIES[1]}) or rng.choice(ENTRIES)
    kw = {"cache_lens": None if cl is None else cl.to(g.device)} | ({} if scale is None else {"scale": scale})
    g.show_input(q_nope=t[0], q_pe=t[1], c_kv=t[2], k_pe=t[3], w_uk=t[4], w_uv=t[5], **kw)
    want = ref.mla_decode_naive(*[x.to(torch.float64) for x in t], cache_lens=cl,
                                **({} if scale is None else {"scale": scale}))
    rtol, atol = TOL[dtype]
    out = g.call(entry, *[x.to(g.device) for x in t], **kw)
    expect_tensor(out, want.to(dtype).to(g.device), rtol=rtol, atol=atol, dtype=dtype, name=f"{entry} output (B, H, dv)")


def _ce_overflow(g: Grading, ref, trial: Trial) -> None:
    t, cl, _ = overflow_inputs(trial.rng.randrange(1 << 62))
    g.show_input(what="float64 latents of 1e150 along directions the absorbed query never touches "
                      "(their decompressed keys and values overflow)")
    out = g.call("mla_decode_absorbed", *[x.to(g.device) for x in t], cache_lens=cl.to(g.device))
    expect_tensor(out, ref.mla_decode_absorbed(*t, cache_lens=cl).to(g.device), rtol=1e-9, atol=1e-12,
                  name="mla_decode_absorbed output (B, H, dv)")


def _ce_cost(g: Grading, ref, trial: Trial) -> None:
    model, rng = _random_mla(trial), trial.rng
    mode, T, kvd = rng.choice(["naive", "absorbed"]), rng.randint(1, trial.size), rng.choice([DType.BF16, DType.FP8,
                                                                                              DType.FP16])
    g.show_input(model=repr(model), mode=mode, q_len=T, kv_dtype=kvd.name)
    _check_cost(g, ref, model, mode, T, kvd)


def _ce_regime(g: Grading, ref, trial: Trial) -> None:
    model, rng = _random_mla(trial), trial.rng
    mode, T, kvd = rng.choice(["naive", "absorbed"]), rng.randint(1, trial.size), rng.choice([DType.BF16, DType.FP8])
    if rng.random() < 0.5:   # a made-up GPU whose ridge is exactly this kernel's intensity (or one ulp above)
        ridge = ref.mla_decode_cost(model, mode, T, kvd)["intensity"]
        if rng.random() < 0.5:
            ridge = math.nextafter(ridge, math.inf)
        gpu = dataclasses.replace(TIE_GPU, name="made-up GPU", bf16_dense_flops=ridge * 2**40,
                                  fp8_dense_flops=2 * ridge * 2**40, hbm_bytes_per_s=float(2**40))
        md = DType.BF16
    else:
        gpu = rng.choice([H100_SXM, H200_SXM, B200, A100_SXM_80GB])
        md = DType.BF16 if gpu is A100_SXM_80GB else rng.choice([DType.BF16, DType.FP8])
    g.show_input(model=repr(model), gpu=repr(gpu), mode=mode, q_len=T, kv_dtype=kvd.name, math_dtype=md.name)
    _check_regime(g, ref, model, gpu, mode, T, kvd, md)


_CE_KINDS = {"naive-": "decode", "absorbed-": "decode", "scale-given": "decode", "absorbed-never": "overflow",
             "absorbed-long-cache": "overflow", "cost-": "cost", "regime-": "regime"}


def counterexample(g: Grading, trial: Trial) -> None:
    """A small fresh input of a failed case's kind: a tiny decode (1-2 sequences, a few heads and
    dims, ragged lengths, every dtype), a fresh overflow cache for the absorbed path, or a small
    made-up MLA config for the cost and the regime (half of them on a GPU whose ridge is exactly
    the kernel's intensity)."""
    kind = trial.pick(_CE_KINDS) or "decode"
    {"decode": _ce_decode, "overflow": _ce_overflow, "cost": _ce_cost, "regime": _ce_regime}[kind](g, g.reference(), trial)


def grade(g: Grading) -> None:
    ref = g.reference()
    dev = g.device
    for i, (name, B, H, dn, dr, dv, r, S, dtype, lens) in enumerate(SHAPES):
        t, cl = _inputs(g, 900 + i, B, H, dn, dr, dv, r, S, dtype, lens)
        want = ref.mla_decode_naive(*[x.to(torch.float64) for x in t], cache_lens=cl)
        rtol, atol = TOL[dtype]
        for entry in ENTRIES:
            with g.case(f"{entry.removeprefix('mla_decode_')}-{name}"):
                args = [x.to(dev) for x in t]
                out = g.call(entry, *args, cache_lens=None if cl is None else cl.to(dev))
                expect_tensor(out, want.to(dtype).to(dev), rtol=rtol, atol=atol, dtype=dtype,
                              name=f"{entry} output (B, H, dv)")

    with g.case("scale-given"):
        t, cl = _inputs(g, 950, 2, 4, 16, 8, 16, 32, 23, torch.float64, [23, 5])
        s = 0.1352
        want = ref.mla_decode_naive(*t, cache_lens=cl, scale=s)
        for entry in ENTRIES:
            out = g.call(entry, *[x.to(dev) for x in t], cache_lens=cl.to(dev), scale=s)
            expect_tensor(out, want.to(dev), rtol=1e-9, atol=1e-12, name=f"{entry} with scale={s}")

    costs = [
        ("deepseek-v3", DEEPSEEK_V3, 1, DType.BF16),
        ("deepseek-v3-mtp-2", DEEPSEEK_V3, 2, DType.BF16),
        ("deepseek-v3-fp8-cache", DEEPSEEK_V3, 1, DType.FP8),
        ("v2-lite-4-queries", V2_LITE, 4, DType.BF16),
        ("made-up-dims", ODD, 3, DType.FP16),
        ("latent-rank-1", RANK_1, 2, DType.FP8),
    ]
    for name, model, T, kvd in costs:
        for mode in ("naive", "absorbed"):
            with g.case(f"cost-{mode}-{name}"):
                _check_cost(g, ref, model, mode, T, kvd)
    for mode in ("naive", "absorbed"):
        with g.case(f"cost-{mode}-deepseek-v3-signature-defaults"):
            _check_cost(g, ref, DEEPSEEK_V3, mode, 1, DType.BF16, defaults=True)

    regimes = [
        ("v3-h100-absorbed", DEEPSEEK_V3, H100_SXM, "absorbed", 1, DType.BF16, DType.BF16),
        ("v3-h100-naive", DEEPSEEK_V3, H100_SXM, "naive", 1, DType.BF16, DType.BF16),
        ("v3-h100-absorbed-mtp-2", DEEPSEEK_V3, H100_SXM, "absorbed", 2, DType.BF16, DType.BF16),
        ("v3-h100-fp8-cache-bf16-math", DEEPSEEK_V3, H100_SXM, "absorbed", 1, DType.FP8, DType.BF16),
        ("v3-h100-fp8-cache-fp8-math", DEEPSEEK_V3, H100_SXM, "absorbed", 1, DType.FP8, DType.FP8),
        ("v3-h200-absorbed", DEEPSEEK_V3, H200_SXM, "absorbed", 1, DType.BF16, DType.BF16),
        ("v3-a100-absorbed", DEEPSEEK_V3, A100_SXM_80GB, "absorbed", 1, DType.BF16, DType.BF16),
        ("v2-lite-b200-absorbed", V2_LITE, B200, "absorbed", 1, DType.BF16, DType.BF16),
        ("made-up-h100-absorbed-3", ODD, H100_SXM, "absorbed", 3, DType.BF16, DType.BF16),
        ("exactly-on-the-ridge", TIE_MLA, TIE_GPU, "absorbed", 1, DType.BF16, DType.BF16),
        ("a-hair-below-the-ridge", TIE_MLA, ABOVE_GPU, "absorbed", 1, DType.BF16, DType.BF16),
    ]
    for name, model, gpu, mode, T, kvd, md in regimes:
        with g.case(f"regime-{name}"):
            _check_regime(g, ref, model, gpu, mode, T, kvd, md)
    with g.case("regime-v3-h100-signature-defaults"):
        _check_regime(g, ref, DEEPSEEK_V3, H100_SXM, "absorbed", 1, DType.BF16, DType.BF16, defaults=True)

    with g.case("absorbed-never-decompresses"):
        t, cl, _ = overflow_inputs(995)
        want = ref.mla_decode_absorbed(*t, cache_lens=cl)
        out = g.call("mla_decode_absorbed", *[x.to(dev) for x in t], cache_lens=cl.to(dev))
        expect_tensor(out, want.to(dev), rtol=1e-9, atol=1e-12,
                      name="mla_decode_absorbed output (B, H, dv) on a cache whose decompressed keys and "
                           "values overflow float64 (NaN or inf here means per-head keys or values were formed)")

    if not g.public:
        # Last core case: a long cache. Decompressing its keys alone takes S*H*dn*4 bytes = 768 MiB in float32,
        # over the 512 MiB limit; the absorbed path needs about 40 MB.
        with g.case("absorbed-long-cache-does-not-decompress"):
            t, _ = _inputs(g, 990, 1, 128, 128, 64, 128, 512, 12288, torch.float32)
            want = ref.mla_decode_absorbed(*t)
            out = g.call("mla_decode_absorbed", *[x.to(dev) for x in t])
            expect_tensor(out, want.to(dev), rtol=1e-4, atol=1e-4, name="mla_decode_absorbed output (B, H, dv)")

    # Input checks, after every core case (a child that dies stops later cases).
    bad = [
        ("w_uk-wrong-rank", dict(w_uk=(4, 16, 31))),
        ("k_pe-wrong-length", dict(k_pe=(2, 22, 8))),
        ("cache_len-zero", dict(lens=[0, 5])),
        ("cache_len-over-S", dict(lens=[24, 5])),
    ]
    for name, what in bad:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            t, cl = _inputs(g, 960, 2, 4, 16, 8, 16, 32, 23, torch.float64, what.get("lens"))
            if "w_uk" in what:
                t[4] = torch.zeros(*what["w_uk"], dtype=torch.float64)
            if "k_pe" in what:
                t[3] = torch.zeros(*what["k_pe"], dtype=torch.float64)
            for entry in ENTRIES:
                g.raises("ValueError", entry, *[x.to(dev) for x in t], cache_lens=None if cl is None else cl.to(dev))

    # Every error the statement lists: not 3-d, shapes that disagree, S < 1, cache_lens not an
    # integer (B,) tensor.
    def modify(name):
        t, cl = _inputs(g, 961, 2, 4, 16, 8, 16, 32, 23, torch.float64, [23, 5])
        z = lambda *s, dtype=torch.float64: torch.zeros(*s, dtype=dtype)  # noqa: E731
        if name == "cache_lens-float":
            cl = torch.tensor([23.0, 5.0], dtype=torch.float64)
        elif name == "cache_lens-float32-whole":
            cl = torch.tensor([4.0, 4.0], dtype=torch.float32)
        elif name == "cache_lens-wrong-length":
            cl = torch.tensor([23, 5, 4], dtype=torch.int64)
        elif name == "cache_lens-one-for-all":
            cl = torch.tensor([5], dtype=torch.int64)
        elif name == "cache_lens-2d":
            cl = torch.tensor([[23, 5]], dtype=torch.int64)
        elif name == "cache_lens-list":
            cl = [23, 5]
        elif name == "S-zero":
            t[2], t[3], cl = z(2, 0, 32), z(2, 0, 8), None
        elif name == "q_nope-2d":
            t[0] = t[0].reshape(2, 4 * 16)
        elif name == "q_pe-4d":
            t[1] = t[1][:, :, None, :]
        elif name == "c_kv-4d":
            t[2] = t[2][:, :, None, :]
        elif name == "k_pe-2d":
            t[3] = t[3].reshape(2 * 23, 8)
        elif name == "w_uv-2d":
            t[5] = t[5].reshape(4 * 16, 32)
        # A trailing axis of 1: every shape check on the first three axes passes, only the rank is wrong
        elif name == "q_pe-4d-trailing":
            t[1] = t[1][..., None]
        elif name == "c_kv-4d-trailing":
            t[2] = t[2][..., None]
        elif name == "w_uv-4d-trailing":
            t[5] = t[5][..., None]
        elif name == "q_pe-wrong-heads":
            t[1] = z(2, 3, 8)
        elif name == "c_kv-wrong-batch":
            t[2] = z(3, 23, 32)
        elif name == "w_uv-wrong-rank":
            t[5] = z(4, 16, 31)
        elif name == "w_uv-wrong-heads":
            t[5] = z(3, 16, 32)
        return t, cl

    for name in ("cache_lens-float", "cache_lens-float32-whole", "cache_lens-wrong-length",
                 "cache_lens-one-for-all", "cache_lens-2d", "cache_lens-list", "S-zero", "q_nope-2d", "q_pe-4d", "c_kv-4d",
                 "k_pe-2d", "w_uv-2d", "q_pe-4d-trailing", "c_kv-4d-trailing", "w_uv-4d-trailing",
                 "q_pe-wrong-heads", "c_kv-wrong-batch", "w_uv-wrong-rank",
                 "w_uv-wrong-heads"):
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            t, cl = modify(name)
            cl = cl.to(dev) if isinstance(cl, torch.Tensor) else cl
            for entry in ENTRIES:
                g.raises("ValueError", entry, *[x.to(dev) for x in t], cache_lens=cl)

    for name, fn, args, kw in [
        ("not-mla", "mla_decode_cost", (LLAMA_3_1_70B, "absorbed"), {}),
        ("bad-mode", "mla_decode_cost", (DEEPSEEK_V3, "fast"), {}),
        ("q_len-0", "mla_decode_cost", (DEEPSEEK_V3, "naive"), {"q_len": 0}),
        ("q_len-float", "mla_decode_cost", (DEEPSEEK_V3, "absorbed"), {"q_len": 2.0}),
        ("regime-not-mla", "mla_regime", (LLAMA_3_1_70B, H100_SXM, "absorbed"), {}),
        ("regime-bad-mode", "mla_regime", (DEEPSEEK_V3, H100_SXM, "decompressed"), {}),
        ("regime-q_len-0", "mla_regime", (DEEPSEEK_V3, H100_SXM, "naive"), {"q_len": 0}),
        ("fp8-math-on-a100", "mla_regime", (DEEPSEEK_V3, A100_SXM_80GB, "absorbed"), {"math_dtype": DType.FP8}),
    ]:
        with g.case(f"rejects-{name}", group=INPUT_CHECKS):
            g.raises("ValueError", fn, *args, **kw)
