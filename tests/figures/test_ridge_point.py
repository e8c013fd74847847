"""Every figure of the ridge-point statement and editorial, computed by the reference; the
editorial's roofline picture is regenerated here from the reference and must match."""

import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "ridge_point.py", "ref_ridge_point")
EDITORIAL = ROOT / "exercises" / "ridge-point" / "editorial.md"


def roofline_svg() -> str:
    """A log-log roofline of H100 and H200 (BF16) with decode GEMM operating points."""
    W, H, L, R, T, B = 560, 300, 60, 20, 20, 40
    xmin, xmax, ymin, ymax = 0.0, 3.0, 12.0, 15.3          # log10 FLOP/byte, log10 FLOP/s

    def px(i):
        return L + (math.log10(i) - xmin) / (xmax - xmin) * (W - L - R)

    def py(f):
        return T + (ymax - math.log10(f)) / (ymax - ymin) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for e in range(0, 4):
        x = px(10 ** e)
        out.append(f'<text x="{x:.1f}" y="{H - B + 14}" text-anchor="middle">{10 ** e}</text>')
    for e in range(12, 16):
        y = py(10 ** e)
        out.append(f'<text x="{L - 4}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'arithmetic intensity (FLOP/byte)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">attainable FLOP/s</text>')
    for gpu, color in ((specs.H100_SXM, "#1f77b4"), (specs.H200_SXM, "#d62728")):
        ridge = ref.ridge_point(gpu, DType.BF16)
        peak = gpu.bf16_dense_flops
        pts = [(1.0, gpu.hbm_bytes_per_s), (ridge, peak), (10 ** xmax, peak)]
        path = " ".join(f"{px(i):.1f},{py(f):.1f}" for i, f in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{px(ridge) + 4:.1f}" y="{py(peak) - 6 + (12 if gpu is specs.H200_SXM else 0):.1f}" '
                   f'fill="{color}">{gpu.name} ridge {ridge:.0f}</text>')
    for b in (1, 8, 64, 296):
        i = ref.decode_gemm_intensity(b, DType.BF16)
        f = ref.roofline(specs.H100_SXM, DType.BF16, i)["attainable_flops"]
        out.append(f'<circle cx="{px(i):.1f}" cy="{py(f):.1f}" r="4" fill="#1f77b4"/>')
        out.append(f'<text x="{px(i) + 6:.1f}" y="{py(f) + 14:.1f}">b={b}</text>')
    i = ref.decode_gemm_intensity(74, DType.INT4)
    f = ref.roofline(specs.H100_SXM, DType.BF16, i)["attainable_flops"]
    out.append(f'<circle cx="{px(i):.1f}" cy="{py(f):.1f}" r="4" fill="none" stroke="#2ca02c" '
               'stroke-width="2"/>')
    out.append(f'<text x="{px(i) - 6:.1f}" y="{py(f) - 8:.1f}" text-anchor="end" fill="#2ca02c">'
               'INT4 b=74</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == roofline_svg(), "regenerate the SVG: print(roofline_svg())"


def test_ridges():
    r = {g.name: ref.ridge_point(g, DType.BF16) for g in specs.GPUS.values()}
    assert round(r["H100 SXM"], 1) == 295.3
    assert round(r["H200 SXM"], 1) == 206.1
    assert round(r["B200"], 1) == 292.2
    assert round(r["A100 SXM 80GB"], 1) == 153.0
    assert round(ref.ridge_point(specs.H100_SXM, DType.FP8), 1) == 590.7
    assert round(ref.ridge_point(specs.H200_SXM, DType.FP8), 1) == 412.3
    assert round(ref.ridge_point(specs.B200, DType.FP8), 1) == 584.4
    assert ref.ridge_point(specs.H100_SXM, DType.BF16) == pytest.approx(295.3432835820896, rel=1e-12)


@pytest.mark.parametrize("gpu, bf16, fp8w, int4w, fp8fp8", [
    (specs.H100_SXM, 296, 148, 74, 296),
    (specs.H200_SXM, 207, 104, 52, 207),
    (specs.B200, 293, 147, 74, 293),
    (specs.A100_SXM_80GB, 154, 77, 39, None),
])
def test_batches(gpu, bf16, fp8w, int4w, fp8fp8):
    assert ref.compute_bound_batch(gpu, DType.BF16, DType.BF16) == bf16
    assert ref.compute_bound_batch(gpu, DType.FP8, DType.BF16) == fp8w
    assert ref.compute_bound_batch(gpu, DType.INT4, DType.BF16) == int4w
    if fp8fp8:
        assert ref.compute_bound_batch(gpu, DType.FP8, DType.FP8) == fp8fp8


def test_unit_slips():
    # sparse headline = 2x dense; TiB/s instead of TB/s shrinks the ridge by ~9%
    assert round(2 * specs.H100_SXM.bf16_dense_flops / 1e12) == 1979
    assert round(100 * (1 - 1e12 / 2**40)) == 9


def test_example_points():
    r = ref.roofline(specs.H100_SXM, DType.BF16, 64.0)
    assert r["attainable_flops"] == pytest.approx(214.4e12, rel=1e-12) and r["bound"] == "memory"
    # batch 1: 1 FLOP/byte -> 3.35 TFLOP/s, 0.34% of peak
    r1 = ref.roofline(specs.H100_SXM, DType.BF16, ref.decode_gemm_intensity(1, DType.BF16))
    assert round(r1["attainable_flops"] / 1e12, 1) == 3.4
    assert round(100 * r1["attainable_flops"] / specs.H100_SXM.bf16_dense_flops, 2) == 0.34
    r8 = ref.roofline(specs.H100_SXM, DType.BF16, ref.decode_gemm_intensity(8, DType.BF16))
    assert round(r8["attainable_flops"] / 1e12, 1) == 26.8
    # H100 -> H200 speedup at a memory-bound batch vs at the compute roof
    assert round(specs.H200_SXM.hbm_bytes_per_s / specs.H100_SXM.hbm_bytes_per_s, 2) == 1.43


if __name__ == "__main__":
    print(roofline_svg())
