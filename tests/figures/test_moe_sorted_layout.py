"""Every figure of the moe-sorted-layout statement and editorial, computed by the reference; the
editorial's padding picture is regenerated here and must match; the grader's layout check accepts
any order inside an expert and rejects a layout whose blocks straddle experts."""

import math
import random
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.grading.checks import WrongAnswer

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "moe_sorted_layout.py", "ref_moe_sorted_layout")
grader = load_module(ROOT / "graders" / "moe_sorted_layout.py", "grader_moe_sorted_layout")
EDITORIAL = ROOT / "exercises" / "moe-sorted-layout" / "editorial.md"
TOKENS = (1, 8, 64, 256, 1024, 4096)
BLOCKS = (16, 64, 128)


def padding_svg() -> str:
    """Expected padded rows / real rows against batch tokens (log-log), E=256, top-8."""
    W, H, L, R, T, B = 560, 300, 60, 110, 20, 40
    xmin, xmax, ymin, ymax = 0.0, math.log10(16384), 0.0, math.log10(128)

    def px(b):
        return L + (math.log10(b) - xmin) / (xmax - xmin) * (W - L - R)

    def py(v):
        return T + (ymax - math.log10(v)) / (ymax - ymin) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for b in (1, 16, 256, 4096, 16384):
        out.append(f'<text x="{px(b):.1f}" y="{H - B + 14}" text-anchor="middle">{b}</text>')
    for v in (1, 2, 4, 16, 64, 128):
        out.append(f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v}x</text>')
        out.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W - R}" y2="{py(v):.1f}" stroke="#eee"/>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">'
               'tokens in the batch (E = 256, top-8, uniform routing)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">padded rows / real rows</text>')
    xs = [2 ** i for i in range(0, 15)]
    for m, color in zip(BLOCKS, ("#1f77b4", "#2ca02c", "#d62728")):
        pts = [(b, ref.padding_cost(b, 256, 8, m)["expected_overhead"]) for b in xs]
        path = " ".join(f"{px(b):.1f},{py(v):.1f}" for b, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 6}" y="{py(pts[0][1]) + 4:.1f}" fill="{color}">M = {m}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == padding_svg(), "regenerate the SVG: print(padding_svg())"


def test_statement_example():
    s, e, n = ref.moe_align_block_size(torch.tensor([[0, 2], [2, 1], [0, 2]]), 2, 3)
    assert s.tolist() == [0, 4, 3, 6, 1, 2, 5, 6] and e.tolist() == [0, 1, 2, 2] and n == 8
    p = ref.padding_cost(1, 256, 8, 16)
    assert p == {"real_rows": 8, "expected_padded_rows": 128.0, "expected_overhead": 16.0,
                 "buffer_rows": 3848}
    assert 6 + 3 * (2 - 1) == 9          # vLLM's buffer for the example


def test_vllm_docstring_example():
    ids = torch.tensor([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]])
    s, e, n = ref.moe_align_block_size(ids, 4, 5)      # ids 1..4 need num_experts = 5
    assert s.tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12]
    assert e.tolist() == [1, 2, 3, 4] and n == 16
    with pytest.raises(ValueError):
        ref.moe_align_block_size(ids, 4, 4)            # the docstring's num_experts = 4


def test_padding_table():
    want = {1: (16.00, 64.00, 128.00), 8: (14.36, 57.42, 114.84), 64: (6.95, 27.81, 55.61),
            256: (2.01, 8.00, 16.00), 1024: (1.23, 2.00, 4.00), 4096: (1.06, 1.24, 1.48)}
    for b, row in want.items():
        got = tuple(round(ref.padding_cost(b, 256, 8, m)["expected_overhead"], 2) for m in BLOCKS)
        assert got == row, b
    assert ref.padding_cost(64, 256, 8, 16)["expected_padded_rows"] == pytest.approx(3559.08, abs=0.005)
    assert 256 * math.ceil(1 * 8 / 256 / 16) * 16 == 4096          # rounding the mean count up instead


def test_loop_costs():
    o = ref.loop_overheads(64, 256, 8, 7168, 58, 2, 6)
    assert round(o["active_experts"], 1) == 222.4
    assert round(o["launches_per_step"]) == 77410
    assert round(o["launches_per_step"] * 5e-3) == 387           # ms at 5 us per launch
    assert round(o["rows_per_active_expert"], 2) == 2.30
    assert round(o["gather_bytes_per_layer"] / 2**20, 1) == 14.0
    assert round(o["scatter_add_bytes_per_layer"] / 2**20, 1) == 21.0
    assert round(64 * 8 * 7168 * 2 / 2**20, 1) == 7.0
    o1 = ref.loop_overheads(1, 256, 8, 7168, 58, 2, 6)
    assert o1["active_experts"] == pytest.approx(8.0) and round(o1["launches_per_step"]) == 2784
    o_big = ref.loop_overheads(4096, 256, 8, 7168, 58, 2, 6)
    assert round(o_big["active_experts"], 3) == 256.0 and o_big["rows_per_active_expert"] == pytest.approx(128.0)
    assert ref.slowdown_causes() == ["gather_scatter_copies", "kernel_launches", "small_gemms"]


def test_grader_accepts_any_order_inside_an_expert():
    ids = grader._trace(5, 50, 4, 12, 1.0, True, torch.int32)
    s, e, n = ref.moe_align_block_size(ids, 8, 12)
    rng = random.Random(0)
    shuffled = s.clone()
    start = 0
    for ex in sorted(set(e.tolist())):
        c = int((ids == ex).sum())
        seg = list(range(start, start + c))
        perm = seg[:]
        rng.shuffle(perm)
        shuffled[seg] = s[perm]
        start += -(-c // 8) * 8
    assert not torch.equal(shuffled, s)
    grader.check_layout((shuffled, e, n), ids, 8, 12, ref)
    straddle = torch.cat([s[1:], s[:1]])
    with pytest.raises(WrongAnswer):
        grader.check_layout((straddle, e, n), ids, 8, 12, ref)


def test_fused_equals_loop():
    x, w1, w2, tw, ti = grader._moe_inputs(0, 37, 64, 48, 16, 4, torch.float64, "cpu")
    s, e, n = ref.moe_align_block_size(ti, 8, 16)
    assert n == 192 and 37 * 4 == 148
    out = ref.fused_moe(x, w1, w2, tw, s, e, 8)
    truth = grader._loop_truth(x, w1, w2, tw, ti, [True] * 16)
    assert float((out - truth).abs().max()) <= 4.5e-16
