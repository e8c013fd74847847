"""Every figure of the adaptive-draft-length statement and editorial, computed by the reference;
the editorial's gain-by-batch picture is regenerated here and must match."""

import functools
import random
from pathlib import Path

import pytest

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "adaptive_draft_length.py", "ref_adaptive_draft_length")
EDITORIAL = ROOT / "exercises" / "adaptive-draft-length" / "editorial.md"

CODE = {"cls": "code", "q": [0.75, 0.75, 0.75, 0.25, 0.75, 0.75, 0.75, 0.75], "m": [1, 1, 1, 0, 1, 1, 1, 1]}
CHAT = {"cls": "chat", "q": [0.75, 0.25, 0.25, 0.5, 0.5, 0.25], "m": [1, 0, 0, 1, 1, 0]}
CHEAP, EXPENSIVE = 0.01, 0.15
BATCHES = (1, 8, 32, 128)


def worked_trace(seed=1, n=200, chat_mean=0.55, frac_code=0.5, L=200, conc=0.5):
    """The editorial's trace: per request one uniform draw for the class, then per position a
    Beta confidence and a uniform draw for the match (the draw order matters)."""
    rng = random.Random(seed)
    means = {"code": 0.90, "chat": chat_mean}
    out = []
    for _ in range(n):
        cls = "code" if rng.random() < frac_code else "chat"
        a, b = means[cls] * conc, (1 - means[cls]) * conc
        q = [rng.betavariate(a, b) for _ in range(L)]
        m = [1 if rng.random() < x else 0 for x in q]
        out.append({"cls": cls, "q": q, "m": m})
    return out


@functools.lru_cache(maxsize=None)
def story(c, batch=1, chat_mean=0.55, n=200):
    return ref.study(worked_trace(n=n, chat_mean=chat_mean), c, batch=batch)


def pct(x):
    return round(100 * x, 1)


def gain_svg() -> str:
    """Gain over the best fixed g against batch size, both drafters, both adaptive policies."""
    W, H, L, R, T, B = 560, 300, 60, 150, 20, 40
    ymin, ymax = -40.0, 20.0
    xs = {b: L + i * (W - L - R) / (len(BATCHES) - 1) for i, b in enumerate(BATCHES)}

    def py(v):
        return T + (ymax - v) / (ymax - ymin) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>',
           f'<line x1="{L}" y1="{py(0):.1f}" x2="{W - R}" y2="{py(0):.1f}" stroke="#333"/>']
    for v in range(-40, 21, 10):
        out.append(f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:+d}%</text>')
    for b, x in xs.items():
        out.append(f'<text x="{x:.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">batch slots</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">gain over best fixed g</text>')
    series = [(CHEAP, "gain_conf", "#1f77b4", "", "confidence, c=0.01"),
              (CHEAP, "gain_class", "#1f77b4", ' stroke-dasharray="5,4"', "per class, c=0.01"),
              (EXPENSIVE, "gain_conf", "#d62728", "", "confidence, c=0.15"),
              (EXPENSIVE, "gain_class", "#d62728", ' stroke-dasharray="5,4"', "per class, c=0.15")]
    for i, (c, key, color, dash, label) in enumerate(series):
        pts = [(xs[b], py(100 * story(c, b)[key])) for b in BATCHES]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for x, y in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
        ly = T + 14 + 16 * i
        out.append(f'<line x1="{W - R + 10}" y1="{ly - 4}" x2="{W - R + 30}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - R + 34}" y="{ly}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == gain_svg(), "regenerate the SVG: print(gain_svg())"


def test_statement_example():
    tr = [CODE, CHAT]
    assert ref.class_mean_confidence(tr) == {"code": 0.6875, "chat": 2.5 / 6}
    assert ref.simulate(tr, {"kind": "fixed", "g": 3}, 0.25) == {"cost": 8.5, "steps": 5, "drafted": 14, "accepted": 9}
    assert 4 * (1 + 3 * 0.25) + (1 + 2 * 0.25) == 8.5
    assert ref.simulate(tr, {"kind": "per_class", "g": {"code": 4, "chat": 1}}, 0.25) == \
        {"cost": 8.5, "steps": 6, "drafted": 10, "accepted": 8}
    assert ref.simulate(tr, {"kind": "confidence"}, 0.25) == {"cost": 8.75, "steps": 6, "drafted": 11, "accepted": 8}
    log = []
    ref._run(tr, {"kind": "confidence"}, 0.25, 1, 256, 10, log)
    assert [row[0][1] for row in log] == [4, 3, 2, 1, 1, 0]
    s = ref.study(tr, 0.25)
    assert (s["g_fixed"], s["g_class"], s["cost_off"], s["cost_class"], s["cost_conf"]) == \
        (3, {"chat": 2, "code": 3}, 14.0, 8.0, 8.75)
    assert s["gain_class"] == 0.0625 and round(s["gain_conf"], 4) == -0.0286
    assert round(s["speedup_fixed"], 3) == 1.647
    assert ref.simulate(tr, {"kind": "fixed", "g": 3}, 0.25, batch=2, knee_tokens=4)["cost"] == 7.0
    assert max(1, 8 / 4) + 0.25 * 3 == 2.75
    s2 = ref.study(tr, 0.25, batch=2, knee_tokens=4)
    assert s2["g_fixed"] == 1 and s2["cost_fixed"] == 5.0
    assert (round(s2["gain_class"], 4), round(s2["gain_conf"], 4)) == (-0.2308, -0.3333)


def test_question_numbers_batch_1():
    tr = worked_trace()
    assert sum(r["cls"] == "code" for r in tr) == 101
    qbar = ref.class_mean_confidence(tr)
    assert (round(qbar["code"], 2), round(qbar["chat"], 2)) == (0.90, 0.55)
    cheap, exp = story(CHEAP), story(EXPENSIVE)
    assert (exp["g_class"], exp["g_fixed"]) == ({"chat": 2, "code": 8}, 3)
    assert (cheap["g_class"], cheap["g_fixed"]) == ({"chat": 6, "code": 10}, 10)
    assert (pct(cheap["gain_class"]), pct(cheap["gain_conf"])) == (1.5, 4.2)
    assert (pct(exp["gain_class"]), pct(exp["gain_conf"])) == (7.0, 17.8)
    assert (round(cheap["speedup_fixed"], 2), round(exp["speedup_fixed"], 2)) == (3.05, 1.76)


def test_question_numbers_chat_050():
    cheap, exp = story(CHEAP, chat_mean=0.50, n=150), story(EXPENSIVE, chat_mean=0.50, n=150)
    assert (exp["g_class"], exp["g_fixed"]) == ({"chat": 2, "code": 7}, 3)
    assert (pct(cheap["gain_conf"]), pct(exp["gain_conf"])) == (4.4, 19.2)
    assert (pct(cheap["gain_class"]), pct(exp["gain_class"])) == (2.3, 8.9)


@pytest.mark.parametrize("batch,cheap_fixed,exp_fixed,cheap_conf,exp_conf,cheap_class,exp_class", [
    (8, 10, 3, 0.3, -19.1, -0.6, -21.6),
    (32, 7, 3, 1.5, -24.7, 0.0, -20.1),
    (128, 1, 1, -23.9, -36.2, -3.3, -16.0),
])
def test_question_numbers_batching(batch, cheap_fixed, exp_fixed, cheap_conf, exp_conf, cheap_class, exp_class):
    cheap, exp = story(CHEAP, batch), story(EXPENSIVE, batch)
    assert (cheap["g_fixed"], exp["g_fixed"]) == (cheap_fixed, exp_fixed)
    assert (pct(cheap["gain_conf"]), pct(exp["gain_conf"])) == (cheap_conf, exp_conf)
    assert (pct(cheap["gain_class"]), pct(exp["gain_class"])) == (cheap_class, exp_class)


def test_batch_speedups():
    assert round(story(CHEAP, 128)["speedup_fixed"], 2) == 1.56
    assert round(story(EXPENSIVE, 128)["speedup_fixed"], 2) == 1.37
    assert story(EXPENSIVE, 128)["g_class"] == {"chat": 1, "code": 2}


def test_lockstep_drafting():
    tr = worked_trace()
    for batch, mean_max in ((1, 3.75), (8, 8.47)):
        log = []
        ref._run(tr, {"kind": "confidence"}, EXPENSIVE, batch, 256, 10, log)
        gs = [g for row in log for _, g, _ in row]
        assert round(sum(gs) / len(gs), 2) == 3.75
        assert round(sum(max(g for _, g, _ in row) for row in log) / len(log), 2) == mean_max
