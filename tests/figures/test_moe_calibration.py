"""Every figure of the moe-calibration statement and editorial, computed by the reference; the
editorial's GPTQ-vs-RTN picture is regenerated here and must match."""

import functools
import math
from pathlib import Path

import pytest
import torch

from inferprep import specs
from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "moe_calibration.py", "ref_moe_calibration")
EDITORIAL = ROOT / "exercises" / "moe-calibration" / "editorial.md"
D_IN, D_OUT, DRAWS = 64, 128, 3
GRID = [0, 1, 4, 8, 16, 32, 48, 64, 96, 128, 256, 1024]
DAMPS = (0.01, 0.1, 1.0)


def zipf(e, alpha):
    pi = [(r + 1) ** -alpha for r in range(e)]
    s = math.fsum(pi)
    return [p / s for p in pi]


@functools.lru_cache(maxsize=None)
def setup():
    """A synthetic expert: inputs with a decaying covariance spectrum (1 to 0.01), random weights;
    generic tokens with the same spectrum along other directions."""
    g = torch.Generator().manual_seed(0)
    U, _ = torch.linalg.qr(torch.randn(D_IN, D_IN, generator=g, dtype=torch.float64))
    A = U * torch.logspace(0, -2, D_IN, dtype=torch.float64).sqrt()
    W = torch.randn(D_OUT, D_IN, generator=g, dtype=torch.float64) / math.sqrt(D_IN)
    X_test = torch.randn(4096, D_IN, generator=g, dtype=torch.float64) @ A.T
    X_calib = torch.randn(DRAWS, GRID[-1], D_IN, generator=g, dtype=torch.float64) @ A.T
    V, _ = torch.linalg.qr(torch.randn(D_IN, D_IN, generator=g, dtype=torch.float64))
    A_generic = V * torch.logspace(0, -2, D_IN, dtype=torch.float64).sqrt()
    X_generic = torch.randn(4096, D_IN, generator=g, dtype=torch.float64) @ A_generic.T
    return W, X_calib, X_test, X_generic


@functools.lru_cache(maxsize=None)
def curves():
    W, X_calib, X_test, _ = setup()
    return {damp: ref.gptq_vs_rtn(W, X_calib, X_test, GRID, 4, damp) for damp in DAMPS}


def calibration_svg() -> str:
    """Mean relative output error against calibration tokens per input dimension (log x)."""
    W_, H, L, R, T, B = 560, 300, 60, 120, 20, 40
    xmin, xmax = math.log10(1 / 64), math.log10(16)
    ymin, ymax = 0.06, 0.12

    def px(n):
        return L + (math.log10(n / D_IN) - xmin) / (xmax - xmin) * (W_ - L - R)

    def py(v):
        return T + (ymax - v) / (ymax - ymin) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W_}" height="{H}" '
           f'viewBox="0 0 {W_} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W_ - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for r in (1 / 64, 1 / 16, 1 / 4, 1, 4, 16):
        lab = f"1/{round(1 / r)}" if r < 1 else f"{round(r)}"
        out.append(f'<text x="{px(r * D_IN):.1f}" y="{H - B + 14}" text-anchor="middle">{lab}</text>')
    for v in (0.06, 0.08, 0.10, 0.12):
        out.append(f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        out.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W_ - R}" y2="{py(v):.1f}" stroke="#eee"/>')
    out.append(f'<line x1="{px(D_IN):.1f}" y1="{T}" x2="{px(D_IN):.1f}" y2="{H - B}" stroke="#bbb" '
               'stroke-dasharray="4,3"/>')
    out.append(f'<text x="{(L + W_ - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'calibration tokens per input dimension (n / d_in, d_in = 64)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">relative output error (4-bit)</text>')
    c = curves()
    rtn = c[DAMPS[0]]["rtn_error"]
    out.append(f'<line x1="{L}" y1="{py(rtn):.1f}" x2="{W_ - R}" y2="{py(rtn):.1f}" stroke="#000" '
               'stroke-width="2" stroke-dasharray="6,3"/>')
    out.append(f'<text x="{W_ - R + 6}" y="{py(rtn) + 4:.1f}">RTN</text>')
    for damp, color in zip(DAMPS, ("#d62728", "#1f77b4", "#2ca02c")):
        pts = [(n, e) for n, e in zip(GRID, c[damp]["gptq_errors"]) if n > 0]
        path = " ".join(f"{px(n):.1f},{py(e):.1f}" for n, e in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{W_ - R + 6}" y="{py(pts[-1][1]) + 4 + (10 if damp == 1.0 else 0):.1f}" '
                   f'fill="{color}">GPTQ damp {damp:g}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == calibration_svg(), "regenerate the SVG: print(calibration_svg())"


def test_statement_examples():
    e = ref.expected_tokens([1 / 256] * 256, 262144, 8)
    assert e["expected"][0] == pytest.approx(8192.0, rel=1e-12)
    assert ref.rtn_quantize(torch.tensor([[-3., 12., 2.5, 0.5, -1.5, 7.5, 0., 4.5]]), 4).tolist() == \
        [[-3., 12., 2., 0., -2., 8., 0., 4.]]
    W = torch.tensor([[-3.0, 12.0, 0.375, 1.25]], dtype=torch.float64)
    X = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]], dtype=torch.float64)
    assert ref.gptq_quantize(W, X, 4).tolist() == [[-3.0, 12.0, 0.0, 2.0]]
    assert ref.rtn_quantize(W, 4).tolist() == [[-3.0, 12.0, 0.0, 1.0]]


def test_tokens_per_expert():
    n, k = 128 * 2048, 8
    ds3 = specs.DEEPSEEK_V3
    assert (ds3.hidden_size, ds3.moe_ffn_size, ds3.n_routed_experts, ds3.experts_per_token) == (7168, 2048, 256, 8)
    assert n == 262144 and n * k // 256 == 8192
    z = ref.expected_tokens(zipf(256, 0.8), n, k)["expected"]
    s = sorted(z)
    assert round(max(z)) == 195529 and round((s[127] + s[128]) / 2) == 4019 and round(min(z)) == 2315
    assert sum(c < 7168 for c in z) == 194 and sum(c < 2048 for c in z) == 0
    z6 = ref.expected_tokens(zipf(256, 0.6), n, k)["expected"]
    assert round(max(z6)) == 99678 and sum(c < 7168 for c in z6) == 176 and round(min(z6)) == 3578
    assert 8 / sum((r + 1) ** -1.2 for r in range(256)) > 1          # Zipf 1.2 with top-8: impossible
    share = [1e-5 / 8] + [(1 - 1e-5 / 8) / 255] * 255
    r = ref.expected_tokens(share, n, k)
    assert round(r["expected"][0], 2) == 2.62 and round(r["p_zero"][0], 4) == 0.0727
    r4 = ref.expected_tokens([1e-4 / 8] + [(1 - 1e-4 / 8) / 255] * 255, n, k)
    assert round(r4["expected"][0], 1) == 26.2 and f"{r4['p_zero'][0]:.2e}" == "4.12e-12"


def test_crossover_table():
    c = curves()
    rtn = c[0.01]["rtn_error"]
    assert round(rtn, 4) == 0.0909
    assert [round(e, 4) for e in c[0.01]["gptq_errors"]] == \
        [0.0909, 0.0982, 0.1058, 0.1074, 0.1141, 0.1075, 0.0974, 0.0857, 0.0765, 0.0735, 0.0692, 0.0664]
    assert [c[d]["crossover"] for d in DAMPS] == [64, 32, 16]
    assert round(c[1.0]["gptq_errors"][-1], 4) == 0.0735 and round(c[0.1]["gptq_errors"][-1], 4) == 0.0673
    assert round(max(c[0.01]["gptq_errors"]) / rtn, 2) == 1.26


def test_recipes():
    W, X_calib, X_test, X_generic = setup()
    err = ref._rel_err
    rtn = err(W, ref.rtn_quantize(W, 4), X_test)
    routed8 = err(W, ref.gptq_quantize(W, X_calib[0, :8], 4), X_test)
    generic = err(W, ref.gptq_quantize(W, X_generic, 4), X_test)
    both = err(W, ref.gptq_quantize(W, torch.cat([X_generic, X_calib[0, :8]]), 4), X_test)
    targeted = err(W, ref.gptq_quantize(W, X_calib[0, :256], 4), X_test)
    assert [round(v, 4) for v in (rtn, routed8, generic, both, targeted)] == RECIPES
    zeroed = err(W, torch.zeros_like(W), X_test)
    assert zeroed == 1.0


RECIPES = [0.0909, 0.1064, 0.118, 0.1176, 0.0687]


def test_identity_hessian_is_rtn_and_scale_of_h_is_irrelevant():
    W, X_calib, _, _ = setup()
    assert torch.equal(ref.gptq_quantize(W, torch.eye(D_IN, dtype=torch.float64), 4), ref.rtn_quantize(W, 4))
    X = X_calib[0, :100]
    a = ref.gptq_quantize(W, X, 4)
    b = ref.gptq_quantize(W, 3.0 * X, 4)            # H scaled by 9: same grid decisions
    assert float((a - b).abs().max()) < 1e-12
    c = ref.gptq_quantize(W, X, 4, blocksize=8)
    assert float((a - c).abs().max()) < 1e-12
