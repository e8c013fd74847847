"""Every figure of the expert-load-balance statement and editorial, computed by the reference;
the editorial's before/after picture of per-GPU times is regenerated here and must match. The
deepseek-ai/EPLB README example is kept as a fixture (EPLB is not a package: the weights and the
printed phy2log below are copied from https://github.com/deepseek-ai/EPLB README.md)."""

from pathlib import Path

import pytest
import torch

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "expert_load_balance.py", "ref_expert_load_balance")
EDITORIAL = ROOT / "exercises" / "expert-load-balance" / "editorial.md"
H100, FP8 = specs.H100_SXM, DType.FP8
EB, FL = 3 * 7168 * 2048, 2 * 3 * 7168 * 2048          # DeepSeek-V3 routed expert, FP8 weights
E, K, G = 256, 8, 32

# deepseek-ai/EPLB README.md, "Interface and Example": weights, 16 replicas, 4 groups, 2 nodes, 8 GPUs
README_WEIGHT = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
                 [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]
README_PHY2LOG = [[5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
                  [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1]]


def zipf_share(alpha: float) -> list[float]:
    """Routing shares of 256 experts, Zipf(alpha) over ranks, hot experts at random positions
    (torch.randperm with seed 0, as in the notes' script)."""
    perm = torch.randperm(E, generator=torch.Generator().manual_seed(0))
    w = torch.arange(1, E + 1, dtype=torch.float64) ** -alpha
    return [float(x) for x in (w / w.sum())[perm]]


def contiguous(load: list[float]) -> dict:
    return ref.gpu_step_time(load, [i // (E // G) for i in range(E)], G, H100, FP8, EB, FL)


def eplb(load: list[float], n_phys: int = E + 32) -> dict:
    plan = ref.rebalance(load, n_phys, G)
    cnt = plan["replica_count"]
    counts = [load[e] / cnt[e] for e in plan["phy2log"]]
    return ref.gpu_step_time(counts, [s // (n_phys // G) for s in range(n_phys)], G, H100, FP8, EB, FL)


def before_after() -> tuple[list[float], list[float]]:
    load = [32768 * K * p for p in zipf_share(1.0)]
    return contiguous(load)["per_gpu_s"], eplb(load)["per_gpu_s"]


def balance_svg() -> str:
    """Per-GPU time of one MoE layer (us), 32 GPUs, before (grey) and after EPLB (blue)."""
    before, after = before_after()
    W, H, L, R, T, B = 620, 280, 56, 16, 24, 40
    ymax = 2200.0
    bw = (W - L - R) / G

    def py(us):
        return T + (1 - us / ymax) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for us in (0, 500, 1000, 1500, 2000):
        out.append(f'<text x="{L - 4}" y="{py(us) + 4:.1f}" text-anchor="end">{us}</text>')
    for g in range(G):
        x = L + g * bw
        for k, (vals, color) in enumerate(((before, "#bbbbbb"), (after, "#1f77b4"))):
            us = vals[g] * 1e6
            out.append(f'<rect x="{x + 1 + k * (bw - 2) / 2:.1f}" y="{py(us):.1f}" width="{(bw - 2) / 2:.1f}" '
                       f'height="{py(0) - py(us):.1f}" fill="{color}"/>')
        if g % 4 == 0:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{H - B + 14}" text-anchor="middle">{g}</text>')
    mean = sum(before) / G * 1e6
    out.append(f'<line x1="{L}" y1="{py(mean):.1f}" x2="{W - R}" y2="{py(mean):.1f}" stroke="#d62728" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{W - R - 4}" y="{py(mean) - 4:.1f}" text-anchor="end" fill="#d62728">'
               f'mean {mean:.0f} us</text>')
    out.append(f'<text x="{L + 8}" y="{T + 14}" fill="#777">no replication: busiest GPU {max(before) * 1e6:.0f} us</text>')
    out.append(f'<text x="{L + 8}" y="{T + 28}" fill="#1f77b4">EPLB, 288 slots: busiest GPU {max(after) * 1e6:.0f} us</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">GPU (EP rank)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">MoE layer time (us)</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == balance_svg(), "regenerate the SVG: print(balance_svg())"


def test_eplb_readme_fixture():
    for w, want in zip(README_WEIGHT, README_PHY2LOG):
        assert ref.rebalance(w, 16, 8, 4, 2)["phy2log"] == want
    r0 = ref.rebalance(README_WEIGHT[0], 16, 8, 4, 2)
    assert r0["replica_count"] == [1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1]
    assert r0["gpu_load"] == [121.5, 86.5, 125.0, 113.0, 147.5, 131.5, 156.0, 152.0]
    # the global policy on the same weights (no locality constraint) balances better: 138.5 vs 156
    glob = ref.rebalance(README_WEIGHT[0], 16, 8)
    assert max(glob["gpu_load"]) == 138.5 and round(sum(README_WEIGHT[0]) / 8, 1) == 129.1
    assert glob["replica_count"] == r0["replica_count"]
    # 3 groups on 2 nodes: EPLB falls back to the global policy
    assert ref.rebalance(README_WEIGHT[0], 16, 8, 3, 2) == glob


def test_statement_examples():
    out = ref.gpu_step_time([400.0, 5.0, 0.0, 2000.0], [0, 0, 1, 1], 2, H100, FP8, EB, FL)
    assert [round(t * 1e6, 2) for t in out["per_gpu_s"]] == [30.95, 89.02]
    assert out["busiest_gpu"] == 1 and round(EB / H100.hbm_bytes_per_s * 1e6, 2) == 13.15
    assert EB == 44_040_192 and FL == 88_080_384
    s = ref.skew_threshold([1] * 256, 8, H100, FP8, EB, FL)
    assert round(s["ridge_tokens_per_expert"], 1) == 295.4
    assert round(s["ridge_tokens_per_expert"], 2) == 295.36 and round(s["threshold_batch"], 2) == 9451.46
    d = ref.decay_curve([[3000.0, 100.0, 100.0, 100.0], [100.0, 100.0, 100.0, 3000.0]], 6, 3, H100, FP8, EB, FL)
    assert d[0] == 1.0 and d[1] == pytest.approx(2.54397446681031, rel=1e-12)


def test_skew_threshold_and_ratios():
    assert round(EB / 1e6, 1) == 44.0 and round(EB / H100.hbm_bytes_per_s * 1e6, 1) == 13.1
    floor = (E // G) * EB / H100.hbm_bytes_per_s
    want = {0.0: (1.0, 9451, {8192: 1.00, 16384: 1.73}),
            0.6: (12.2, 777, {1024: 1.04, 4096: 1.53}),
            1.0: (41.8, 226, {1024: 1.44, 4096: 3.14})}
    for alpha, (hot, thr, ratios) in want.items():
        share = zipf_share(alpha)
        s = ref.skew_threshold(share, K, H100, FP8, EB, FL)
        assert round(s["hot_share"] * E, 1) == hot
        assert round(s["threshold_batch"]) == thr
        for B, r in ratios.items():
            assert round(contiguous([B * K * p for p in share])["step_s"] / floor, 2) == r
        # below the threshold the busiest GPU sits exactly on the memory floor
        below = contiguous([0.999 * s["threshold_batch"] * K * p for p in share])["step_s"]
        assert below == pytest.approx(floor, rel=1e-12)


def test_eplb_gain():
    before, after = before_after()
    assert round(max(before) * 1e6) == 2088 and round(sum(before) / G * 1e6) == 376
    assert round(max(after) * 1e6) == 383 and round(sum(after) / G * 1e6) == 376
    assert round(sum(before) / G / max(before), 2) == 0.18 and round(sum(after) / G / max(after), 2) == 0.98


def stale_curve(sigma: float) -> list[float]:
    share = torch.tensor(zipf_share(1.0), dtype=torch.float64)
    gen = torch.Generator().manual_seed(3)
    logp = torch.log(share)
    days = [[float(x) for x in share * 32768 * K]]
    for _ in range(7):
        logp = logp + sigma * torch.randn(E, generator=gen, dtype=torch.float64)
        days.append([float(x) for x in torch.softmax(logp, 0) * 32768 * K])
    return ref.decay_curve(days, E + 32, G, H100, FP8, EB, FL)


def test_stale_placement_decays():
    c2 = stale_curve(0.2)
    assert c2[0] == 1.0 and round(c2[1], 2) == 1.22 and round(c2[7], 2) == 1.84
    c5 = stale_curve(0.5)
    assert round(c5[1], 2) == 1.66
    assert all(3.1 <= round(x, 1) <= 3.5 for x in c5[4:])


if __name__ == "__main__":
    print(balance_svg())
