"""Every figure of the tree-attention-mask statement and editorial, computed by the reference; the
editorial's picture (the ten-node tree and its mask) is regenerated here and must match."""

from pathlib import Path

import pytest
import torch

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.step_model import StepModel

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "tree_attention_mask.py", "ref_tree_attention_mask")
EDITORIAL = ROOT / "exercises" / "tree-attention-mask" / "editorial.md"
P = [0.60, 0.15, 0.08, 0.05]
PRESET = StepModel(specs.LLAMA_3_1_70B, specs.H100_SXM, 8, mfu=0.6, mbu=0.8, t_fixed_s=0.003)
S_8B = StepModel(specs.LLAMA_3_1_8B, specs.H100_SXM, 1, mfu=0.5, mbu=0.8, t_fixed_s=0.002)
EXAMPLE = [-1, 0, 1, 1, 0, 2]


def tree_mask_svg() -> str:
    """Left: the best ten-node tree drawn by depth; right: its tree mask (prefix columns omitted)."""
    parents, ranks = ref.best_tree(10, P)
    depth = ref._depths(parents)
    mask = ref.tree_attention_mask(parents, 0)
    n = len(parents)
    cell, gx, gy = 22, 350, 40
    W, H = gx + n * cell + 20, gy + n * cell + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">']
    # the tree: x by depth, y by depth-first order
    order, stack = [], [0]
    while stack:
        u = stack.pop()
        order.append(u)
        stack.extend(sorted((v for v in range(1, n) if parents[v] == u), reverse=True))
    xy = {u: (30 + 44 * depth[u], gy + 11 + cell * k) for k, u in enumerate(order)}
    for v in range(1, n):
        (x0, y0), (x1, y1) = xy[parents[v]], xy[v]
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#999"/>')
    for u in range(n):
        x, y = xy[u]
        fill = "#fdd49e" if u == 0 else "#c6dbef"
        out.append(f'<circle cx="{x}" cy="{y}" r="9" fill="{fill}" stroke="#555"/>')
        out.append(f'<text x="{x}" y="{y + 4}" text-anchor="middle">{u}</text>')
        if u:
            p_path = 1.0
            v = u
            while v:
                p_path *= P[ranks[v] - 1]
                v = parents[v]
            out.append(f'<text x="{x + 12}" y="{y - 5}" fill="#555" font-size="9">'
                       f'r{ranks[u]} {p_path:.3f}</text>')
    out.append(f'<text x="30" y="{gy - 14}">tree (rank, P(accepted))</text>')
    for d in range(max(depth) + 1):
        out.append(f'<text x="{30 + 44 * d}" y="{H - 8}" text-anchor="middle">S+{d}</text>')
    # the mask
    out.append(f'<text x="{gx}" y="{gy - 14}">mask: row = query node, column = key node</text>')
    for i in range(n):
        out.append(f'<text x="{gx - 4}" y="{gy + cell * i + 15}" text-anchor="end">{i}</text>')
        out.append(f'<text x="{gx + cell * i + 11}" y="{gy - 3}" text-anchor="middle">{i}</text>')
        for j in range(n):
            fill = "#08519c" if bool(mask[i, j]) else "#f0f0f0"
            out.append(f'<rect x="{gx + cell * j}" y="{gy + cell * i}" width="{cell - 2}" '
                       f'height="{cell - 2}" fill="{fill}"/>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == tree_mask_svg(), "regenerate the SVG: print(tree_mask_svg())"


def test_statement_example():
    assert ref._depths(EXAMPLE) == [0, 1, 2, 2, 1, 3]
    assert ref.tree_position_ids(EXAMPLE, 100).tolist() == [100, 101, 102, 102, 101, 103]
    rows = ["".join("1" if x else "0" for x in r) for r in ref.tree_attention_mask(EXAMPLE, 0).tolist()]
    assert rows == ["100000", "110000", "111000", "110100", "100010", "111001"]
    m = ref.tree_attention_mask(EXAMPLE, 100)
    assert m.shape == (6, 106) and m.dtype == torch.bool and bool(m[:, :100].all())
    out = ref.accept_tree(EXAMPLE, [5, 11, 12, 13, 21, 14], [11, 12, 99, 7, 7, 15])
    assert out == {"path": [1, 2], "emitted": [11, 12, 99]}


def test_ten_node_tree_story():
    parents, ranks = ref.best_tree(10, P)
    assert parents == [-1, 0, 1, 2, 0, 3, 4, 1, 0, 5, 6]
    assert ranks == [0, 1, 1, 1, 2, 1, 1, 2, 3, 1, 1]
    assert max(ref._depths(parents)) == 5
    r = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 1)
    assert round(r["tree_accepted"], 3) == 1.847 and round(r["chain_accepted"], 3) == 1.383
    assert round(1 + r["tree_accepted"], 3) == 2.847 and round(1 + r["chain_accepted"], 3) == 2.383
    assert round(1e3 * r["tree_step_s"], 2) == 9.49 and round(1e3 * r["chain_step_s"], 2) == 9.49
    assert round(100 * (r["throughput_ratio"] - 1)) == 19
    assert round(100 * (r["throughput_ratio"] - 1), 1) == 19.5
    assert r["throughput_ratio"] == pytest.approx(1.1946735176467822, rel=1e-12)
    assert ref.crossover_batch(PRESET, parents, ranks, P, 5, 512, 1024) == 26
    assert ref.crossover_batch(PRESET, parents, ranks, P, 5, 4096, 1024) == 27
    assert 26 * 11 == 286 and round(PRESET.gemm_knee_tokens(), 1) == 224.9
    r25 = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 25)
    r26 = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 26)
    assert round(r25["throughput_ratio"], 3) == 1.028 and round(r26["throughput_ratio"], 4) == 0.9997
    r1024 = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 1024)
    assert round(r1024["throughput_ratio"], 3) == 0.669
    assert round((1 + r["tree_accepted"]) / 11 / ((1 + r["chain_accepted"]) / 6), 3) == 0.652


def test_other_figures():
    parents, ranks = ref.best_tree(10, P)
    t5, r5 = ref.best_tree(5, P)
    assert t5 == [-1, 0, 1, 2, 0, 3] and round(ref.expected_accepted(t5, r5, P), 3) == 1.456
    assert round(ref.tree_vs_chain(PRESET, t5, r5, P, 5, 512, 1)["throughput_ratio"], 3) == 1.030
    c10 = ref.tree_vs_chain(PRESET, parents, ranks, P, 10, 512, 1)
    assert round(c10["chain_accepted"], 3) == 1.491 and round(c10["throughput_ratio"], 3) == 1.143
    assert [ref.crossover_batch(S_8B, parents, ranks, P, 5, c, 1024) for c in (512, 4096)] == [22, 25]
    assert round(S_8B.gemm_knee_tokens(), 1) == 198.5
    # a tree equal to the chain never wins: the crossover is batch 1
    assert ref.crossover_batch(PRESET, [-1, 0, 1, 2, 3, 4], [0] + [1] * 5, [0.5, 0.25], 5, 512, 64) == 1


if __name__ == "__main__":
    print(tree_mask_svg())


def test_editorial_cost_table():
    parents, ranks = ref.best_tree(10, P)
    chain10 = ref.tree_vs_chain(PRESET, parents, ranks, P, 10, 512, 1)["chain_accepted"]
    chain5 = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 1)["chain_accepted"]
    assert round(chain10 - chain5, 3) == 0.108
    # the GEMMs turn compute-bound: tree at batch 21 (231 tokens), chain at batch 37 (222 tokens,
    # below the knee because the knee leaves out the LM head's FLOPs)
    knee = PRESET.gemm_knee_tokens()

    def bound(b, q):
        return PRESET.breakdown([(q, 512, q)] * b)["gemm_bound"]
    assert bound(20, 11) == "memory" and bound(21, 11) == "compute"
    assert bound(36, 6) == "memory" and bound(37, 6) == "compute"
    assert 20 * 11 < knee < 21 * 11 and round(knee) == 225
    r25 = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 25)["throughput_ratio"]
    r26 = ref.tree_vs_chain(PRESET, parents, ranks, P, 5, 512, 26)["throughput_ratio"]
    assert round(100 * (r25 - 1), 1) == 2.8 and round(100 * (1 - r26), 2) == 0.03
