"""Every figure of the mbu-gap-diagnosis statement and editorial, computed by the reference on
traces of inferprep.sim.chrome_trace; the editorial's stacked bar is regenerated here."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import DType, ModelConfig

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "mbu_gap_diagnosis.py", "ref_mbu_gap_diagnosis")
EDITORIAL = ROOT / "exercises" / "mbu-gap-diagnosis" / "editorial.md"
M, G, B = specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16
CTX = [2048] * 16
TEASER = dict(n_steps=4, seed=1, gemm_efficiency=0.85, attention_efficiency=0.7, gpu_gap_us=1.5,
              sampling_kernel_us=20.0, schedule_us=1146.7, jitter=0.0)
TOY = ModelConfig(name="toy-4l", n_layers=4, hidden_size=1024, n_heads=8, n_kv_heads=2,
                  head_dim=128, ffn_size=2816, vocab_size=32000)


def teaser():
    return ref.gap_buckets(decode_trace(M, G, CTX, **TEASER), M, G, CTX, B, B)


def eager():
    return ref.gap_buckets(decode_trace(M, G, CTX, mode="eager", **TEASER), M, G, CTX, B, B)


COLORS = {"weights": "#4c72b0", "kv": "#8fb0de", "gemm_efficiency": "#dd8452",
          "attention": "#f2b880", "non_gemm_kernels": "#55a868", "launch_gaps": "#c44e52",
          "sampling_cpu": "#8172b3"}
LABELS = {"weights": "weights floor", "kv": "KV floor", "gemm_efficiency": "GEMM efficiency",
          "attention": "attention", "non_gemm_kernels": "non-GEMM kernels",
          "launch_gaps": "launch gaps", "sampling_cpu": "sampling / host"}


def bars_svg() -> str:
    """One stacked bar per trace (CUDA graphs, eager) of the same step: floor, then the buckets."""
    f = ref.floor_ms(M, G, CTX, B, B)
    rows = [("CUDA graphs", teaser()), ("eager", eager())]
    W, H, L, R = 640, 190, 90, 20
    xmax = 14.0
    sx = (W - L - R) / xmax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">']
    for i, (label, r) in enumerate(rows):
        y = 20 + 40 * i
        out.append(f'<text x="{L - 6}" y="{y + 16}" text-anchor="end">{label}</text>')
        x = L
        parts = [("weights", f["weights_ms"]), ("kv", f["kv_ms"])] + \
                [(k, r[k + "_ms"]) for k in ref.BUCKETS]
        for k, v in parts:
            w = v * sx
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="24" fill="{COLORS[k]}"/>')
            x += w
        out.append(f'<text x="{x + 4:.1f}" y="{y + 16}">{r["step_ms"]:.2f} ms, MBU {r["mbu"]:.0%}</text>')
    for t in range(0, 15, 2):
        x = L + t * sx
        out.append(f'<line x1="{x:.1f}" y1="100" x2="{x:.1f}" y2="104" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="116" text-anchor="middle">{t} ms</text>')
    for j, k in enumerate(COLORS):
        x, y = L + 150 * (j % 4) - 60, 136 + 20 * (j // 4)
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{COLORS[k]}"/>')
        out.append(f'<text x="{x + 14}" y="{y}">{LABELS[k]}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == bars_svg(), "regenerate the SVG: print(bars_svg())"


def test_floor():
    f = ref.floor_ms(M, G, CTX, B, B)
    assert (round(f["weights_ms"], 4), round(f["kv_ms"], 4), round(f["floor_ms"], 4)) == (4.4804, 1.2821, 5.7625)
    assert round(100 * f["kv_ms"] / f["floor_ms"]) == 22
    assert round(f["weights_ms"] * 1e-3 * G.hbm_bytes_per_s / 1e9, 1) == 15.0
    assert ref._kv_elements_per_token(M) * 2 == 128 * 1024
    assert round(f["floor_ms"] / 0.6, 4) == 9.6041 and round(f["floor_ms"] / 0.6 - f["floor_ms"], 4) == 3.8416


def test_teaser_split():
    r = teaser()
    gap = r["step_ms"] - r["floor_ms"]
    assert r["complete_steps"] == 3
    assert round(r["step_ms"], 4) == 9.6041 and round(r["mbu"], 4) == 0.6000 and round(gap, 4) == 3.8416
    got = {k: round(r[k + "_ms"], 4) for k in ref.BUCKETS}
    assert got == {"sampling_cpu": 1.3215, "gemm_efficiency": 0.7907, "attention": 0.7095,
                   "launch_gaps": 0.5340, "non_gemm_kernels": 0.4860}
    pct = {k: round(100 * r[k + "_ms"] / gap, 1) for k in ref.BUCKETS}
    assert pct == {"sampling_cpu": 34.4, "gemm_efficiency": 20.6, "attention": 18.5,
                   "launch_gaps": 13.9, "non_gemm_kernels": 12.7}
    assert r["ranking"] == ["sampling_cpu", "gemm_efficiency", "attention", "launch_gaps", "non_gemm_kernels"]
    assert sum(r[k + "_ms"] for k in ref.BUCKETS) == pytest.approx(gap, abs=1e-12)
    # the sampling/host bucket: two 20 us sampling kernels, the rest is host time after the last kernel
    tr = decode_trace(M, G, CTX, **TEASER)["traceEvents"]
    samp = [e for e in tr if e.get("cat") == "kernel" and e["args"]["step"] == 0
            and ref.kernel_class(e["name"]) == "sampling"]
    assert len(samp) == 2 and sum(e["dur"] for e in samp) == pytest.approx(40.0)
    assert round(r["sampling_cpu_ms"] - 0.040, 4) == 1.2815


def test_eager_same_step():
    r = eager()
    assert round(r["step_ms"], 2) == 10.59 and round(r["mbu"], 2) == 0.54
    assert round(r["launch_gaps_ms"], 2) == 1.51 and r["ranking"][0] == "launch_gaps"
    assert round(r["sampling_cpu_ms"], 2) == 1.34


def test_public_toy():
    r = ref.gap_buckets(decode_trace(TOY, G, [4096] * 4, n_steps=3, seed=7, mode="eager"),
                        TOY, G, [4096] * 4, B, B)
    assert r["complete_steps"] == 2 and r["ranking"][0] == "launch_gaps"


if __name__ == "__main__":
    print(bars_svg())
