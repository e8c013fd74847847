"""Every figure of the qat-vs-ptq-cost statement and editorial, computed by the reference; the
editorial's picture (break-even days vs fleet size) is regenerated here and must match."""

import math
from pathlib import Path

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "qat_vs_ptq_cost.py", "ref_qat_vs_ptq_cost")
EDITORIAL = ROOT / "exercises" / "qat-vs-ptq-cost" / "editorial.md"
L70, H100, BF16 = specs.LLAMA_3_1_70B, specs.H100_SXM, DType.BF16
THR = {"fp8": 1000.0, "int4_weight_only": 1400.0}


def hours70(tokens=1e10, teacher=True, ovh=0.0, gpu=H100):
    return ref.qat_gpu_hours(L70, tokens, gpu, BF16, 0.4, teacher, ovh)["gpu_hours"]


def break_even_svg() -> str:
    """Break-even days vs fleet size (log-log) for three format speed-ups, 3,903 GPU-hours."""
    W, H, L, R, T, B = 560, 300, 60, 130, 20, 40
    xmin, xmax, ymin, ymax = 3, 11, -1.0, 3.0            # log2 fleet; log10 days
    hours = hours70()

    def px(f):
        return L + (math.log2(f) - xmin) / (xmax - xmin) * (W - L - R)

    def py(days):
        return T + (ymax - math.log10(days)) / (ymax - ymin) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for e in range(xmin, xmax + 1):
        out.append(f'<text x="{px(2 ** e):.1f}" y="{H - B + 14}" text-anchor="middle">{2 ** e}</text>')
    for v in (0.1, 1, 10, 100, 1000):
        out.append(f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">serving fleet (GPUs)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">break-even (days)</text>')
    out.append(f'<line x1="{L}" y1="{py(90):.1f}" x2="{W - R}" y2="{py(90):.1f}" stroke="#000" '
               'stroke-dasharray="6,3"/>')
    out.append(f'<text x="{W - R - 4}" y="{py(90) - 4:.1f}" text-anchor="end">90-day model refresh</text>')
    for k, (s, colour) in enumerate(((1.2, "#1f77b4"), (1.4, "#2ca02c"), (2.0, "#d62728"))):
        thr = {"ptq": 1000.0, "qat": 1000.0 * s}
        pts = []
        for e in range(xmin, xmax + 1):
            saved = ref.fleet_saving(2 ** e, "ptq", "qat", thr)["gpus_saved"]
            pts.append((2 ** e, ref.break_even_days(hours, saved)))
        path = " ".join(f"{px(f):.1f},{py(d):.1f}" for f, d in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        y = T + 12 + 16 * k
        out.append(f'<line x1="{W - R + 8}" y1="{y - 4}" x2="{W - R + 22}" y2="{y - 4}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 26}" y="{y}">{s:.1f}x per GPU</text>')
    f, d = 64, ref.break_even_days(hours, ref.fleet_saving(64, "fp8", "int4_weight_only", THR)["gpus_saved"])
    out.append(f'<circle cx="{px(f):.1f}" cy="{py(d):.1f}" r="4" fill="#2ca02c"/>')
    out.append(f'<text x="{px(f) + 6:.1f}" y="{py(d) - 6:.1f}">64 GPUs: {d:.1f} days</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == break_even_svg(), "regenerate the SVG: print(break_even_svg())"


def test_run_cost():
    r = ref.qat_gpu_hours(L70, 1e10, H100, BF16, 0.4, True)
    assert r["active_params"] == 69_501_714_432 and r["flops_per_token"] == 556_013_715_456
    assert f"{r['total_flops']:.2e}" == "5.56e+21" and round(r["gpu_hours"]) == 3903
    assert [round(hours70(t)) for t in (1e9, 1e10, 5e10)] == [390, 3903, 19513]
    assert round(hours70(teacher=False)) == 2927
    assert round(hours70(ovh=0.25)) == 4634
    assert round(hours70(gpu=specs.B200)) == 1716


def test_fleet_and_break_even():
    h = hours70()
    s = ref.fleet_saving(64, "fp8", "int4_weight_only", THR)
    assert round(s["gpus_needed"], 2) == 45.71 and round(s["gpus_saved"], 2) == 18.29
    assert round(ref.break_even_days(h, s["gpus_saved"]), 1) == 8.9
    assert round(100 * s["gpus_saved"] / 64, 1) == 28.6 and round(100 * (s["speedup"] - 1)) == 40
    assert round(64 * (s["speedup"] - 1), 1) == 25.6
    s8 = ref.fleet_saving(8, "fp8", "int4_weight_only", THR)
    assert round(s8["gpus_saved"], 2) == 2.29 and round(ref.break_even_days(h, s8["gpus_saved"]), 1) == 71.1
    s512 = ref.fleet_saving(512, "fp8", "int4_weight_only", THR)
    assert round(s512["gpus_saved"], 1) == 146.3 and round(ref.break_even_days(h, s512["gpus_saved"]), 1) == 1.1
    same = ref.fleet_saving(64, "fp8", "fp8", THR)
    assert same["speedup"] == 1.0 and same["gpus_saved"] == 0.0
    assert ref.break_even_days(h, same["gpus_saved"]) == math.inf
    # break-even in hours instead of days
    assert round(h / s["gpus_saved"]) == 213
    # the picture's other curves at 64 GPUs
    for sp, days in ((1.2, 15.2), (2.0, 5.1)):
        saved = ref.fleet_saving(64, "a", "b", {"a": 1000.0, "b": 1000.0 * sp})["gpus_saved"]
        assert round(ref.break_even_days(h, saved), 1) == days
    # the smallest fleet that pays back within 90 days at 1.4x
    assert math.ceil(h / (24 * 90 * (1 - 1 / 1.4))) == 7


def test_kimi_k2():
    r = ref.qat_gpu_hours(specs.KIMI_K2, 1e10, H100, BF16, 0.4, True)
    assert round(r["active_params"] / 1e9, 1) == 31.7 and round(r["gpu_hours"]) == 1779
    s = ref.fleet_saving(64, "fp8", "int4_weight_only", {"fp8": 1.0, "int4_weight_only": 2.0})
    assert s["gpus_saved"] == 32.0 and round(ref.break_even_days(r["gpu_hours"], 32.0), 1) == 2.3
    assert round(ref.active_params(specs.DEEPSEEK_V3) / 1e9, 1) == 36.6


def _case(**kw):
    c = {"training_access": True, "format": "int4_weight_only", "gpu": H100, "fp4_dense_flops": None,
         "ptq_drop": 3.0, "max_drop": 1.0, "compute_bound_share": 0.2, "fleet_gpus": 64,
         "thr_ptq": 1000.0, "thr_qat": 1400.0, "qat_gpu_hours": hours70(), "days_to_refresh": 90.0}
    c.update(kw)
    return c


def test_skip_rules():
    assert ref.skip_qat(_case()) == []
    assert ref.skip_qat(_case(format="fp4", thr_qat=2000.0)) == ["no_kernel_for_format"]
    assert ref.skip_qat(_case(format="fp4", gpu=specs.B200, fp4_dense_flops=9e15, thr_qat=2000.0)) == []
    assert ref.skip_qat(_case(compute_bound_share=0.7)) == ["compute_bound_weight_only"]
    assert ref.skip_qat(_case(fleet_gpus=2, ptq_drop=0.5)) == [
        "fleet_too_small", "ptq_meets_bar", "refresh_before_break_even"]
    assert round(ref.break_even_days(hours70(), 2 - 2 * 1000 / 1400)) == 285
    assert round(2 - 2 * 1000 / 1400, 2) == 0.57
    assert ref.skip_qat(_case(format="fp8", gpu=specs.A100_SXM_80GB, thr_qat=1250.0)) == ["no_kernel_for_format"]


if __name__ == "__main__":
    print(break_even_svg())
