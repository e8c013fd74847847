"""Every figure quoted by bf16-running-sum's statement and editorial, from the reference and the
public model; also regenerates the editorial's SVG (run this file as a script to rewrite it)."""

import math
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.sim.running_sum_model import demo_model

ROOT = Path(__file__).resolve().parents[2]
R = load_module(ROOT / "reference" / "bf16_running_sum.py", "_fig_bf16_running_sum")
SVG = ROOT / "exercises" / "bf16-running-sum" / "error_curve.svg"
CULPRIT = "layers.2.softmax_denominator"
LENGTHS = (64, 128, 256, 512, 1024, 2048, 4096)


class Counting:
    def __init__(self, model):
        self.model, self.calls = model, 0
        self.names, self.max_len = model.names, model.max_len

    def error(self, n, up):
        self.calls += 1
        return self.model.error(n, up)


def test_stall_values():
    assert R.stall_value(1.0, torch.bfloat16) == 256.0
    assert R.stall_value(1.0, torch.float16) == 2048.0
    assert R.stall_value(1.0, torch.float32) == 2.0 ** 24
    assert R.stall_value(0.01, torch.bfloat16) == 4.0
    assert R.stall_value(1000.0, torch.float16) == math.inf
    assert R.stall_value(1.0 + 2 ** -8, torch.bfloat16) == 512.0     # just above the tie: keeps going
    assert R.stall_value(1.0 + 2 ** -11, torch.float16) == 4096.0


def test_stall_values_match_torch_stepping():
    # torch rounds bf16/fp16 exactly from float32 here (the increments are exact in float32)
    for inc, dt in [(1.0, torch.bfloat16), (1.0, torch.float16), (0.5, torch.bfloat16), (3.0, torch.float16)]:
        x = torch.zeros((), dtype=dt)
        while True:
            x1 = x + torch.tensor(inc, dtype=dt)
            if x1 == x:
                break
            x = x1
        assert R.stall_value(inc, dt) == float(x)
    # summing 0.01 in bf16: stuck at 4.0 after about 4.0 / 0.0156 + 2.0 / 0.0078 ... steps
    x = torch.zeros((), dtype=torch.bfloat16)
    for _ in range(10_000):
        x = (x.float() + 0.01).to(torch.bfloat16)
    assert float(x) == 4.0


def test_rmsnorm_sum_of_squares_overflow_fp16():
    """onnxruntime's fused kernel accumulated (x / hidden) * x term by term in FP16 (issue #29034):
    each term fits, the running sum overflows, rsqrt(inf) = 0 and the row comes out as zeros."""
    x = torch.full((4,), 300.0, dtype=torch.float16)
    term = (x[0] / 4) * x[0]                          # 22,500 -> 22,496 in FP16
    assert math.isinf(float(x[0] * x[0]))            # (squaring first would overflow at once)
    assert 300.0 ** 2 / 4 == 22_500 and float(term) == 22_496.0
    acc = torch.zeros((), dtype=torch.float16)
    sums = []
    for xi in x:
        acc = acc + (xi / 4) * xi                     # every step rounded to FP16
        sums.append(float(acc))
    assert sums[:2] == [22_496.0, 44_992.0] and math.isinf(sums[2])
    assert 44_992 + 22_496 == 67_488 > 65_504 == float(torch.finfo(torch.float16).max)
    bad = x * torch.rsqrt(acc)                       # rsqrt(inf) = 0
    assert bad.tolist() == [0.0, 0.0, 0.0, 0.0]
    good = (x.float() * torch.rsqrt((x.float() ** 2).mean())).half()
    assert good.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_statement_time_limit_matches_the_toml():
    import tomllib
    meta = tomllib.loads((ROOT / "exercises/bf16-running-sum/exercise.toml").read_text())
    limit = meta["limits"]["time_s"]
    assert f"has a {limit} s CPU limit" in (ROOT / "exercises/bf16-running-sum/statement.md").read_text()


def test_bf16_plus_one_tie():
    # at 256 the spacing is 2: 257 is a tie and rounds to the even 256; 259 -> 260
    assert float(torch.tensor(257.0).to(torch.bfloat16)) == 256.0
    assert float(torch.tensor(259.0).to(torch.bfloat16)) == 260.0


def curves():
    m = demo_model()
    return m, m.error_curve(), m.error_curve([CULPRIT])


def test_demo_model_figures():
    m, before, after = curves()
    assert len(m.names) == 12
    assert round(float(before[4095]), 3) == 0.921
    assert round(float(after[4095]), 4) == 0.0077
    c = Counting(m)
    assert R.find_culprit(c, 4096, 0.05) == CULPRIT and c.calls == 4
    c.calls = 0
    assert R.first_bad_length(c, 0.05, []) == 367 and c.calls <= math.ceil(math.log2(4096)) + 2
    assert R.first_bad_length(c, 0.05, [CULPRIT]) is None
    # the culprit's total sticks at 1024 (spacing 8 > 2 x the largest increment e^1)
    d = m.term(CULPRIT, "bf16") * torch.arange(1, 4097).numpy()
    d64 = m.term(CULPRIT, "fp64") * torch.arange(1, 4097).numpy()
    assert d[4095] == 1024.0 and round(float(d64[4095])) == 4797


EDITORIAL_TABLE = {64: (0.0196, 0.0042), 128: (0.0201, 0.0063), 256: (0.0323, 0.0071), 512: (0.1217, 0.0071),
                   1024: (0.3514, 0.0071), 2048: (0.6588, 0.0075), 4096: (0.9212, 0.0077)}


def test_editorial_table():
    _, before, after = curves()
    for n, (b, a) in EDITORIAL_TABLE.items():
        assert round(float(before[n - 1]), 4) == b, n
        assert round(float(after[n - 1]), 4) == a, n
    assert all(f"| {n:,} | {b:.4f} | {a:.4f} |" in (ROOT / "exercises" / "bf16-running-sum" / "editorial.md").read_text()
               for n, (b, a) in EDITORIAL_TABLE.items())


def make_svg() -> str:
    """Error vs context length (log2 x axis, linear y), before and after the fix."""
    _, before, after = curves()
    w, h, left, bottom, top, right = 560, 300, 60, 40, 20, 20
    xs = list(range(0, 4096, 16)) + [4095]

    def px(n):
        return left + (math.log2(n + 1) - 0) / 12 * (w - left - right)

    def py(e):
        return h - bottom - min(e, 1.0) * (h - top - bottom)

    def path(curve):
        return " ".join(f"{'M' if i == 0 else 'L'}{px(n):.1f},{py(float(curve[n])):.1f}" for i, n in enumerate(xs))

    ticks = "".join(f'<text x="{px(2 ** k - 1):.1f}" y="{h - bottom + 16}" font-size="11" text-anchor="middle">{2 ** k}</text>'
                    for k in range(0, 13, 2))
    yticks = "".join(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" font-size="11" text-anchor="end">{v:.2f}</text>'
                     f'<line x1="{left}" x2="{w - right}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#ddd"/>'
                     for v in (0.0, 0.25, 0.5, 0.75, 1.0))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">\n'
            f'<rect width="{w}" height="{h}" fill="white"/>\n{yticks}\n{ticks}\n'
            f'<line x1="{px(255):.1f}" x2="{px(255):.1f}" y1="{top}" y2="{h - bottom}" stroke="#999" stroke-dasharray="4 3"/>\n'
            f'<text x="{px(255) + 4:.1f}" y="{top + 12}" font-size="11">256</text>\n'
            f'<path d="{path(before)}" fill="none" stroke="#c0392b" stroke-width="2"/>\n'
            f'<path d="{path(after)}" fill="none" stroke="#2471a3" stroke-width="2"/>\n'
            f'<text x="{w - right - 200}" y="{top + 30}" font-size="12" fill="#c0392b">denominator in bf16 (before)</text>\n'
            f'<text x="{w - right - 200}" y="{top + 46}" font-size="12" fill="#2471a3">denominator in fp32 (after)</text>\n'
            f'<text x="{(w + left) / 2}" y="{h - 6}" font-size="12" text-anchor="middle">context length (tokens, log scale)</text>\n'
            f'<text x="14" y="{(h - bottom) / 2}" font-size="12" transform="rotate(-90 14 {(h - bottom) / 2})" '
            f'text-anchor="middle">max |error|</text>\n</svg>\n')


def test_svg_is_current():
    assert SVG.read_text() == make_svg(), "regenerate: python tests/figures/test_bf16_running_sum.py"


if __name__ == "__main__":
    SVG.write_text(make_svg())
    print(f"wrote {SVG}")
