"""Every figure of the kv-quant-keys-values statement and editorial, computed by the reference;
the editorial's sharpness picture is regenerated here and must match."""

import math
from functools import lru_cache
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "kv_quant_keys_values.py", "ref_kv_quant_keys_values")
EDITORIAL = ROOT / "exercises" / "kv-quant-keys-values" / "editorial.md"
OUTLIERS = (3, 17, 64, 100)
MULTS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def make_kv(L, D, seed):
    """The editorial's data: keys N(0,1) with channels 3, 17, 64, 100 stretched x3 and offset by
    12; values N(0,1) times a per-token log-normal magnitude exp(0.6 N(0,1)); 64 queries N(0,1)."""
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(L, D, generator=g, dtype=torch.float64)
    for c in OUTLIERS:
        k[:, c] = k[:, c] * 3.0 + 12.0
    v = torch.randn(L, D, generator=g, dtype=torch.float64) \
        * torch.exp(0.6 * torch.randn(L, 1, generator=g, dtype=torch.float64))
    q = torch.randn(64, D, generator=g, dtype=torch.float64)
    return q, k, v


def fq(x, bits, group, layout):
    return ref.dequantize_groups(*ref.quantize_groups(x, bits, group, layout), group, layout)


@lru_cache(maxsize=None)
def layout_table():
    """Mean relative output error over 5 seeds, 2-bit, group 32 (L=1024, D=128)."""
    out = {}
    for what in ("K", "V"):
        for layout in ("per_token", "per_channel"):
            errs = []
            for seed in range(5):
                q, k, v = make_kv(1024, 128, seed)
                kh = fq(k, 2, 32, layout) if what == "K" else k
                vh = fq(v, 2, 32, layout) if what == "V" else v
                r = ref.error_roads(q, k, v, kh, vh, 1 / math.sqrt(128))
                errs.append(r["k_only"] if what == "K" else r["v_only"])
            out[what, layout] = sum(errs) / len(errs)
    return out


@lru_cache(maxsize=None)
def sharpness():
    """4-bit, group 32, keys per channel and values per token, seed 0; logits times m."""
    q, k, v = make_kv(1024, 128, 0)
    kh, vh = fq(k, 4, 32, "per_channel"), fq(v, 4, 32, "per_token")
    return {m: ref.error_roads(q, k, v, kh, vh, m / math.sqrt(128)) for m in MULTS}


def counts(L0, steps, R=128, group=8, D=8):
    g = torch.Generator().manual_seed(0)
    kp, vp = torch.randn(1, L0, D, generator=g), torch.randn(1, L0, D, generator=g)
    qs, ks, vs = (torch.randn(steps, 1, D, generator=g) for _ in range(3))
    return ref.kivi_decode(kp, vp, qs, ks, vs, 2, 2, group, R)


def compression(L0, bits=2, group=32, R=128, D=32):
    r = counts(L0, 0, R, group, D)
    return 2 * L0 * D * 2 / r["nbytes"][0]


def sharpness_svg() -> str:
    W, H, L, R, T, B = 560, 300, 60, 20, 20, 44
    xs = [math.log2(m) for m in MULTS]
    xmin, xmax, ymax = xs[0], xs[-1], 0.24

    def px(x):
        return L + (x - xmin) / (xmax - xmin) * (W - L - R)

    def py(y):
        return T + (ymax - y) / ymax * (H - T - B)

    s = sharpness()
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for m in MULTS:
        x = px(math.log2(m))
        out.append(f'<text x="{x:.1f}" y="{H - B + 14}" text-anchor="middle">x{m:g}</text>')
        out.append(f'<text x="{x:.1f}" y="{T + 12}" text-anchor="middle" fill="#777">'
                   f'{s[m]["entropy"]:.2f}</text>')
    for y in (0.0, 0.04, 0.08, 0.12, 0.16, 0.20, 0.24):
        out.append(f'<text x="{L - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 10}" text-anchor="middle">'
               'logit multiplier (grey: attention entropy, nats)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">relative output error (4-bit)</text>')
    for key, color, label in (("k_only", "#d62728", "keys only (per channel)"),
                              ("v_only", "#1f77b4", "values only (per token)")):
        pts = " ".join(f"{px(math.log2(m)):.1f},{py(s[m][key]):.1f}" for m in MULTS)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        for m in MULTS:
            out.append(f'<circle cx="{px(math.log2(m)):.1f}" cy="{py(s[m][key]):.1f}" r="3" fill="{color}"/>')
        last = s[MULTS[-1]][key]
        out.append(f'<text x="{px(xmax) - 4:.1f}" y="{py(last) + (-8 if key == "k_only" else 16):.1f}" '
                   f'text-anchor="end" fill="{color}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == sharpness_svg(), "regenerate the SVG: print(sharpness_svg())"


def test_statement_example():
    c, s, z = ref.quantize_groups(torch.tensor([[0.0, 0.5, 1.5, 3.0]]), 2, 4, "per_token")
    assert c.tolist() == [[0, 0, 2, 3]] and s.tolist() == [[1.0]] and z.tolist() == [[0.0]]
    assert ref.dequantize_groups(c, s, z, 4, "per_token").tolist() == [[0.0, 0.0, 2.0, 3.0]]
    r = counts(300, 84)
    assert r["counts"][0] == [256, 44, 172, 128]
    assert r["counts"][83] == [256, 127, 255, 128]
    assert r["counts"][84] == [384, 0, 256, 128]
    assert r["nbytes"][0] == 5320.0


def test_bookkeeping_table():
    want = {(100, 0): [0, 100, 0, 100], (300, 0): [256, 44, 172, 128], (256, 0): [256, 0, 128, 128],
            (4096, 1): [4096, 1, 3969, 128], (50, 100): [128, 22, 22, 128], (128, 0): [128, 0, 0, 128],
            (127, 1): [128, 0, 0, 128], (128, 1): [128, 1, 1, 128]}
    for (L0, steps), c in want.items():
        assert counts(L0, steps)["counts"][-1] == c, (L0, steps)


def test_layout_table():
    t = layout_table()
    assert round(t["K", "per_token"], 3) == 2.738
    assert round(t["K", "per_channel"], 3) == 0.461
    assert round(t["V", "per_token"], 3) == 0.395
    assert round(t["V", "per_channel"], 3) == 0.561


def test_outlier_channels_set_the_range():
    _, k, _ = make_kv(1024, 128, 0)
    bulk = [c for c in range(128) if c not in OUTLIERS]
    kt, kc = fq(k, 2, 32, "per_token"), fq(k, 2, 32, "per_channel")
    rel = lambda kh: float((kh - k)[:, bulk].norm() / k[:, bulk].norm())  # noqa: E731
    assert round(rel(kt), 3) == 1.432
    assert round(rel(kc), 3) == 0.392


def test_sharpness():
    s = sharpness()
    assert [round(s[m]["k_only"], 3) for m in MULTS] == [0.023, 0.044, 0.082, 0.110, 0.127, 0.198]
    assert [round(s[m]["v_only"], 3) for m in MULTS] == [0.085, 0.083, 0.079, 0.078, 0.077, 0.077]
    assert round(s[0.25]["entropy"], 2) == 6.89 and round(s[4.0]["entropy"], 2) == 1.88
    for m in MULTS:
        assert s[m]["v_linear"] == pytest.approx(s[m]["v_only"], rel=1e-12)


def test_first_order_roads():
    q, k, v = make_kv(1024, 128, 0)
    r = {b: ref.error_roads(q, k, v, fq(k, b, 32, "per_channel"), fq(v, b, 32, "per_token"),
                            1 / math.sqrt(128)) for b in (8, 4, 2)}
    assert (round(r[8]["k_only"], 5), round(r[8]["k_linear"], 5)) == (0.00524, 0.00524)
    assert (round(r[4]["k_only"], 4), round(r[4]["k_linear"], 4)) == (0.0823, 0.0820)


def test_compression():
    assert [round(compression(L), 3) for L in (128, 1024, 4096, 32768)] == [1.684, 4.197, 4.995, 5.289]
    # keys cost bits + 2*16/group bits per element once quantized: 2 + 1 = 3 at group 32
    assert ref._nbytes(128, 0, 0, 0, 1, 32, 2, 2, 32) * 8 / (128 * 32) == 3.0
