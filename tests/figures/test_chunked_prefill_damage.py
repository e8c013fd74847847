"""Every figure of the chunked-prefill-damage statement and editorial, computed by the reference;
the editorial's picture (a decoder's inter-token gap over time) is regenerated here and must match."""

from __future__ import annotations

import math
import random
import statistics
from functools import lru_cache
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "chunked_prefill_damage.py", "ref_chunked_prefill_damage")
EDITORIAL = ROOT / "exercises" / "chunked-prefill-damage" / "editorial.md"


def s_serve(mfu: float = 0.40) -> StepModel:
    return StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=mfu, mbu=0.80, t_fixed_s=0.003)


def story(budget: int = 8192, mfu: float = 0.40) -> dict:
    """32 decoders at 1,024 tokens, a 100,000-token prompt at 0 s, a 1,024-token probe at 1 ms."""
    return ref.simulate_engine(s_serve(mfu), [[1024, 600]] * 32,
                               [[0.0, 100_000, 20], [0.001, 1024, 20]], budget, 1024)


def background_trace() -> list:
    """Poisson arrivals (2/s, 1,024-token prompts, 256-token outputs) for 25 s, generated with
    random.Random(11), plus the 100,000-token prompt (300 output tokens) at exactly 2 s."""
    rng, lam, a, trace = random.Random(11), 2.0, 0.0, []
    while True:
        a += -math.log(1.0 - rng.random()) / lam
        if a > 25.0:
            break
        trace.append([a, 1024, 256])
    return trace + [[2.0, 100_000, 300]]


@lru_cache(maxsize=1)
def background():
    trace = background_trace()
    out = ref.simulate_engine(s_serve(), [[1024, 2000]] * 32, trace, 8192, 1024)
    times = [s["start_s"] + s["duration_s"] for s in out["steps"] if any(i == 0 for i, _ in s["rows"])]
    gaps = [(a, b - a) for a, b in zip(times, times[1:])]      # (previous token time, gap) of decoder 0
    return trace, out, gaps


def test_statement_example():
    out = ref.simulate_engine(s_serve(), [[1000, 3], [3000, 2]], [[0.0, 20000, 2], [0.005, 500, 2]], 8192, 8)
    st = out["steps"]
    assert [s["rows"] for s in st] == [[[0, 1], [1, 1], [2, 8190]], [[0, 1], [1, 1], [2, 8190]],
                                       [[0, 1], [2, 3620], [3, 500]], [[2, 1], [3, 1]]]
    assert [round(1e3 * s["duration_s"], 2) for s in st] == [385.06, 440.60, 235.84, 9.80]
    assert [round(s["start_s"], 5) for s in st] == [0.0, 0.38506, 0.82565, 1.06149]
    r = out["requests"]
    assert round(r[3]["admitted_s"], 3) == 0.826 and round(r[3]["ttft_s"], 3) == 1.056
    assert r[1]["tokens"] == 2 and r[1]["finish_s"] == st[1]["start_s"] + st[1]["duration_s"]
    assert r[3]["ttft_s"] == pytest.approx(1.0564909032527792, rel=1e-12)


def test_story():
    out = story()
    chunk_steps = [s for s in out["steps"] if any(i == 32 and n > 1 for i, n in s["rows"])]
    assert [n for s in chunk_steps for i, n in s["rows"] if i == 32] == [8160] * 12 + [2080]
    assert [round(1e3 * s["duration_s"]) for s in chunk_steps] == \
        [385, 440, 496, 551, 606, 661, 716, 771, 826, 882, 937, 992, 310]
    assert round(1e3 * s_serve().decode_step_s([1025] * 32), 2) == 9.98
    w0, long_, probe = out["requests"][0], out["requests"][32], out["requests"][33]
    assert round(w0["max_gap_s"], 3) == 0.992
    assert round(long_["first_token_s"], 3) == 8.572
    assert round(probe["admitted_s"] - 0.001, 2) == 8.26 and round(probe["ttft_s"], 2) == 8.57
    assert [8160 + 32, 2080 + 1024 + 33] == [8192, 3137]          # the last step: chunk + probe + decoders
    assert chunk_steps[-1]["rows"][-1] == [33, 1024]


def test_chunk_step_terms():
    sm = s_serve()
    first = sm.breakdown([(1, 1024, 1)] * 32 + [(8160, 0, 0)])
    last_full = sm.breakdown([(1, 1024, 1)] * 32 + [(8160, 8160 * 11, 0)])
    assert first["gemm_s"] == last_full["gemm_s"] and round(1e3 * first["gemm_s"]) == 354
    assert first["gemm_bound"] == "compute"
    assert (round(1e3 * first["attention_s"]), round(1e3 * last_full["attention_s"])) == (28, 635)
    assert sm.bytes_per_s == 21.44e12


def test_story_mfu_039():
    out = story(mfu=0.39)
    assert round(out["requests"][33]["ttft_s"], 2) == 8.79 and round(out["requests"][0]["max_gap_s"], 3) == 1.017


@pytest.mark.parametrize("budget, steps, peak, ttft", [
    (2048, 50, 0.255, 8.76), (4096, 25, 0.502, 8.63), (8192, 13, 0.992, 8.57), (16384, 7, 1.930, 8.54)])
def test_budget_table(budget, steps, peak, ttft):
    out = story(budget)
    n = sum(1 for s in out["steps"] if any(i == 32 and k > 1 for i, k in s["rows"]))
    assert (n, round(out["requests"][0]["max_gap_s"], 3), round(out["requests"][33]["ttft_s"], 2)) == \
        (steps, peak, ttft)


def test_background():
    trace, out, gaps = background()
    long_ = out["requests"][-1]
    adm, first = long_["admitted_s"], long_["first_token_s"]
    before = [g for s, g in gaps if s < 2.0]
    after = [g for s, g in gaps if first <= s < first + 2]
    later = [g for s, g in gaps if first + 8 <= s < first + 10]
    assert round(1e3 * statistics.median(before), 2) == 10.07
    assert (round(adm, 3), round(first, 3)) == (2.010, 10.805)
    assert round(first - adm, 2) == 8.79
    locked = [(a, r) for (a, _, _), r in zip(trace[:-1], out["requests"][32:-1]) if adm <= a < first]
    assert len(locked) == 16
    assert round(max(r["admitted_s"] - a for a, r in locked), 2) == 7.96
    assert round(max(r["ttft_s"] for _, r in locked), 2) == 8.49
    assert round(1e3 * max(after), 1) == 362.9
    assert round(1e3 * statistics.median(after), 2) == 12.09
    assert round(100 * (statistics.median(after) / statistics.median(before) - 1)) == 20
    assert round(1e3 * statistics.median(later), 2) == 10.45
    sm = s_serve()
    assert round(1e3 * 100_000 * sm.kv_bytes_per_token / sm.bytes_per_s, 2) == 1.53
    assert sm.kv_bytes_per_token == 327_680


def gap_svg() -> str:
    """Decoder 0's inter-token gap (log scale) against time in the background scenario."""
    trace, out, gaps = background()
    long_ = out["requests"][-1]
    W, H, L, R, T, B = 600, 280, 60, 20, 20, 40
    x0, x1, y0, y1 = 0.0, 16.0, math.log10(0.005), math.log10(2.0)

    def px(t):
        return L + (t - x0) / (x1 - x0) * (W - L - R)

    def py(g):
        return T + (y1 - math.log10(g)) / (y1 - y0) * (H - T - B)

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="11">',
         f'<rect x="{px(long_["admitted_s"]):.1f}" y="{T}" width="{px(long_["first_token_s"]) - px(long_["admitted_s"]):.1f}" '
         f'height="{H - T - B}" fill="#fde0c5"/>',
         f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for g, lab in ((0.01, "10 ms"), (0.1, "100 ms"), (1.0, "1 s")):
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(g):.1f}" y2="{py(g):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 4}" y="{py(g) + 4:.1f}" text-anchor="end">{lab}</text>')
    for t in range(0, 17, 2):
        o.append(f'<text x="{px(t):.1f}" y="{H - B + 14}" text-anchor="middle">{t}</text>')
    o.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">time (s)</text>')
    o.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
             f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">inter-token gap</text>')
    pts = " ".join(f"{px(s + g):.1f},{py(g):.1f}" for s, g in gaps if s + g <= x1)
    o.append(f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>')
    o.append(f'<text x="{px(long_["admitted_s"]) + 6:.1f}" y="{T + 12}" fill="#b35806">'
             f'100K-token prompt prefilling ({long_["first_token_s"] - long_["admitted_s"]:.2f} s): '
             'nobody else admitted</text>')
    o.append(f'<text x="{px(long_["first_token_s"]) + 4:.1f}" y="{py(0.3):.1f}">backlog flush</text>')
    o.append(f'<text x="{px(11.5):.1f}" y="{py(0.0125) - 8:.1f}">+20% after the prefill</text>')
    o.append("</svg>")
    return "\n".join(o)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == gap_svg(), "regenerate the SVG: python tests/figures/test_chunked_prefill_damage.py"


if __name__ == "__main__":
    print(gap_svg())
