"""Every figure of the continuous-batching-gain statement and editorial, computed by the
reference; the editorial's picture (gain vs batch for several length distributions) is
regenerated here and must match."""

import math
import random
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "continuous_batching_gain.py", "ref_continuous_batching_gain")
EDITORIAL = ROOT / "exercises" / "continuous-batching-gain" / "editorial.md"
TRACE = [3, 1, 4, 1, 5, 9, 2, 6]
S8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
S_SPEC = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)


def notes_traces(n=4096):
    """The worked traces of the spec notes (scripts/dm13_cb_gain.py): random.Random(3), drawn in
    this order; lengths are rounded and floored at 1."""
    rng = random.Random(3)
    d = {"exponential, mean 256": [max(1, round(-256 * math.log(1 - rng.random()))) for _ in range(n)],
         "lognormal(5, 1)": [max(1, round(math.exp(rng.gauss(5.0, 1.0)))) for _ in range(n)],
         "uniform 1..512": [rng.randint(1, 512) for _ in range(n)],
         "all 256": [256] * n}
    d["exponential capped at 512"] = [min(512, x) for x in d["exponential, mean 256"]]
    return d


TRACES = notes_traces()


def r2(x):
    return round(x, 2)


def test_statement_example():
    s = ref.schedule(TRACE, 2)
    assert len(s["static_active"]) == 22 and len(s["continuous_active"]) == 17
    assert sum(s["static_active"]) == sum(s["continuous_active"]) == 31
    assert ref.batching_gain(TRACE, 2, 1.0, 0.0)["gain"] == 22 / 17
    g = ref.batching_gain(TRACE, 2, 0.010, 0.002)
    assert (round(g["static_s"], 3), round(g["continuous_s"], 3), round(g["gain"], 3)) == (0.282, 0.232, 1.216)
    assert round(ref.length_statistic(TRACE, 2), 3) == 1.419
    assert round(ref.harmonic_gain(32), 3) == 4.058
    p = ref.token_budget_point(S8B, 8192)
    assert round(p["knee_tokens"], 2) == 198.48 and p["bound"] == "compute"
    assert round(p["gemm_s"], 4) == 0.2311
    floor = S8B.weight_bytes / S8B.bytes_per_s
    assert round(1e3 * floor, 2) == 5.60 and round(p["gemm_s"] / floor) == 41
    m = ref.step_model_gain(TRACE, 2, S8B, 4096)
    assert round(m["gain"], 3) == 1.281


def test_flat_step_table():
    want = {"exponential, mean 256": (4.02, 3.95), "lognormal(5, 1)": (5.66, 5.47),
            "uniform 1..512": (1.92, 1.90), "all 256": (1.00, 1.00),
            "exponential capped at 512": (2.32, 2.29)}
    for name, (stat, gain) in want.items():
        L = TRACES[name]
        assert (r2(ref.length_statistic(L, 32)), r2(ref.batching_gain(L, 32, 1.0, 0.0)["gain"])) == (stat, gain), name
    assert r2(ref.harmonic_gain(32)) == 4.06 and r2(math.log(32)) == 3.47
    assert r2(math.log(32) + 0.5772156649015329) == 4.04
    assert r2(2 * 32 / 33) == 1.94


def test_identity_and_knee_table():
    L = TRACES["exponential, mean 256"]
    r = ref.length_statistic(L, 32)
    rows = []
    for b_star in (8, 32, 128, 512):
        a, c = 0.010, 0.010 / b_star
        g = ref.batching_gain(L, 32, a, c)
        # exact identity: c is paid once per token in both schedules
        T = sum(L)
        assert g["gain"] == pytest.approx((a * g["static_steps"] + c * T) / (a * g["continuous_steps"] + c * T), rel=1e-12)
        formula = (r * b_star / 32 + 1) / (b_star / 32 + 1)
        rows.append((r2(g["gain"]), r2(formula)))
    assert rows == [(1.60, 1.60), (2.49, 2.51), (3.37, 3.42), (3.78, 3.84)]


def test_step_model_gain_table():
    L = TRACES["exponential, mean 256"]
    got = [(b, ctx, r2(ref.step_model_gain(L, b, S8B, ctx)["gain"]))
           for b in (32, 256) for ctx in (512, 4096, 32768)]
    assert got == [(32, 512, 3.67), (32, 4096, 2.61), (32, 32768, 1.39),
                   (256, 512, 2.89), (256, 4096, 1.54), (256, 32768, 1.08)]


def test_knees():
    assert round(ref.token_budget_point(S8B, 1)["knee_tokens"], 1) == 198.5
    assert round(ref.token_budget_point(S_SPEC, 1)["knee_tokens"], 1) == 224.9
    peak70 = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8)
    assert round(ref.token_budget_point(peak70, 1)["knee_tokens"], 1) == 299.9
    assert round(specs.H100_SXM.bf16_dense_flops / specs.H100_SXM.hbm_bytes_per_s, 1) == 295.3
    peak8 = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1)
    assert round(ref.token_budget_point(peak8, 1)["knee_tokens"], 1) == 317.6
    rows = []
    for budget in (512, 2048, 8192, 16384):
        p = ref.token_budget_point(S_SPEC, budget)
        floor = S_SPEC.weight_bytes / S_SPEC.bytes_per_s
        rows.append((budget, p["bound"], round(1e3 * p["gemm_s"], 1), r2(p["gemm_s"] / floor)))
    assert rows == [(512, "compute", 14.8, 2.28), (2048, "compute", 59.0, 9.11),
                    (8192, "compute", 236.1, 36.42), (16384, "compute", 472.3, 72.85)]
    assert round(1e3 * S_SPEC.weight_bytes / S_SPEC.bytes_per_s, 2) == 6.48
    p = ref.token_budget_point(S_SPEC, 128)
    assert p["bound"] == "memory" and r2(p["compute_utilization"]) == 0.57


# -- the picture ---------------------------------------------------------------------------

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SERIES = (("lognormal(5, 1)", "#9467bd", "lognormal(5, 1)"),
          ("exponential, mean 256", "#1f77b4", "exponential"),
          ("exponential capped at 512", "#2ca02c", "exp. capped 512"),
          ("uniform 1..512", "#ff7f0e", "uniform 1..512"), ("all 256", "#7f7f7f", "all equal"))


def gain_svg() -> str:
    """Flat-step gain (simulated) vs b on a log2 axis, one line per trace; H_b dashed."""
    W, H, L, R, T, B = 560, 320, 50, 170, 20, 40
    ymax = 8.0

    def px(b):
        return L + math.log2(b) / math.log2(BATCHES[-1]) * (W - L - R)

    def py(y):
        return T + (ymax - y) / (ymax - 1.0) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for b in BATCHES:
        out.append(f'<text x="{px(b):.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    for y in range(1, 9):
        out.append(f'<text x="{L - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{y}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">slots b (4,096 requests)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">gain, flat step</text>')
    hb = " ".join(f"{px(b):.1f},{py(ref.harmonic_gain(b)):.1f}" for b in BATCHES)
    out.append(f'<polyline points="{hb}" fill="none" stroke="#1f77b4" stroke-width="1.5" stroke-dasharray="5,4"/>')
    ylab = []
    for name, color, short in SERIES:
        pts = [(b, ref.batching_gain(TRACES[name], b, 1.0, 0.0)["gain"]) for b in BATCHES]
        path = " ".join(f"{px(b):.1f},{py(g):.1f}" for b, g in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        ylab.append((py(pts[-1][1]), f"{short}: {pts[-1][1]:.2f}", color))
    ylab.append((py(ref.harmonic_gain(256)), f"H_b, dashed: {ref.harmonic_gain(256):.2f}", "#1f77b4"))
    ylab.sort()
    last = -1e9
    for y, text, color in ylab:                           # keep the labels 13 px apart
        y = max(y + 4, last + 13)
        last = y
        out.append(f'<text x="{W - R + 6}" y="{y:.1f}" fill="{color}">{text}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == gain_svg(), "regenerate the SVG: print(gain_svg())"


def test_picture_numbers():
    g = {name: r2(ref.batching_gain(TRACES[name], 256, 1.0, 0.0)["gain"]) for name, _, _ in SERIES}
    assert g == {"lognormal(5, 1)": 6.83, "exponential, mean 256": 4.73,
                 "exponential capped at 512": 2.11, "uniform 1..512": 1.84, "all 256": 1.0}
    # the drain: with N / b = 16 groups the statistic stays above the simulated gain
    L = TRACES["exponential, mean 256"]
    assert (r2(ref.length_statistic(L, 256)), r2(ref.batching_gain(L, 256, 1.0, 0.0)["gain"])) == (6.00, 4.73)
    assert ref.batching_gain(L, 256, 1.0, 0.0)["continuous_steps"] == 5148
    assert math.ceil(sum(L) / 256) == 4060 and len(L) // 256 == 16 and max(L) == 2599
    assert r2(ref.harmonic_gain(256)) == 6.12


if __name__ == "__main__":
    print(gain_svg())
