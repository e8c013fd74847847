"""Every figure of the context-parallel-ring statement and editorial, computed by the reference;
the editorial's picture of which rank computes which causal tile is regenerated here and must
match."""

import math
import threading
from pathlib import Path

import pytest
import torch

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.ring import RingNetwork
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "context_parallel_ring.py", "ref_context_parallel_ring")
EDITORIAL = ROOT / "exercises" / "context-parallel-ring" / "editorial.md"
L70, H100, BF16 = specs.LLAMA_3_1_70B, specs.H100_SXM, DType.BF16
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]


def tiles(p: int, scheme: str) -> dict:
    """(query chunk, key chunk) -> rank computing it, on 2p chunks, by the causal_work rule."""
    N = 2 * p
    owner = {}
    for r in range(p):
        runs = [(int(x), int(x) + 1) for x in ref.shard_positions(N, p, r, scheme)] if scheme == "zigzag" \
            else [(2 * r, 2 * r + 2)]
        for qa, qb in runs:
            for s in range(p):
                src = (r - s) % p
                kruns = [(int(x), int(x) + 1) for x in ref.shard_positions(N, p, src, scheme)] if scheme == "zigzag" \
                    else [(2 * src, 2 * src + 2)]
                for ka, kb in kruns:
                    if ka <= qb - 1:
                        for qc in range(qa, qb):
                            for kc in range(ka, kb):
                                owner[(qc, kc)] = r
    return owner


def tiles_svg() -> str:
    p, cell, gap, top, left = 4, 22, 60, 40, 30
    size = 2 * p * cell
    W, H = left + 2 * size + gap + 20, top + size + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">']
    for k, scheme in enumerate(("contiguous", "zigzag")):
        x0 = left + k * (size + gap)
        work = ref.causal_work(2 * p * 16, p, scheme)
        out.append(f'<text x="{x0 + size / 2}" y="{top - 22}" text-anchor="middle" font-weight="bold">{scheme}'
                   f' (efficiency {work["efficiency"]:.3g})</text>')
        out.append(f'<text x="{x0 + size / 2}" y="{top - 8}" text-anchor="middle">key chunk &#8594;</text>')
        own = tiles(p, scheme)
        for qc in range(2 * p):
            for kc in range(2 * p):
                fill = COLORS[own[(qc, kc)]] if (qc, kc) in own else "#f2f2f2"
                out.append(f'<rect x="{x0 + kc * cell}" y="{top + qc * cell}" width="{cell - 1}" height="{cell - 1}" '
                           f'fill="{fill}"/>')
        per = work["per_rank"]
        out.append(f'<text x="{x0}" y="{top + size + 18}">work per rank (N = 128, one head):</text>')
        out.append(f'<text x="{x0}" y="{top + size + 34}">' + " ".join(
            f'<tspan fill="{COLORS[r]}">{per[r]}</tspan>' for r in range(p)) + '</text>')
    out.append(f'<text x="12" y="{top + size / 2}" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + size / 2})">query chunk &#8594;</text>')
    out.append(f'<text x="{left}" y="{H - 8}">colour = rank that computes the tile (ranks 0-3); grey = skipped'
               ' (fully masked)</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == tiles_svg(), "regenerate the SVG: print(tiles_svg())"


def test_picture_matches_work_accounting():
    for scheme in ("contiguous", "zigzag"):
        own = tiles(4, scheme)
        per = ref.causal_work(8, 4, scheme)["per_rank"]
        assert [sum(1 for r in own.values() if r == k) for k in range(4)] == per


def _ring(p, N, hq, hkv, d, dtype, scheme):
    gen = torch.Generator().manual_seed(0)
    Q = torch.randn(hq, N, d, generator=gen, dtype=torch.float64).to(dtype)
    K = torch.randn(hkv, N, d, generator=gen, dtype=torch.float64).to(dtype)
    V = torch.randn(hkv, N, d, generator=gen, dtype=torch.float64).to(dtype)
    g = hq // hkv
    s = (Q.double() @ K.double().repeat_interleave(g, 0).transpose(1, 2)) / math.sqrt(d)
    s = s.masked_fill(torch.triu(torch.ones(N, N, dtype=torch.bool), 1), float("-inf"))
    want = torch.softmax(s, -1) @ V.double().repeat_interleave(g, 0)
    net, outs = RingNetwork(p), [None] * p

    def run(r):
        pos = ref.shard_positions(N, p, r, scheme)
        outs[r] = ref.ring_attention(Q[:, pos], K[:, pos], V[:, pos], net.comm(r), N, scheme)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(p)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = torch.zeros_like(want)
    for r in range(p):
        got[:, ref.shard_positions(N, p, r, scheme)] = outs[r].double()
    return (got - want).abs().max().item(), [net.bytes_sent(r) for r in range(p)]


def test_ring_equals_full_attention():
    for scheme in ("contiguous", "zigzag"):
        err, sent = _ring(4, 64, 2, 2, 16, torch.float64, scheme)
        assert err < 1e-14
        assert sent == [3 * 2 * 2 * 16 * 16 * 8] * 4


def test_statement_examples():
    assert ref.shard_positions(64, 4, 1, "zigzag").tolist() == list(range(8, 16)) + list(range(48, 56))
    c = ref.causal_work(64, 4, "contiguous")
    assert c["per_rank"] == [256, 512, 768, 1024] and c["makespan"] == 1024 and c["efficiency"] == 0.625
    z = ref.causal_work(64, 4, "zigzag")
    assert z["work"] == [[192, 128, 128, 128]] * 4 and z["per_rank"] == [576] * 4 and z["efficiency"] == 1.0
    t = ref.cp_traffic(L70, 131072, 8, BF16)
    assert t["cp_bytes_per_layer"] == 0.4375 * 2**30 and t["tp_bytes_per_layer"] == 7 * 2**30
    assert t["tp_over_cp"] == 16.0
    assert round(ref.overlap_threshold(L70, H100, BF16, "nvlink", 1.0, "contiguous"), 2) == 274.83
    assert ref.overlap_threshold(L70, H100, BF16, "nic", 1.0, "zigzag") == pytest.approx(4947.0, rel=1e-12)


def test_efficiency_formula():
    for p in (2, 3, 8, 16, 32):
        assert ref.causal_work(2 * p * 8, p, "contiguous")["efficiency"] == pytest.approx((p + 1) / (2 * p), rel=1e-12)
        assert ref.causal_work(2 * p * 8, p, "zigzag")["efficiency"] == 1.0
    assert [round((p + 1) / (2 * p), 3) for p in (8, 16, 32)] == [0.562, 0.531, 0.516]


def test_traffic_figures():
    t = ref.cp_traffic(L70, 131072, 8, BF16)
    assert (round(t["cp_bytes_per_layer"] / 2**30, 2), round(t["cp_bytes"] / 2**30), round(t["tp_bytes_per_layer"] / 2**30, 2)) \
        == (0.44, 35, 7.00)
    t = ref.cp_traffic(L70, 1 << 20, 8, BF16)
    assert (t["cp_bytes_per_layer"] / 2**30, t["cp_bytes"] / 2**30, t["tp_bytes_per_layer"] / 2**30) == (3.5, 280.0, 56.0)
    t = ref.cp_traffic(L70, 1 << 20, 16, BF16)
    assert (t["cp_bytes_per_layer"] / 2**30, t["cp_bytes"] / 2**30, t["tp_bytes_per_layer"] / 2**30) == (3.75, 300.0, 60.0)
    assert t["tp_over_cp"] == 16.0
    assert ref.cp_traffic(specs.LLAMA_3_1_8B, 1 << 20, 8, BF16)["tp_over_cp"] == 8.0


def test_overlap_thresholds():
    got = {(link, eff, sc): round(ref.overlap_threshold(L70, H100, BF16, link, eff, sc))
           for link in ("nvlink", "nic") for eff in (1.0, 0.5) for sc in ("contiguous", "zigzag")}
    assert got == {("nvlink", 1.0, "contiguous"): 275, ("nvlink", 1.0, "zigzag"): 550,
                   ("nvlink", 0.5, "contiguous"): 137, ("nvlink", 0.5, "zigzag"): 275,
                   ("nic", 1.0, "contiguous"): 2474, ("nic", 1.0, "zigzag"): 4947,
                   ("nic", 0.5, "contiguous"): 1237, ("nic", 0.5, "zigzag"): 2474}
    mha = __import__("dataclasses").replace(L70, n_kv_heads=64)
    assert ref.overlap_threshold(mha, H100, BF16, "nic", 1.0, "zigzag") == pytest.approx(8 * 4947.0, rel=1e-12)
    # a 128K prompt over 8 ranks is 16,384 tokens per rank: hidden even over the NIC
    assert 131072 // 8 == 16384 > 4947


if __name__ == "__main__":
    print(tiles_svg())
