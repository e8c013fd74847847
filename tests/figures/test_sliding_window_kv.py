"""Every figure of the sliding-window-kv statement and editorial, computed by the reference; the
editorial's picture (saving against context for several windows) is regenerated here and must match."""

import math
from pathlib import Path

import pytest

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "sliding_window_kv.py", "ref_sliding_window_kv")
EDITORIAL = ROOT / "exercises" / "sliding-window-kv" / "editorial.md"
S, F = "sliding_attention", "full_attention"
GPT_OSS_120B = [S, F] * 18
GEMMA3_27B = [F if i % 6 == 5 else S for i in range(62)]
GiB = 2**30
WINDOWS = ((128, "#1f77b4"), (1024, "#2ca02c"), (8192, "#ff7f0e"), (32768, "#d62728"))


def saving_svg() -> str:
    """Hybrid-allocator saving of the gpt-oss-120b shape against context, log2 x axis."""
    W, H, L, R, T, B = 560, 300, 50, 110, 20, 40
    x0, x1 = 7, 20                                            # log2 of context

    def px(e):
        return L + (e - x0) / (x1 - x0) * (W - L - R)

    def py(pct):
        return T + (60 - pct) / 60 * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for e, lab in ((7, "128"), (10, "1K"), (13, "8K"), (15, "32K"), (17, "128K"), (20, "1M")):
        out.append(f'<text x="{px(e):.1f}" y="{H - B + 14}" text-anchor="middle">{lab}</text>')
    for pct in (0, 10, 20, 30, 40, 50, 60):
        out.append(f'<text x="{L - 4}" y="{py(pct) + 4:.1f}" text-anchor="end">{pct}%</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'context C (tokens, log scale)</text>')
    out.append(f'<text x="12" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 12 {(T + H - B) / 2:.0f})">KV saved per sequence</text>')
    out.append(f'<line x1="{L}" y1="{py(50):.1f}" x2="{W - R}" y2="{py(50):.1f}" stroke="#999" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{W - R + 4}" y="{py(50) + 4:.1f}">share of sliding</text>')
    for w, color in WINDOWS:
        pts = []
        for i in range(0, 4 * (x1 - x0) + 1):
            c = round(2 ** (x0 + i / 4))
            pts.append((x0 + i / 4, 100 * ref.sequence_kv(GPT_OSS_120B, w, c, 2048, 16, "hybrid")["saving"]))
        path = " ".join(f"{px(e):.1f},{py(p):.1f}" for e, p in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        e2 = math.log2(2 * w)                                 # C = 2W: about a quarter saved
        p2 = 100 * ref.sequence_kv(GPT_OSS_120B, w, 2 * w, 2048, 16, "hybrid")["saving"]
        out.append(f'<text x="{px(e2) + 6:.1f}" y="{py(p2) + 14:.1f}" fill="{color}">W = {w}</text>')
    out.append(f'<polyline points="{px(x0):.1f},{py(0):.1f} {px(x1):.1f},{py(0):.1f}" fill="none" '
               'stroke="#000" stroke-width="2"/>')
    out.append(f'<text x="{W - R + 4}" y="{py(0) + 4:.1f}">uniform</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == saving_svg(), "regenerate the SVG: print(saving_svg())"


def _seq(layers, w, c, alloc, s=2048, b=16):
    return ref.sequence_kv(layers, w, c, s, b, alloc)


def test_statement_example():
    u = _seq(GPT_OSS_120B, 128, 131072, "uniform")
    h = _seq(GPT_OSS_120B, 128, 131072, "hybrid")
    t = _seq(GPT_OSS_120B, 128, 131072, "token_exact")
    assert u["bytes"] == 9_663_676_416 and u["bytes"] / GiB == 9 and u["saving"] == 0.0
    assert h["bytes"] == 4_836_556_800 and round(h["bytes"] / GiB, 4) == 4.5044
    assert h["saving"] == 0.49951171875 and round(100 * h["saving"], 2) == 49.95
    assert t["bytes"] == h["bytes"]
    assert ref.sliding_layer_blocks(128, 131072, 16) == 8
    assert ref.sliding_layer_blocks(128, 129, 16) == 9 and ref.sliding_layer_blocks(128, 144, 16) == 8
    assert 2 * 8 * 64 * 2 == 2048 and 36 * 2048 == 73_728
    r = ref.vllm_request_budget(GPT_OSS_120B, 128, 131072, 8192, 16)
    assert (r["full_layer_blocks"], r["sliding_layer_blocks"], r["request_blocks"]) == (8192, 521, 156_834)
    assert r["saving"] == 0.46820068359375


def test_question_numbers():
    # the window barely matters until it approaches C
    s = {w: _seq(GPT_OSS_120B, w, 131072, "hybrid")["saving"] for w in (128, 1024, 4096, 32768)}
    assert [round(100 * s[w], 2) for w in (128, 1024, 4096, 32768)] == [49.95, 49.61, 48.44, 37.5]
    # the window fallacy
    assert round(100 * (1 - 128 / 131072), 1) == 99.9
    # the layer ratio sets it
    g = ref.sequence_kv(GEMMA3_27B, 1024, 131072, 8192, 16, "hybrid")["saving"]
    assert round(100 * g, 2) == 83.22 and round(100 * 52 / 62, 2) == 83.87
    t = ref.sequence_kv([S, S, S, F] * 8, 128, 131072, 2048, 16, "hybrid")["saving"]
    assert round(100 * t, 2) == 74.93
    # vLLM's budget for several max_num_batched_tokens
    b = {n: ref.vllm_request_budget(GPT_OSS_120B, 128, 131072, n, 16) for n in (2048, 8192, 16384)}
    assert [b[n]["sliding_layer_blocks"] for n in (2048, 8192, 16384)] == [137, 521, 1033]
    assert [round(100 * b[n]["saving"], 2) for n in (2048, 8192, 16384)] == [49.16, 46.82, 43.7]
    short = ref.vllm_request_budget(GPT_OSS_120B, 128, 256, 8192, 16)
    assert (short["full_layer_blocks"], short["sliding_layer_blocks"], short["saving"]) == (16, 17, -0.03125)


def test_edges():
    assert _seq(GPT_OSS_120B, 128, 129, "hybrid")["saving"] == 0.0
    assert round(100 * _seq(GPT_OSS_120B, 128, 129, "token_exact")["saving"], 2) == 0.39
    assert _seq(GPT_OSS_120B, 128, 64, "hybrid")["saving"] == 0.0
    assert [ref.sliding_layer_blocks(128, c, 16) for c in (64, 128, 145, 4096)] == [4, 8, 9, 8]
    assert _seq(GPT_OSS_120B, 128, 1000, "token_exact")["saving"] == pytest.approx(18 * 872 / (36 * 1000))



def test_design_doc_and_real_systems():
    assert ref.sliding_layer_blocks(32, 112, 16) == 2               # vLLM hybrid design doc example
    assert GEMMA3_27B.count(S) == 52 and GEMMA3_27B.count(F) == 10 and 6 * 10 - 52 == 8
    assert round(100 * (1 - 1024 / 131072) * 52 / 62, 2) <= 83.22  # token-exact limit of the 5:1 stack


if __name__ == "__main__":
    print(saving_svg())
