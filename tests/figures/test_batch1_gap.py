"""Every figure of the batch1-gap statement and editorial, computed by the reference on traces
of inferprep.sim.chrome_trace; the editorial's timeline (host row vs GPU row) is regenerated here."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.chrome_trace import decode_trace
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "batch1_gap.py", "ref_batch1_gap")
EDITORIAL = ROOT / "exercises" / "batch1-gap" / "editorial.md"
M, G, B = specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16
KW = dict(n_steps=4, seed=2, attention_efficiency=0.5, small_kernel_us=2.5, sampling_kernel_us=10.0,
          schedule_us=900.0, cpu_sampling_us=250.0, jitter=0.0)


def eager_trace():
    return decode_trace(M, G, [1024], mode="eager", dispatch_us=22.79, **KW)


def run(mode="eager", **kw):
    extra = dict(dispatch_us=22.79) if mode == "eager" else {}
    extra.update(kw)
    args = dict(KW, **extra)
    return ref.batch1_attribution(decode_trace(M, G, [1024], mode=mode, **args), M, G, 1024, B, B)


KCOL = {"gemm": "#4c72b0", "attention": "#8fb0de", "sampling": "#8172b3", "other": "#55a868"}
SCOL = {"launch_overhead": "#c44e52", "sync": "#dd8452", "sampling": "#8172b3", "cpu_gaps": "#937860"}


def timeline_svg() -> str:
    """The end of step 1 and the start of step 2 of the eager example: host state, GPU kernels,
    and the colour each idle microsecond is charged."""
    steps, host, _ = ref._read(eager_trace())
    tl = ref.host_timeline(host)
    s1, s2 = steps[1], steps[2]
    last_end = max(te for _, te, _ in s1)
    t0, t1 = last_end - 450.0, s2[0][0] + 250.0
    W, L, R = 680, 70, 20
    sx = (W - L - R) / (t1 - t0)
    X = lambda t: L + (min(max(t, t0), t1) - t0) * sx               # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="210" viewBox="0 0 {W} 210" '
           'font-family="sans-serif" font-size="11">']
    rows = {"host": 20, "GPU": 60, "idle": 100}
    for label, y in rows.items():
        out.append(f'<text x="{L - 6}" y="{y + 14}" text-anchor="end">{label}</text>')
    for a, b, st in tl:
        if b > t0 and a < t1:
            out.append(f'<rect x="{X(a):.1f}" y="20" width="{max(X(b) - X(a), 0.3):.1f}" height="20" fill="{SCOL[st]}"/>')
    kernels = [k for k in s1 + s2 if k[1] > t0 and k[0] < t1]
    for a, b, cls in kernels:
        out.append(f'<rect x="{X(a):.1f}" y="60" width="{max(X(b) - X(a), 0.6):.1f}" height="20" fill="{KCOL[cls]}"/>')
    t = t0
    idle = []
    for a, b, _ in sorted(kernels):
        if a > t:
            idle.append((t, a))
        t = max(t, b)
    for a, b in idle:
        us = ref.charge(a, b, tl, [p[0] for p in tl])
        for st in ref.HOST_STATES:
            if us[st] > 0:
                pieces = [(max(a, p0), min(b, p1)) for p0, p1, s in tl if s == st and p1 > a and p0 < b]
                for p0, p1 in pieces:
                    out.append(f'<rect x="{X(p0):.1f}" y="100" width="{max(X(p1) - X(p0), 0.3):.1f}" height="20" fill="{SCOL[st]}"/>')
    out.append(f'<line x1="{X(s2[0][0]):.1f}" y1="14" x2="{X(s2[0][0]):.1f}" y2="126" stroke="#000" stroke-dasharray="3,2"/>')
    out.append(f'<text x="{X(s2[0][0]) + 3:.1f}" y="12">next step\'s first kernel</text>')
    for us in range(0, int(t1 - t0) + 1, 250):
        out.append(f'<text x="{X(t0 + us):.1f}" y="138" text-anchor="middle">{us} µs</text>')
    legend = [("launch", SCOL["launch_overhead"]), ("sync", SCOL["sync"]), ("sampling", SCOL["sampling"]),
              ("other host / none", SCOL["cpu_gaps"]), ("GEMM", KCOL["gemm"]), ("attention", KCOL["attention"]),
              ("other kernels", KCOL["other"])]
    for j, (name, col) in enumerate(legend):
        x, y = L + 150 * (j % 4), 164 + 20 * (j // 4)
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{col}"/>')
        out.append(f'<text x="{x + 14}" y="{y}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == timeline_svg(), "regenerate the SVG: print(timeline_svg())"


def test_eager_example():
    r = run()
    gap = r["step_ms"] - r["floor_ms"]
    assert r["complete_steps"] == 3
    assert round(r["floor_ms"], 4) == 4.5205 and round(r["step_ms"], 4) == 11.3013
    assert round(r["step_ms"] / r["floor_ms"], 2) == 2.50
    w, kv = ref.floor_ms(M, G, 1024, B, B)
    assert (round(w, 4), round(kv, 4)) == (4.4804, 0.0401)
    assert round(gap, 4) == 6.7808 and round(w * 1e-3 * G.hbm_bytes_per_s / 1e9, 1) == 15.0
    got = {k: round(r[k + "_ms"], 4) for k in ref.BUCKETS}
    assert got == {"launch_overhead": 4.3551, "cpu_gaps": 1.0, "kernel_efficiency": 0.9747,
                   "small_unfused_kernels": 0.405, "sync": 0.024, "sampling": 0.022}
    pct = {k: round(100 * r[k + "_ms"] / gap, 1) for k in ref.BUCKETS}
    assert pct == {"launch_overhead": 64.2, "cpu_gaps": 14.7, "kernel_efficiency": 14.4,
                   "small_unfused_kernels": 6.0, "sync": 0.4, "sampling": 0.3}
    assert sum(r[k + "_ms"] for k in ref.BUCKETS) == pytest.approx(gap, abs=1e-12)
    assert r["first_fix"] == "cuda_graphs" and not r["uses_cuda_graphs"]
    # kernels per step and the host cost per kernel behind the launch bucket
    n = sum(1 for e in eager_trace()["traceEvents"] if e.get("cat") == "kernel" and e["args"]["step"] == 0)
    assert n == 357 and round(22.79 + 5.0, 2) == 27.79 and round(n * 27.79 / 1e3, 2) == 9.92
    # a nominal 5 us per launch would claim only
    assert round(n * 5.0 / 1e3, 3) == 1.785


def test_graph_example():
    r = run("graph")
    assert round(r["step_ms"], 4) == 7.3105 and round(r["step_ms"] / r["floor_ms"], 2) == 1.62
    assert round(r["cpu_gaps_ms"], 4) == 1.0020 and round(r["sync_ms"], 3) == 0.358
    assert r["uses_cuda_graphs"] and r["first_fix"] == "move_host_work_off_critical_path"
    # graphs plus a host that overlaps scheduling (0.2 ms left on the critical path)
    r2 = run("graph", schedule_us=100.0, bookkeep_us=50.0, cpu_sampling_us=0.0)
    assert round(r2["step_ms"], 2) == 6.46 and round(r2["step_ms"] / r2["floor_ms"], 2) == 1.43
    assert r2["first_fix"] == "kernel_tuning"


if __name__ == "__main__":
    print(timeline_svg())
