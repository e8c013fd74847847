"""Every figure of the canary-sizing statement and editorial, computed by the reference; the
editorial's picture (power against canary requests) is regenerated here and must match."""

import math
from pathlib import Path

import pytest

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "canary_sizing.py", "ref_canary_sizing")
EDITORIAL = ROOT / "exercises" / "canary-sizing" / "editorial.md"
A, PW = 0.05, 0.8
CURVES = (  # label, power(n), required n, colour
    ("error 0.5%->0.75%, k=1", lambda n: ref.power_proportion(n, 0.005, 0.0025, A), 12287, "#1f77b4"),
    ("error 0.5%->0.75%, k=19", lambda n: ref.power_proportion(n, 0.005, 0.0025, A, k=19.0), 6046, "#d62728"),
    ("mean TTFT cv 1, +5%, k=1", lambda n: ref.power_mean(n, 1.0, 0.05, A), 4947, "#2ca02c"),
)


def power_svg() -> str:
    """Power against canary requests (log axis, 100 to 100,000) with the 0.8 target."""
    W, H, L, R, T, B = 560, 300, 50, 20, 20, 40
    xmin, xmax = 2.0, 5.0

    def px(n):
        return L + (math.log10(n) - xmin) / (xmax - xmin) * (W - L - R)

    def py(p):
        return T + (1 - p) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for e in range(2, 6):
        out.append(f'<text x="{px(10 ** e):.1f}" y="{H - B + 14}" text-anchor="middle">{10 ** e:,}</text>')
    for k in range(0, 11, 2):
        out.append(f'<text x="{L - 4}" y="{py(k / 10) + 4:.1f}" text-anchor="end">{k / 10:.1f}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'canary requests n (log scale)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">power (alpha 0.05, one-sided)</text>')
    out.append(f'<line x1="{L}" y1="{py(PW):.1f}" x2="{W - R}" y2="{py(PW):.1f}" stroke="#555" '
               'stroke-dasharray="5,4"/>')
    out.append(f'<text x="{L + 4}" y="{py(PW) - 5:.1f}" fill="#555">power 0.8</text>')
    for i, (label, power, n_req, color) in enumerate(CURVES):
        pts = []
        for j in range(0, 121):
            n = round(10 ** (xmin + j * (xmax - xmin) / 120))
            pts.append(f"{px(n):.1f},{py(power(n)):.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<circle cx="{px(n_req):.1f}" cy="{py(power(n_req)):.1f}" r="4" fill="{color}"/>')
        out.append(f'<text x="{W - R - 6}" y="{py(0.3) + 16 * i:.1f}" text-anchor="end" fill="{color}">'
                   f'{label}: n = {n_req:,}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == power_svg(), "regenerate the SVG: print(power_svg())"


def test_picture_dots_are_the_required_sizes():
    assert ref.n_proportion(0.005, 0.0025, A, PW) == 12287
    assert ref.n_proportion(0.005, 0.0025, A, PW, k=19.0) == 6046
    assert ref.n_mean(1.0, 0.05, A, PW) == 4947


def test_statement_example():
    assert ref.power_proportion(12287, 0.005, 0.0025, A) == pytest.approx(0.8000060591966883, abs=1e-12)
    assert round(ref.power_proportion(12287, 0.005, 0.0025, A), 7) == 0.8000061
    assert round(ref.power_proportion(12286, 0.005, 0.0025, A), 5) == 0.79998
    st = ref.rollout([0.05], 200.0, 0.005, 0.0025, A, PW, control="rest")
    assert st[0]["n_canary"] == 6046 and round(st[0]["minutes"], 2) == 10.08
    assert st[0]["minutes"] == pytest.approx(10.076666666666666, rel=1e-12)


def test_sizes():
    assert ref.n_proportion(0.005, 0.0025, 0.01, PW) == 19946
    assert ref.n_proportion(0.01, 0.005, A, PW) == 6105
    assert ref.n_mean(1.0, 0.05, A, PW, k=19.0) == 2604
    assert ref.n_mean(0.5, 0.05, A, PW) == 1237
    # tail latency as an exceedance rate: share above the control's p99, 1% -> 1.5% and 1% -> 1.2%
    assert ref.n_proportion(0.01, 0.005, A, PW) == 6105
    assert ref.n_proportion(0.01, 0.002, A, PW) == 33629
    assert round(ref.power_mean(4947, 1.0, 0.05, A), 4) == 0.8001
    assert round(ref.power_mean(4946, 1.0, 0.05, A), 5) == 0.80000     # 0.7999968 < 0.8
    assert ref.power_mean(4946, 1.0, 0.05, A) < 0.8


def test_slips():
    # two-sided is the one-sided test at alpha/2
    assert ref.n_proportion(0.005, 0.0025, 0.025, PW) == 15599
    # table z values (1.645 + 0.842)^2 inflate n by 0.04%: 12,287 -> 12,292
    za, zb = ref._N.inv_cdf(0.95), ref._N.inv_cdf(0.8)
    assert round(100 * ((1.645 + 0.842) ** 2 / (za + zb) ** 2 - 1), 2) == 0.04
    p1, p0 = 0.0075, 0.005
    sd0, sd1 = ref._proportion_sds(p0, 0.0025, 1.0)
    assert math.ceil((1.645 * sd0 + 0.842 * sd1) ** 2 / 0.0025**2) == 12292
    # unpooled H0 variance: 12,285
    unpooled = ((za + zb) * math.sqrt(p1 * (1 - p1) + p0 * (1 - p0))) ** 2 / 0.0025**2
    assert math.ceil(unpooled) == 12285
    # clustered requests: design effect 1.45; rounding once vs twice
    assert ref.design_effect(10, 0.05) == pytest.approx(1.45, rel=1e-12)
    assert ref.n_proportion(0.005, 0.0025, A, PW, deff=1.45) == 17816
    assert math.ceil(1.45 * 12287) == 17817


def test_rollout():
    rest = ref.rollout([0.01, 0.05, 0.25], 200.0, 0.005, 0.0025, A, PW, control="rest")
    assert [s["n_canary"] for s in rest] == [5761, 6046, 7910]
    assert [round(s["k"], 6) for s in rest] == [99, 19, 3]
    assert [round(s["minutes"], 1) for s in rest] == [48.0, 10.1, 2.6]
    assert [round(s["extra_failures"], 1) for s in rest] == [14.4, 15.1, 19.8]
    base = ref.rollout([0.01, 0.05, 0.25], 200.0, 0.005, 0.0025, A, PW)
    assert [s["n_canary"] for s in base] == [12287] * 3
    assert [round(s["minutes"], 1) for s in base] == [102.4, 20.5, 4.1]
    assert round(base[0]["extra_failures"], 1) == 30.7
    # the notes' reading: one verdict size (k = 19) for every stage
    assert [round(6046 / (f * 200) / 60, 1) for f in (0.01, 0.05, 0.25)] == [50.4, 10.1, 2.0]


if __name__ == "__main__":
    print(power_svg())
