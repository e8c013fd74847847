"""Every figure of the voice-latency-budget statement and editorial, computed by the reference;
the editorial's stacked bar of the budget is regenerated here and must match."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "voice_latency_budget.py", "ref_voice_latency_budget")
EDITORIAL = ROOT / "exercises" / "voice-latency-budget" / "editorial.md"
S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
S_70B = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.5, mbu=0.8, t_fixed_s=0.003)
LINES = {"capture": 20, "network_rtt": 30, "endpoint": 100, "asr": 15, "tts": 30, "playout": 20}
TURN = {"ctx": 2048, "new_tokens": 64, "cached_tokens": 2048, "clause_tokens": 8}
TRAFFIC = {"calls": 10_000, "turn_interval_s": 8.0, "tokens_per_turn": 60, "rho": 0.7}
RESERVE = 10.0


def segments(endpoint_ms: float) -> list[tuple[str, float, str]]:
    """The budget's serial items, ms, with the LLM's share split as the 8B tier runs it."""
    lines = dict(LINES, endpoint=endpoint_ms)
    share = ref.budget_lines(300, LINES)["llm_share_ms"]
    tier = ref.size_llm_tier(S_8B, share, RESERVE, TURN, 256, TRAFFIC)
    c = ref.first_clause(S_8B, tier["b_max"], TURN)
    slack = share - RESERVE - c["first_clause_ms"]
    return [("capture", lines["capture"], "#9e9e9e"), ("network", lines["network_rtt"], "#bdbdbd"),
            ("endpoint silence", lines["endpoint"], "#ff7f0e"), ("ASR", lines["asr"], "#2ca02c"),
            ("queue reserve", RESERVE, "#c5b0d5"), ("LLM TTFT", c["ttft_ms"], "#1f77b4"),
            ("LLM clause decode", c["first_clause_ms"] - c["ttft_ms"], "#6baed6"),
            ("slack", slack, "#ffffff"), ("TTS", lines["tts"], "#d62728"),
            ("playout", lines["playout"], "#8c564b")]


def budget_svg() -> str:
    """Two stacked bars: the 300 ms story and the same pipeline with a 500 ms endpoint."""
    W, H, L, R = 600, 270, 130, 30
    xmax = 720.0

    def px(ms):
        return L + ms / xmax * (W - L - R)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">']
    for ms in range(0, 721, 100):
        out.append(f'<line x1="{px(ms):.1f}" y1="20" x2="{px(ms):.1f}" y2="150" stroke="#eee"/>')
        out.append(f'<text x="{px(ms):.1f}" y="166" text-anchor="middle">{ms}</text>')
    out.append(f'<text x="{px(360):.1f}" y="182" text-anchor="middle">ms from the end of the user\'s speech</text>')
    bars = (("100 ms endpoint", 100.0, 40), ("500 ms endpoint", 500.0, 95))
    legend = []
    for label, ep, y in bars:
        out.append(f'<text x="{L - 6}" y="{y + 19}" text-anchor="end">{label}</text>')
        x = 0.0
        for name, ms, color in segments(ep):
            out.append(f'<rect x="{px(x):.1f}" y="{y}" width="{px(x + ms) - px(x):.1f}" height="28" '
                       f'fill="{color}" stroke="#333" stroke-width="0.5"/>')
            if px(x + ms) - px(x) >= 46:
                out.append(f'<text x="{(px(x) + px(x + ms)) / 2:.1f}" y="{y + 18}" text-anchor="middle">'
                           f'{ms:.0f}</text>')
            if y == 40:
                legend.append((name, ms, color))
            x += ms
        out.append(f'<text x="{px(x) + 4:.1f}" y="{y + 19}">{x:.0f}</text>')
    out.append(f'<line x1="{px(300):.1f}" y1="28" x2="{px(300):.1f}" y2="136" stroke="#d62728" '
               'stroke-width="2" stroke-dasharray="5 3"/>')
    out.append(f'<text x="{px(300):.1f}" y="18" text-anchor="middle" fill="#d62728">300 ms budget</text>')
    for i, (name, ms, color) in enumerate(legend):
        lx, ly = 20 + (i % 4) * 145, 200 + (i // 4) * 20
        out.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{color}" stroke="#333" '
                   'stroke-width="0.5"/>')
        out.append(f'<text x="{lx + 14}" y="{ly + 9}">{name} {ms:.1f}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == budget_svg(), "regenerate the SVG: print(budget_svg())"


def test_budget_lines():
    r = ref.budget_lines(300, LINES)
    assert r == {"llm_share_ms": 85.0, "largest_line": "endpoint", "largest_is_model": False}
    assert ref.budget_lines(300, dict(LINES, endpoint=500))["llm_share_ms"] == -315.0
    assert ref.budget_lines(300, dict(LINES, endpoint=800))["llm_share_ms"] == -615.0
    assert sum(ms for _, ms, _ in segments(100.0)) == pytest.approx(300.0, rel=1e-12)
    assert sum(ms for _, ms, _ in segments(500.0)) == pytest.approx(700.0, rel=1e-12)


def test_first_clause_table():
    fc = {b: ref.first_clause(S_8B, b, TURN) for b in (1, 4, 8, 16, 32, 64)}
    assert [round(fc[b]["first_clause_ms"], 2) for b in fc] == [61.65, 64.05, 67.26, 73.67, 86.5, 112.15]
    assert (round(fc[16]["ttft_ms"], 2), round(fc[16]["tpot_ms"], 2)) == (9.24, 9.2)
    assert fc[16]["first_clause_ms"] == pytest.approx(73.6718934192359, rel=1e-12)
    assert round(fc[1]["ttft_ms"], 2) == 7.74 and round(fc[1]["tpot_ms"], 2) == 7.70
    assert round(7 * fc[16]["tpot_ms"], 1) == 64.4
    f70 = {b: ref.first_clause(S_70B, b, TURN)["first_clause_ms"] for b in (1, 32, 36, 37)}
    assert [round(v, 2) for v in f70.values()] == [76.17, 83.94, 84.94, 85.19]


def test_tier():
    t = ref.size_llm_tier(S_8B, 85.0, RESERVE, TURN, 256, TRAFFIC)
    assert (t["b_max"], t["replicas"], t["gpus"]) == (17, 59, 59)
    assert round(t["tpot_ms"], 2) == 9.30 and round(t["first_clause_ms"], 2) == 74.47
    assert round(t["concurrent_turns"], 1) == 697.8
    assert TRAFFIC["calls"] / TRAFFIC["turn_interval_s"] == 1250
    assert round(60 * t["tpot_ms"] / 1e3, 2) == 0.56 and round(17 * 0.7, 1) == 11.9
    t0 = ref.size_llm_tier(S_8B, 85.0, 0.0, TURN, 256, TRAFFIC)
    assert (t0["b_max"], t0["replicas"]) == (30, 38)
    t70 = ref.size_llm_tier(S_70B, 85.0, 0.0, TURN, 256, TRAFFIC)
    assert (t70["b_max"], t70["replicas"], t70["gpus"]) == (36, 32, 256)
    assert ref.size_llm_tier(S_70B, 85.0, RESERVE, TURN, 256, TRAFFIC)["replicas"] is None
    # the throughput-optimal batch: 256 turns per replica, a first clause far past the share
    wide = ref.size_llm_tier(S_8B, 1e9, 0.0, TURN, 256, TRAFFIC)
    assert (wide["b_max"], wide["replicas"], round(wide["first_clause_ms"])) == (256, 15, 285)
    assert 3 < wide["first_clause_ms"] / 85 < 4 and 4 < 256 / 59 < 5


if __name__ == "__main__":
    print(budget_svg())
