"""Every figure of the fp8-attention statement and editorial, computed by the reference; the
editorial's picture (output error vs context length for unscaled and scaled P; accumulator
error vs K) is regenerated here and must match."""

import functools
import math
from pathlib import Path

import torch

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "fp8_attention.py", "ref_fp8_attention")
gr = load_module(ROOT / "graders" / "fp8_attention.py", "grader_fp8_attention_fig")
EDITORIAL = ROOT / "exercises" / "fp8-attention" / "editorial.md"
LENGTHS = (1024, 2048, 4096, 8192, 16384)
KS = (512, 1024, 2048, 4096, 8192, 16384)


def rel(o, truth):
    return float((o - truth).norm() / truth.norm())


@functools.lru_cache(maxsize=None)
def sink_curve():
    """Relative output error of 4 queries on a sink-dominated row (V mean 1), by length."""
    out = {}
    for n in LENGTHS:
        q, k, v = gr.inputs("sink", 21, n=4, d=128, n_k=n)
        s = q @ k.T / math.sqrt(128)
        p = torch.softmax(s, 1)
        truth = p @ v
        flushed = float((p * (torch.exp(s - s.amax(1, keepdim=True)) < 2 ** -10)).sum(1).mean())
        out[n] = dict(sink=float(p[:, 0].mean()), flushed=flushed,
                      unscaled=rel(ref.fp8_attention_forward(q, k, v, p_scale_log2=0.0), truth),
                      unscaled_l8=rel(ref.fp8_attention_forward(q, k, v, p_scale_log2=0.0, l_source="fp8"), truth),
                      scaled=rel(ref.fp8_attention_forward(q, k, v), truth))
    return out


@functools.lru_cache(maxsize=None)
def accum_curve():
    g = torch.Generator().manual_seed(31)
    out = {}
    for n in KS:
        a = (torch.rand(64, n, generator=g) * 448).to(torch.float8_e4m3fn).double() * 2.0 ** -8
        b = ((torch.randn(64, n, generator=g) + 1.0) * 64).clamp(-448, 448).to(torch.float8_e4m3fn).double() * 2.0 ** -6
        exact = (a * b).sum(-1)
        err = lambda x: float(((x - exact).abs() / exact.abs()).max())
        out[n] = {(c, p): err(ref.lowprec_dot(a, b, chunk=c, promote=p))
                  for c, p in ((1, None), (4, None), (32, None), (4, 128), (32, 128))}
    return out


def picture_svg() -> str:
    W, H, pad_l, pad_b, pad_t = 640, 260, 50, 40, 24
    pw, ph = 245, H - pad_t - pad_b
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="11">']

    def panel(x0, title, xlabel, ylabel, xr, yr, xticks, yticks, series):
        def px(x):
            return x0 + (x - xr[0]) / (xr[1] - xr[0]) * pw

        def py(y):
            return pad_t + (yr[1] - y) / (yr[1] - yr[0]) * ph

        out.append(f'<rect x="{x0}" y="{pad_t}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        out.append(f'<text x="{x0 + pw / 2:.0f}" y="14" text-anchor="middle">{title}</text>')
        out.append(f'<text x="{x0 + pw / 2:.0f}" y="{H - 6}" text-anchor="middle">{xlabel}</text>')
        out.append(f'<text x="{x0 - 36}" y="{pad_t + ph / 2:.0f}" text-anchor="middle" '
                   f'transform="rotate(-90 {x0 - 36} {pad_t + ph / 2:.0f})">{ylabel}</text>')
        for t, lab in xticks:
            out.append(f'<text x="{px(t):.1f}" y="{pad_t + ph + 14}" text-anchor="middle">{lab}</text>')
        for t, lab in yticks:
            out.append(f'<text x="{x0 - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{lab}</text>')
        for pts, color, label, (lx, ly) in series:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
            for x, y in pts:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>')
            out.append(f'<text x="{px(lx):.1f}" y="{py(ly):.1f}" fill="{color}">{label}</text>')

    sc = sink_curve()
    lx = [(math.log2(n), n) for n in LENGTHS]
    panel(pad_l, "P near zero: a sink row, V mean 1", "keys in the row", "relative output error",
          (10, 14), (0, 1), [(e, f"{n // 1024}K") for e, n in lx], [(y, f"{y:.2f}") for y in (0, 0.25, 0.5, 0.75, 1.0)],
          [([(e, sc[n]["unscaled"]) for e, n in lx], "#d62728", "P in [0,1] to e4m3", (10.1, 0.85)),
           ([(e, sc[n]["scaled"]) for e, n in lx], "#2ca02c", "P x 2^8 (FA3)", (12.0, 0.1))])
    ac = accum_curve()
    kx = [(math.log2(n), n) for n in KS]
    lg = lambda v: math.log10(v)
    panel(2 * pad_l + pw + 20, "accumulator: e8m13, truncating", "K (dot length)", "max relative error",
          (9, 14), (-4.5, -0.5), [(e, f"{n // 1024}K" if n >= 1024 else str(n)) for e, n in kx],
          [(y, f"1e{y}") for y in (-4, -3, -2, -1)],
          [([(e, lg(ac[n][(4, None)])) for e, n in kx], "#d62728", "chunk 4", (9.2, -1.1)),
           ([(e, lg(ac[n][(32, None)])) for e, n in kx], "#ff7f0e", "chunk 32", (12.3, -2.3)),
           ([(e, lg(ac[n][(4, 128)])) for e, n in kx], "#2ca02c", "chunk 4, promote 128", (9.2, -3.0))])
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == picture_svg(), "regenerate the SVG: print(picture_svg())"


def test_statement_examples():
    x = torch.tensor([[1.0, -3.0, 0.5], [2.0, 0.02, -7.0]], dtype=torch.float64)
    assert ref.fp8_quantize(x, "tensor").tolist() == [[1.0, -3.0, 0.5], [2.0, 0.01953125, -7.0]]
    assert 0.01953125 == 80 * 2.0 ** -12
    a = torch.tensor([[1.0] + [2.0 ** -10] * 5], dtype=torch.float64)
    b = torch.ones_like(a)
    assert ref.lowprec_dot(a, b, mant_bits=3, chunk=1).tolist() == [1.0]
    assert ref.lowprec_dot(a, b, mant_bits=3, chunk=1, promote=2).tolist() == [1.00390625]
    assert float((a * b).sum()) == 1.0048828125


def test_p_near_zero():
    sc = sink_curve()
    r = {n: {k: round(v, 3) for k, v in d.items()} for n, d in sc.items()}
    assert r[1024] == dict(sink=0.712, flushed=0.271, unscaled=0.244, unscaled_l8=0.226, scaled=0.019)
    assert r[16384] == dict(sink=0.173, flushed=0.787, unscaled=0.759, unscaled_l8=0.568, scaled=0.010)


def test_accumulator():
    ac = accum_curve()
    assert round(ac[4096][(4, None)], 3) == 0.023       # ~2% at K = 4096 (DeepSeek-V3's figure)
    assert round(ac[4096][(1, None)], 3) == 0.077 and round(ac[4096][(32, None)], 5) == 0.00325
    assert round(ac[4096][(4, 128)], 5) == 0.00048 and round(ac[16384][(4, None)], 3) == 0.088
    assert round(ac[16384][(4, 128)], 5) == 0.00046 and round(ac[512][(4, None)], 4) == 0.0028


def test_stress_and_outlier_tables():
    q, k, v = gr.inputs("spikes", 0, n=1024, d=128)
    h = gr.hadamard(128, 0)
    base, rot = ref.logit_errors(q, k), ref.logit_errors(q, k, hadamard=h)
    assert (round(base["std"], 4), round(rot["std"], 4)) == (0.0410, 0.0411)
    assert (round(base["p_weighted"], 4), round(rot["p_weighted"], 4)) == (0.0720, 0.0468)
    truth = torch.softmax(q @ k.T / math.sqrt(128), 1) @ v
    rmse = lambda o: float(((o - truth) ** 2).mean().sqrt())
    assert round(rmse(ref.fp8_attention_forward(q, k, v)), 5) == 0.01380
    assert round(rmse(ref.fp8_attention_forward(q, k, v, hadamard=h)), 5) == 0.00786
    gains = {}
    for kind in ("offset", "highvar", "spikes", "sink"):
        n_k = 2048 if kind == "sink" else None
        qq, kk, vv = gr.inputs(kind, 1, n=4 if kind == "sink" else 384, d=64, n_k=n_k)
        gains[kind] = {key: round(val, 2) for key, val in ref.fix_gains(qq, kk, vv, gr.hadamard(64, 3)).items()}
    assert gains == GAINS


GAINS = {
    "offset": {"channel_k_scale": 1.01, "block_scales": 1.01, "smooth_k": 6.04, "hadamard": 1.01,
               "hadamard_std": 1.01, "scale_p": 1.0},
    "highvar": {"channel_k_scale": 1.12, "block_scales": 1.11, "smooth_k": 1.1, "hadamard": 1.29,
                "hadamard_std": 1.0, "scale_p": 1.0},
    "spikes": {"channel_k_scale": 1.35, "block_scales": 0.96, "smooth_k": 1.02, "hadamard": 1.55,
               "hadamard_std": 0.99, "scale_p": 1.01},
    "sink": {"channel_k_scale": 2.28, "block_scales": 1.0, "smooth_k": 1.01, "hadamard": 3.93,
             "hadamard_std": 1.04, "scale_p": 4.11},
}
