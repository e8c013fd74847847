"""Every figure of the moe-dispatch-bytes statement and editorial, computed by the reference; the
editorial's NIC/NVLink picture is regenerated here from the reference and must match."""

import random
from functools import lru_cache
from pathlib import Path

from inferprep import specs
from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "moe_dispatch_bytes.py", "ref_moe_dispatch_bytes")
EDITORIAL = ROOT / "exercises" / "moe-dispatch-bytes" / "editorial.md"
M = specs.DEEPSEEK_V3
N_TOKENS = 4096
EPS = (32, 64, 128, 256)
MODES = (("per expert", False, "per_expert"), ("node dedup", False, "node_dedup"),
         ("dedup + groups", True, "node_dedup"))


@lru_cache(maxsize=None)
def routed(limited: bool):
    """4,096 tokens with uniform random scores (random.Random(1234)), routed by the reference."""
    rng = random.Random(1234)
    scores = [[rng.random() for _ in range(M.n_routed_experts)] for _ in range(N_TOKENS)]
    return ref.route_experts(M, scores, limited)


@lru_cache(maxsize=None)
def split(n_gpus: int, limited: bool, mode: str) -> dict:
    """Per-token averages of one MoE layer; token t lives on GPU t % n_gpus (8 GPUs per node)."""
    src = [t % n_gpus for t in range(N_TOKENS)]
    r = ref.link_traffic(M, routed(limited), src, n_gpus, 8, mode)
    return {k: v / N_TOKENS for k, v in r.items()}


def copies_svg() -> str:
    """Stacked bars: NIC and NVLink copies per token per MoE layer, DeepSeek-V3, EP32..EP256."""
    W, H, L, T, B = 600, 320, 50, 30, 80
    ymax = 16.0
    plot_h = H - T - B
    group_w = (W - L - 20) / len(EPS)
    bar_w = group_w / 4.5

    def py(v):
        return T + plot_h * (1 - v / ymax)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<line x1="{L}" y1="{T + plot_h}" x2="{W - 20}" y2="{T + plot_h}" stroke="#999"/>']
    for v in range(0, 17, 4):
        out.append(f'<text x="{L - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v}</text>')
        out.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W - 20}" y2="{py(v):.1f}" stroke="#eee"/>')
    out.append(f'<text x="14" y="{T + plot_h / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {T + plot_h / 2:.0f})">copies per token per layer</text>')
    for gi, ep in enumerate(EPS):
        x0 = L + gi * group_w + bar_w * 0.5
        for mi, (label, limited, mode) in enumerate(MODES):
            s = split(ep, limited, mode)
            x = x0 + mi * bar_w * 1.2
            nic, nvl = s["nic_copies"], s["nvlink_copies"]
            out.append(f'<rect x="{x:.1f}" y="{py(nic):.1f}" width="{bar_w:.1f}" '
                       f'height="{py(0) - py(nic):.1f}" fill="#d62728"/>')
            out.append(f'<rect x="{x:.1f}" y="{py(nic + nvl):.1f}" width="{bar_w:.1f}" '
                       f'height="{py(nic) - py(nic + nvl):.1f}" fill="#1f77b4"/>')
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{py(nic) - 3:.1f}" text-anchor="middle" '
                       f'font-size="9" fill="#fff">{nic:.1f}</text>' if nic >= 1.2 else "")
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{T + plot_h + 12}" text-anchor="middle" '
                       f'font-size="9">{"PE ND NL".split()[mi]}</text>')
        out.append(f'<text x="{x0 + 1.7 * bar_w:.1f}" y="{T + plot_h + 28}" text-anchor="middle">'
                   f'EP{ep} ({ep // 8} nodes)</text>')
    out.append(f'<rect x="{L + 10}" y="{T - 22}" width="10" height="10" fill="#d62728"/>'
               f'<text x="{L + 24}" y="{T - 13}">NIC (RDMA) copies</text>')
    out.append(f'<rect x="{L + 150}" y="{T - 22}" width="10" height="10" fill="#1f77b4"/>'
               f'<text x="{L + 164}" y="{T - 13}">NVLink copies</text>')
    out.append(f'<text x="{W / 2:.0f}" y="{H - 26}" text-anchor="middle">PE: per expert; ND: node dedup; '
               'NL: node dedup + 4-group routing limit</text>')
    out.append(f'<text x="{W / 2:.0f}" y="{H - 8}" text-anchor="middle">DeepSeek-V3, 4,096 tokens '
               'with uniform random scores, 8 GPUs per node</text>')
    out.append("</svg>")
    return "\n".join(o for o in out if o)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == copies_svg(), "regenerate the SVG: print(copies_svg())"


def test_payloads():
    p = ref.payload_bytes(M)
    assert (p["dispatch_copy_bytes"], p["combine_copy_bytes"], p["per_token_per_layer"],
            p["moe_layers"], p["per_token_per_step"]) == (7392, 14336, 173824, 58, 10_081_792)
    assert 7168 // 128 == 56
    assert round(p["per_token_per_step"] / 1e6, 2) == 10.08
    ll = ref.payload_bytes(M, low_latency=True)
    assert (ll["dispatch_copy_bytes"], ll["per_token_per_layer"], ll["per_token_per_step"]) == \
        (7408, 173952, 10_089_216)
    assert ref.payload_bytes(M, "bf16")["per_token_per_layer"] == 229_376
    # the classic slips
    assert 8 * (7168 + 14336) == 172_032 and 8 * (7392 + 14336) * 61 == 10_603_264
    assert 8 * (7392 + 7392) == 118_272 and 9 * (7392 + 14336) == 195_552
    # the question's "twice per layer, 58 times per step"
    assert 2 * p["moe_layers"] == 116
    k2 = ref.payload_bytes(specs.KIMI_K2)
    assert (k2["moe_layers"], k2["per_token_per_step"]) == (60, 10_429_440)


def test_worked_example():
    row = [[0, 17, 18, 130, 131, 200, 250, 255]]
    pe = ref.link_traffic(M, row, [3], 16, 8, "per_expert")
    nd = ref.link_traffic(M, row, [3], 16, 8, "node_dedup")
    assert (pe["nic_copies"], pe["nvlink_copies"], pe["local_copies"], pe["nic_bytes"]) == (5, 3, 0, 108_720)
    assert (nd["nic_copies"], nd["nvlink_copies"], nd["local_copies"], nd["nvlink_bytes"]) == (1, 5, 0, 108_640)
    toy = load_module(ROOT / "exercises" / "moe-dispatch-bytes" / "examples.py", "ex_moe_dispatch").TOY
    r = [1.0, 0, 0, 0, 0.75, 0.75, 0, 0, 0.625, 0.625, 0, 0, 0.875, 0.0625, 0, 0]
    assert ref.route_experts(toy, [r], True) == [[4, 5, 8]]
    assert ref.route_experts(toy, [r], False) == [[0, 12, 4]]


def test_monte_carlo_table():
    rows = {}
    for ep in EPS:
        rows[ep] = [split(ep, limited, mode) for _, limited, mode in MODES]
    r64 = rows[64]
    assert [round(s["nic_copies"], 2) for s in r64] == [7.02, 4.64, 3.47]
    assert [round(s["nvlink_copies"], 2) for s in r64] == [0.85, 6.72, 6.56]
    assert [round(s["nic_bytes"]) for s in r64] == [152_537, 100_826, 75_486]
    assert round(100 * (1 - r64[2]["nic_bytes"] / r64[0]["nic_bytes"])) == 51
    assert [round(s["nic_copies"], 2) for s in rows[32]] == [5.99, 2.70, 2.33]
    assert [round(s["nic_copies"], 2) for s in rows[128]] == [7.50, 6.13, 5.37]
    assert [round(s["nic_copies"], 2) for s in rows[256]] == [7.76, 7.05, 6.66]
    # decode: 128 tokens per GPU (DeepEP's low-latency setting), 58 layers, 50 GB/s NIC per GPU
    nic = specs.H100_SXM.nic_bytes_per_s
    per_gpu = [128 * 58 * s["nic_bytes"] for s in r64]
    assert [round(b / 1e6) for b in per_gpu] == [1132, 749, 560]
    assert [round(1e3 * b / nic, 1) for b in per_gpu] == [22.6, 15.0, 11.2]


if __name__ == "__main__":
    print(copies_svg())
