"""Every figure of the utilization-target statement and editorial, computed by the reference; the
editorial's picture (p99 TTFT against utilization) is regenerated here and must match. The
simulation figures come from a seeded Lindley recursion (the formula is an approximation)."""

import math
import random
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "utilization_target.py", "ref_utilization_target")
EDITORIAL = ROOT / "exercises" / "utilization-target" / "editorial.md"
S, T = 0.25, 2.0
CURVES = ((0.0, "#1f77b4"), (0.5, "#2ca02c"), (0.81, "#d62728"), (1.0, "#9467bd"), (2.0, "#8c564b"))


def ttft_svg() -> str:
    """p99 TTFT (s) against utilization for S = 0.25 s and several cs2, with the 2 s target."""
    W, H, L, R, TOP, B = 560, 320, 50, 110, 20, 40
    ymax = 4.0

    def px(r):
        return L + r * (W - L - R)

    def py(t):
        return TOP + (ymax - t) / ymax * (H - TOP - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{TOP}" width="{W - L - R}" height="{H - TOP - B}" fill="none" stroke="#999"/>']
    for k in range(0, 11, 2):
        out.append(f'<text x="{px(k / 10):.1f}" y="{H - B + 14}" text-anchor="middle">{k / 10:.1f}</text>')
    for t in range(0, 5):
        out.append(f'<text x="{L - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{t}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">utilization rho</text>')
    out.append(f'<text x="14" y="{(TOP + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(TOP + H - B) / 2:.0f})">p99 TTFT (s), S = 0.25 s</text>')
    out.append(f'<line x1="{L}" y1="{py(T):.1f}" x2="{W - R}" y2="{py(T):.1f}" stroke="#555" '
               'stroke-dasharray="5,4"/>')
    out.append(f'<text x="{L + 4}" y="{py(T) - 5:.1f}" fill="#555">target 2.0 s</text>')
    for i, (cs2, color) in enumerate(CURVES):
        pts = []
        for k in range(0, 200):
            r = k / 200
            t = ref.ttft_quantile(r, S, cs2)
            if t > ymax:
                break
            pts.append(f"{px(r):.1f},{py(t):.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" stroke-width="2"/>')
        r = ref.max_utilization(S, cs2, T)
        out.append(f'<circle cx="{px(r):.1f}" cy="{py(T):.1f}" r="4" fill="{color}"/>')
        out.append(f'<text x="{W - R + 8}" y="{TOP + 14 + 16 * i}" fill="{color}">'
                   f'cs2 {cs2:g}: {100 * r:.1f}%</text>')
    out.append("</svg>")
    return "\n".join(out)


def simulate_p99_ttft(rho, sampler, mean_s, n=400_000, seed=1, p=0.99):
    """Lindley recursion W' = max(0, W + S - A) for FCFS M/G/1; TTFT = W + own S; 10% warm-up."""
    rng = random.Random(seed)
    lam = rho / mean_s
    w, out = 0.0, []
    for _ in range(n):
        s = sampler(rng)
        out.append(w + s)
        w = max(0.0, w + s - (-math.log(1.0 - rng.random()) / lam))
    out = sorted(out[n // 10:])
    return out[int(p * len(out))]


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == ttft_svg(), "regenerate the SVG: print(ttft_svg())"


def test_statement_example():
    assert ref.max_utilization(S, 0.0, T) == pytest.approx(0.6968574449801913, rel=1e-12)
    m = ref.prefill_moments(0.025, 5e-5, 4500, 4500**2)
    assert m["mean_s"] == pytest.approx(0.25, rel=1e-12) and m["cs2"] == pytest.approx(0.81, rel=1e-12)
    assert ref.max_utilization(S, 0.81, T) == pytest.approx(0.49542081353214107, rel=1e-12)
    assert ref.ttft_quantile(0.5, S, 0.0) == pytest.approx(0.25 + 0.25 * math.log(50), rel=1e-12)
    assert round(ref.ttft_quantile(0.5, S, 0.0), 10) == 1.2280057514
    assert ref.max_utilization(S, 0.5, T, p=0.95) == pytest.approx(0.7149758164114555, rel=1e-12)
    assert ref.engine_violations(["continuous_batching", "network_rtt"]) == {
        "continuous_batching": "one_in_service", "network_rtt": "none"}


def test_the_questions_numbers():
    # 70%: T/S = 8, deterministic prefill.
    assert round(100 * ref.max_utilization(S, 0.0, T), 1) == 69.7
    assert ref.ttft_quantile(ref.max_utilization(S, 0.0, T), S, 0.0) == pytest.approx(T, rel=1e-12)
    # 50%: cs2 = 0.81 (exponential prompt lengths, 10% of the mean prefill fixed).
    assert round(100 * ref.max_utilization(S, 0.81, T), 1) == 49.5
    lo, hi = 0.0, 5.0                              # the cs2 that gives exactly 50%
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ref.max_utilization(S, mid, T) > 0.5 else (lo, mid)
    assert round(lo, 3) == 0.789
    # Four ways: the engine-side mechanisms break exactly four assumptions.
    engine = ["continuous_batching", "decode_interference", "prefix_cache_hits",
              "kv_admission_blocking", "recompute_preemption"]
    assert sorted(set(ref.engine_violations(engine).values())) == [
        "iid_service", "one_in_service", "run_to_completion", "work_conserving"]
    # S = 250 ms: a 5,400-token prompt on Llama 3.1 70B, TP8 H100, mfu 0.4, mbu 0.8, 3 ms fixed.
    sm = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.4, mbu=0.8, t_fixed_s=0.003)
    assert round(sm.step_s([(5400, 0, 1)]), 4) == 0.2486
    per_token = (sm.step_s([(8192, 0, 1)]) - sm.step_s([(1024, 0, 1)])) / 7168
    assert round(per_token * 1e6) == 47


def test_variance_table():
    got = {c: round(100 * ref.max_utilization(S, c, T), 1) for c in (0, 0.25, 0.5, 0.81, 1, 1.5, 2)}
    assert got == {0: 69.7, 0.25: 63.0, 0.5: 56.7, 0.81: 49.5, 1: 45.5, 1.5: 36.0, 2: 28.3}
    # lognormal(sigma = 1) prompts: cs2_L = e - 1; with 20% of the mean prefill fixed: cs2 1.100
    m = ref.prefill_moments(0.05, 0.2 / 1000, 1000, (math.e - 1) * 1000**2)
    assert m["mean_s"] == pytest.approx(S) and round(m["cs2"], 3) == 1.100
    assert round(100 * ref.max_utilization(S, m["cs2"], T), 1) == 43.4
    assert round(math.e - 1, 3) == 1.718


def test_only_the_ratio_matters():
    table = {r: (round(ref.max_utilization(1.0, 0.0, r), 3), round(ref.max_utilization(1.0, 1.0, r), 3))
             for r in (4, 8, 10, 20, 40)}
    assert table == {4: (0.390, 0.134), 8: (0.697, 0.455), 10: (0.759, 0.554), 20: (0.882, 0.771),
                     40: (0.942, 0.885)}
    assert ref.max_utilization(0.05, 0.3, 0.4) == pytest.approx(ref.max_utilization(3.0, 0.3, 24.0), rel=1e-12)


def test_mm1_reading():
    # M/M/1 sojourn is exponential: p99 = ln(100) S / (1 - rho) exactly.
    assert round(1 - math.log(100) * 0.13 / 2.0, 4) == 0.7007
    assert round(ref.max_utilization(0.13, 1.0, 2.0), 4) == 0.7042
    r1 = ref.max_utilization(S, 1.0, T)
    assert round(math.log(100) * S / (1 - r1), 3) == 2.111     # exact M/M/1 p99 at the formula's rho


def test_simulation_against_the_formula():
    r0 = ref.max_utilization(S, 0.0, T)
    md1 = simulate_p99_ttft(r0, lambda rng: S, S)
    r1 = ref.max_utilization(S, 1.0, T)
    mm1 = simulate_p99_ttft(r1, lambda rng: -math.log(1.0 - rng.random()) * S, S)
    r2 = ref.max_utilization(S, math.e - 1, T)
    mu = math.log(S) - 0.5                           # lognormal sigma 1 with mean S
    ln = simulate_p99_ttft(r2, lambda rng: math.exp(rng.gauss(mu, 1.0)), S)
    assert (round(r0, 3), round(r1, 3), round(r2, 3)) == (0.697, 0.455, 0.324)
    assert (round(md1, 2), round(mm1, 2), round(ln, 2)) == (1.82, 2.08, 2.65)
    assert [round(100 * (x / T - 1)) for x in (md1, mm1, ln)] == [-9, 4, 32]


if __name__ == "__main__":
    print(ttft_svg())
