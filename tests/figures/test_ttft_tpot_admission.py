"""Every figure of the ttft-tpot-admission statement and editorial, computed by the reference;
the editorial's picture (projected TTFT against the queue ahead, per TPOT target) is regenerated
here and must match."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "ttft_tpot_admission.py", "ref_ttft_tpot_admission")
EDITORIAL = ROOT / "exercises" / "ttft-tpot-admission" / "editorial.md"
SM = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.40, mbu=0.80, t_fixed_s=0.003)
D64 = [2048] * 64


def test_fast_step_is_step_s():
    """The reference's decoder-sum shortcut gives StepModel.step_s bit for bit."""
    b = ref._Batch(SM, [17, 2048, 99_999, 1])
    for q, c, r in ((1, 0, 1), (966, 0, 1), (334, 100_000, 0), (5000, 7, 1)):
        assert b.step(q, c, r) == SM.step_s([(1, 17, 1), (1, 2048, 1), (1, 99_999, 1), (1, 1, 1), (q, c, r)])
    assert ref._Batch(SM, []).step(10, 5, 1) == SM.step_s([(10, 5, 1)])


def test_decode_step_and_chunk_table():
    assert round(1e3 * SM.step_s([(1, 2048, 1)] * 64), 2) == 11.49
    table = {tau: [ref.max_chunk(SM, tau, D64, p) for p in (0, 8192, 32768, 100_000)]
             for tau in (0.02, 0.03, 0.05, 0.1)}
    assert table == {0.02: [281, 243, 172, 96], 0.03: [510, 441, 314, 175],
                     0.05: [966, 837, 597, 334], 0.1: [2090, 1815, 1300, 729]}


@pytest.mark.parametrize("tau, rate, fit", [(0.02, 14_052, 9), (0.03, 17_014, 11), (0.05, 19_331, 13),
                                            (0.1, 20_901, 15)])
def test_rates_and_backlog(tau, rate, fit):
    c = ref.max_chunk(SM, tau, D64, 0)
    assert round(c / SM.step_s([(1, 2048, 1)] * 64 + [(c, 0, 0)])) == rate
    f = ref.prefill_finish_times(SM, tau, D64, [2048] * 40)
    assert sum(1 for x in f if x <= 1.5) == fit and f[fit - 1] <= 1.5 < f[fit]


def test_compute_roof():
    assert round(SM.flops_per_s / (2 * SM.body_params)) == 23_127


def test_statement_example():
    lone = {P: ref.prefill_finish_times(SM, 0.05, D64, [P])[0] for P in (1024, 8192, 32768, 60_000)}
    assert [round(lone[P], 3) for P in (1024, 8192, 32768, 60_000)] == [0.062, 0.462, 2.213, 4.843]
    assert round(lone[32768] / lone[8192], 1) == 4.8
    a = ref.admit(SM, 0.05, 1.5, D64, [2048] * 10, 2048)
    assert (a["decision"], round(a["projected_ttft_s"], 3)) == ("admit", 1.251)
    b = ref.admit(SM, 0.05, 1.5, D64, [2048] * 30, 2048)
    assert (b["decision"], b["remedy"], round(b["projected_ttft_s"], 3), round(b["retry_after_s"], 3)) == \
        ("backlog", "retry_after", 3.526, 2.026)
    c = ref.admit(SM, 0.05, 1.5, D64, [32768], 2048)
    assert (c["decision"], round(c["projected_ttft_s"], 3)) == ("backlog", 2.327)
    d = ref.admit(SM, 0.05, 1.5, D64, [], 40_000)
    assert (d["decision"], d["remedy"], round(d["projected_ttft_s"], 3)) == ("too_long", "prefill_pool", 2.837)
    e = ref.admit(SM, 0.05, 1.5, D64, [], 100_000)
    assert (e["decision"], round(e["projected_ttft_s"], 2)) == ("too_long", 10.03)
    assert ref.admit(SM, 0.05, 1.5, D64, [], 2048)["projected_ttft_s"] == pytest.approx(0.11373617347699827, rel=1e-12)


def test_routing_story():
    route = [[[8192] * 200, [2048] * 2], [[2048] * 16, [2048] * 6], [[], [2048] * 10]]
    proj = [ref.prefill_finish_times(SM, 0.05, d, q + [2048])[-1] for d, q in route]
    assert [round(x, 2) for x in proj] == [1.04, 0.69, 1.06]
    assert ref.max_chunk(SM, 0.05, [8192] * 200, 0) == 303
    out = ref.admit(SM, 0.05, 1.5, D64, [2048] * 30, 2048, route)
    assert (out["remedy"], out["replica"]) == ("route_to_replica", 1)
    assert ref.admit(SM, 0.011, 1.5, D64, [], 1024)["decision"] == "saturated"


def ttft_svg() -> str:
    """Projected TTFT of a 2,048-token prompt against the 2,048-token prompts queued ahead."""
    W, H, L, R, T, B = 560, 280, 56, 110, 20, 40
    nmax, ymax = 30, 4.0

    def px(n):
        return L + n / nmax * (W - L - R)

    def py(t):
        return T + (1 - t / ymax) * (H - T - B)

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="11">',
         f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for t in range(0, 5):
        o.append(f'<text x="{L - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{t} s</text>')
    for n in range(0, nmax + 1, 5):
        o.append(f'<text x="{px(n):.1f}" y="{H - B + 14}" text-anchor="middle">{n * 2048 // 1024}K</text>')
    o.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">prompt tokens queued ahead '
             '(2,048-token prompts)</text>')
    o.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
             f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">projected TTFT</text>')
    o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(1.5):.1f}" y2="{py(1.5):.1f}" stroke="#d62728" '
             'stroke-dasharray="5,3"/>')
    o.append(f'<text x="{W - R + 4}" y="{py(1.5) + 4:.1f}" fill="#d62728">TTFT target 1.5 s</text>')
    for tau, color in ((0.02, "#9467bd"), (0.05, "#1f77b4"), (0.1, "#2ca02c")):
        f = ref.prefill_finish_times(SM, tau, D64, [2048] * (nmax + 1))
        pts = " ".join(f"{px(n):.1f},{py(min(x, ymax)):.1f}" for n, x in enumerate(f))
        o.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        fit = sum(1 for x in f if x <= 1.5)
        o.append(f'<circle cx="{px(fit - 1):.1f}" cy="{py(f[fit - 1]):.1f}" r="3.5" fill="{color}"/>')
        last = min(range(nmax + 1), key=lambda n: abs(f[n] - ymax)) if f[-1] > ymax else nmax
        o.append(f'<text x="{W - R + 4}" y="{py(min(f[last], ymax)) + 4:.1f}" '
                 f'fill="{color}">TPOT {int(tau * 1e3)} ms</text>' if last == nmax else
                 f'<text x="{px(last) + 4:.1f}" y="{py(ymax) + 12:.1f}" fill="{color}">TPOT {int(tau * 1e3)} ms</text>')
    o.append("</svg>")
    return "\n".join(o)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == ttft_svg(), "regenerate the SVG: python tests/figures/test_ttft_tpot_admission.py"


if __name__ == "__main__":
    print(ttft_svg())
