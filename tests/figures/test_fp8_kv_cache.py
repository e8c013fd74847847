"""Every figure of the fp8-kv-cache statement and editorial, computed by the reference; the
editorial's two-panel picture (error vs scale, clipped tokens vs context length) is regenerated
here and must match."""

import functools
import math
from pathlib import Path

import pytest
import torch

from inferprep import specs
from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "fp8_kv_cache.py", "ref_fp8_kv_cache")
EDITORIAL = ROOT / "exercises" / "fp8-kv-cache" / "editorial.md"
STATEMENT = ROOT / "exercises" / "fp8-kv-cache" / "statement.md"


class Stream:
    """An in-memory stream with the hosted stream's interface (K and V may be the same tensor)."""

    def __init__(self, k, v):
        self.k, self.v = k, v
        self.length, self.num_kv_heads, self.head_dim = (int(s) for s in k.shape)

    def read(self, a, b):
        assert 0 <= a < b <= self.length and b - a <= 4096
        return self.k[a:b], self.v[a:b]


def spike_stream(seed, length=131072, dim=128, rate=1e-4, lo=8.0, hi=40.0):
    """Gaussian tokens; each token is a spike with probability `rate`, scaled by U(lo, hi)."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(length, dim, generator=g)
    u = torch.rand(length, generator=g)
    spikes = (u < rate).nonzero().flatten()
    mags = lo + (hi - lo) * torch.rand(len(spikes), generator=g)
    v[spikes] *= mags[:, None]
    return v[:, None, :]


@functools.lru_cache(maxsize=None)
def k_like():
    """4096 x 128 Gaussian keys with two outlier channels (+12 and -9)."""
    g = torch.Generator().manual_seed(0)
    k = torch.randn(4096, 128, generator=g)
    k[:, 7] += 12.0
    k[:, 77] -= 9.0
    return k


def rel_err(x, s):
    return float((ref.fp8_decode(ref.fp8_encode(x, s), s) - x).norm() / x.norm())


@functools.lru_cache(maxsize=None)
def scale_curve():
    k = k_like()
    s_lo = float(k.abs().max()) / 448
    return {e: rel_err(k, s_lo * 2.0 ** e) for e in range(-6, 17)}


@functools.lru_cache(maxsize=None)
def length_curve():
    """Clipped V tokens within the first n tokens of seed 1's stream, calibration [0, 2048)."""
    v = spike_stream(1)
    out = {}
    for div in (100.0, 448.0):
        out[div] = [(n, ref.audit_long_context(Stream(v[:n], v[:n]), 0, 2048, div, div)["v_clipped_tokens"])
                    for n in (2 ** e for e in range(11, 18))]
    return out


def picture_svg() -> str:
    W, H, pad_l, pad_b, pad_t = 640, 260, 50, 40, 24
    pw = 245
    ph = H - pad_t - pad_b
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

    sc = scale_curve()
    panel(pad_l, "rounding is scale-free, clipping is not", "scale / (amax/448), log2", "relative RMS error",
          (-6, 16), (0, 1), [(e, f"2^{e}") for e in (-6, -3, 0, 4, 8, 12, 16)],
          [(y, f"{y:.2f}") for y in (0, 0.25, 0.5, 0.75, 1.0)],
          [([(e, min(v, 1.0)) for e, v in sc.items()], "#1f77b4", "e4m3, K with outlier channels", (1, 0.2))])
    lc = length_curve()
    panel(2 * pad_l + pw + 20, "calibrated on the first 2048 tokens", "context length (tokens)",
          "V tokens clipped", (11, 17), (0, 25), [(e, f"{2 ** e // 1024}K") for e in range(11, 18)],
          [(y, str(y)) for y in (0, 5, 10, 15, 20, 25)],
          [([(math.log2(n), c) for n, c in lc[448.0]], "#d62728", "amax/448", (11.2, 22)),
           ([(math.log2(n), c) for n, c in lc[100.0]], "#2ca02c", "vLLM amax/100", (14.2, 3))])
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == picture_svg(), "regenerate the SVG: print(picture_svg())"


def test_statement_example():
    x = torch.tensor([1.0625, 17.0, 500.0, 2.0 ** -10, -3.0])
    c = ref.fp8_encode(x, 0.25)
    assert c.tolist() == [0x48, 0x68, 0x7E, 0x02, 0xD4]
    assert ref.fp8_decode(c, 0.25).tolist() == [1.0, 16.0, 112.0, 2.0 ** -10, -3.0]
    x1 = torch.tensor([1.0625, 1.1875, 17.0, 2.0 ** -10, 3 * 2.0 ** -10])
    assert ref.fp8_decode(ref.fp8_encode(x1, 1.0), 1.0).tolist() == [1.0, 1.25, 16.0, 0.0, 2.0 ** -8]


def test_bytes_halve():
    m = specs.LLAMA_3_1_8B
    per_token = 2 * m.n_layers * m.n_kv_heads * m.head_dim
    assert per_token * 2 == 128 * 1024 and per_token * 1 == 64 * 1024
    assert per_token * 2 * 131072 == 16 * 2 ** 30 and per_token * 131072 == 8 * 2 ** 30


def test_worst_rounding_error():
    e4 = ref.fp8_decode(ref.fp8_encode(torch.tensor([1.0625]), 1.0), 1.0).item()
    e5 = ref.fp8_decode(ref.fp8_encode(torch.tensor([1.125]), 1.0, "e5m2"), 1.0, "e5m2").item()
    assert (1.0625 - e4) / 1.0625 == pytest.approx(1 / 17) and round(1 / 17, 4) == 0.0588
    assert (1.125 - e5) / 1.125 == pytest.approx(1 / 9)


def test_scale_curve():
    sc = scale_curve()
    assert round(float(k_like().abs().max()), 2) == 15.72
    assert all(round(sc[e], 4) == 0.0270 for e in range(0, 7))
    assert round(sc[9], 4) == 0.0271 and round(sc[10], 4) == 0.0280
    best = min(sc.values())
    assert [e for e, v in sc.items() if v <= 1.05 * best] == list(range(0, 11))   # 10 octaves
    assert round(sc[-1], 2) == 0.24 and round(sc[-6], 2) == 0.92


def test_clipping():
    c = ref.fp8_decode(ref.fp8_encode(torch.tensor([4480.0]), 1.0), 1.0).item()
    assert c == 448.0 and (4480 - c) / 4480 == pytest.approx(0.9)
    assert 448 / 200 == 2.24 and 448 / 100 == 4.48


def test_long_context_spikes():
    assert round(1 - (1 - 1e-4) ** 2048, 3) == 0.185 and round(1e-4 * 131072, 1) == 13.1
    got = {}
    for seed in (0, 1, 2):
        v = spike_stream(seed)
        s = Stream(v, v)
        a = ref.audit_long_context(s, 0, 2048, 100.0, 100.0)
        b = ref.audit_long_context(s, 0, 2048, 448.0, 448.0)
        got[seed] = (a["v_first_clipped"], a["v_clipped_tokens"], b["v_first_clipped"], b["v_clipped_tokens"])
    assert got == {0: (None, 0, 25681, 3), 1: (19562, 13, 2604, 23), 2: (15845, 10, 2783, 92)}


def test_length_curve():
    lc = length_curve()
    assert lc[100.0] == [(2048, 0), (4096, 0), (8192, 0), (16384, 0), (32768, 1), (65536, 6), (131072, 13)]
    assert lc[448.0][0] == (2048, 0) and lc[448.0][-1] == (131072, 23)


def test_sink():
    g = torch.Generator().manual_seed(7)
    L, D = 8192, 128
    k = torch.randn(L, D, generator=g)
    v = torch.randn(L, D, generator=g) * 0.5
    d = torch.randn(D, generator=g)
    d /= d.norm()
    k[0] = d * 400.0
    v[0] = torch.randn(D, generator=g) * 0.05
    q = torch.randn(D, generator=g)
    q -= (q @ d) * d
    q += d * 0.27
    p = torch.softmax((k.double() @ q.double()) / math.sqrt(D), 0)
    truth = p @ v.double()
    assert round(float(p[0]), 3) == 0.518
    vs = float(v.abs().max()) / 448
    res = {}
    for name, window in (("with-sink", k[0:2048]), ("without-sink", k[1:2049])):
        ks = float(window.abs().max()) / 200
        res[name] = (int((k[0].abs().double() * 200 > 448 * float(window.abs().max())).sum()),)
        out = ref.fp8_decode_attention(q[None, None], ref.fp8_encode(k, ks)[None, None],
                                       ref.fp8_encode(v, vs)[None, None], ks, vs)[0, 0]
        res[name] += (round(float((out.double() - truth).norm() / truth.norm()), 3),)
    assert res == {"with-sink": (0, 0.507), "without-sink": (102, 0.991)}
    s = Stream(k[:, None], v[:, None])
    a = ref.audit_long_context(s, 1, 2049, 200.0, 100.0)
    assert a["k_first_clipped"] == 0 and a["k_clipped_tokens"] == 1


def test_demo_stream_numbers():
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("fp8kv_examples", ROOT / "exercises" / "fp8-kv-cache" / "examples.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    a = ref.audit_long_context(ex.DemoStream(), 0, 2048, 200.0, 100.0)
    assert round(a["v_scale"], 4) == 0.0358
    assert (a["v_first_clipped"], a["v_clipped_tokens"], a["k_first_clipped"], a["k_clipped_tokens"]) == (6000, 1, None, 0)
    b = ref.audit_long_context(ex.DemoStream(), 0, 2048, 448.0, 448.0)
    assert (b["k_first_clipped"], b["k_clipped_tokens"], b["v_first_clipped"], b["v_clipped_tokens"]) == (2264, 2, 2233, 11)
