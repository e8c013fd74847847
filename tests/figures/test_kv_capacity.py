"""Every figure of the kv-capacity statement and editorial, computed by the reference; the
editorial's budget picture is regenerated here from the reference and must match."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType, ModelConfig

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "kv_capacity.py", "ref_kv_capacity")
EDITORIAL = ROOT / "exercises" / "kv-capacity" / "editorial.md"
GiB = 2**30
BF = DType.BF16

# Qwen/Qwen3-0.6B config.json (https://huggingface.co/Qwen/Qwen3-0.6B/blob/main/config.json):
# num_hidden_layers 28, num_attention_heads 16, num_key_value_heads 8, head_dim 128.
QWEN3_SHAPE = ModelConfig(name="qwen3-0.6b-shape", n_layers=28, hidden_size=1024, n_heads=16,
                          n_kv_heads=8, head_dim=128, ffn_size=3072, vocab_size=151936,
                          tied_embeddings=True, max_context=40960)
LOG = dict(total=round(79.19 * GiB), weights=round(1.12 * GiB), act=round(0.23 * GiB),
           non_torch=round(0.16 * GiB))
LLAMA70_BF16 = 70_552_387_584 * 2
L70 = specs.LLAMA_3_1_70B


def log_case(**kw):
    a = dict(total_bytes=LOG["total"], gpu_memory_utilization=0.8,
             weight_bytes_per_gpu=LOG["weights"], activation_peak_bytes=LOG["act"],
             non_torch_bytes=LOG["non_torch"], cudagraph_bytes=0, model=QWEN3_SHAPE, tp=1,
             kv_dtype=BF, block_size=16, context_len=8192, max_num_seqs=256)
    a.update(kw)
    return ref.kv_capacity(**a)


def llama(tp, L=4000):
    return ref.kv_capacity(LOG["total"], 0.9, LLAMA70_BF16 // tp, 2 * GiB, GiB // 2, GiB, L70, tp,
                           BF, 16, L, 256)


def budget_svg() -> str:
    """Stacked bars: one H100 (79.19 GiB reported) serving Llama 3.1 70B at TP 4, 8, 16."""
    W, L, R, T, bar, gap = 600, 50, 20, 44, 26, 30
    H = T + 3 * (bar + gap) + 20
    total = LOG["total"]
    scale = (W - L - R) / total
    colors = {"weights": "#7f7f7f", "reserved": "#ff7f0e", "kv": "#1f77b4", "headroom": "#e0e0e0"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<text x="{L}" y="16">one H100 (79.19 GiB reported), Llama 3.1 70B BF16, util 0.9, '
           '4,000-token sequences</text>']
    for i, tp in enumerate((4, 8, 16)):
        r = llama(tp)
        y = T + i * (bar + gap)
        w = LLAMA70_BF16 // tp
        reserved = r["requested_bytes"] - w - r["available_kv_bytes"]
        parts = [("weights", w), ("reserved", reserved), ("kv", r["available_kv_bytes"]),
                 ("headroom", total - r["requested_bytes"])]
        x = float(L)
        for key, b in parts:
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{b * scale:.1f}" height="{bar}" '
                       f'fill="{colors[key]}"/>')
            x += b * scale
        out.append(f'<text x="{L - 6}" y="{y + bar / 2 + 4:.0f}" text-anchor="end">TP {tp}</text>')
        out.append(f'<text x="{L}" y="{y - 5}">weights {w / GiB:.1f} GiB, KV '
                   f'{r["available_kv_bytes"] / GiB:.1f} GiB: {r["num_blocks"]:,} blocks, '
                   f'{r["max_seqs"]} seqs, {r["kv_heads_per_gpu"]} KV head(s)/GPU</text>')
    y = T + 3 * (bar + gap) - 12
    x = L
    for key, label in (("weights", "weights / tp"), ("reserved", "activation + non-torch + graphs"),
                       ("kv", "KV pool"), ("headroom", "1 - util")):
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colors[key]}"/>')
        out.append(f'<text x="{x + 16}" y="{y + 10}">{label}</text>')
        x += 26 + 6.2 * len(label)
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == budget_svg(), "regenerate the SVG: print(budget_svg())"


def test_statement_example_and_log():
    assert (LOG["total"], LOG["weights"], LOG["act"], LOG["non_torch"]) == (
        85_029_615_043, 1_202_590_843, 246_960_620, 171_798_692)
    r = log_case()
    assert r["requested_bytes"] == 68_023_692_035 and r["available_kv_bytes"] == 66_402_341_880
    assert r["kv_bytes_per_token_per_gpu"] == 114_688 and r["page_bytes"] == 1_835_008
    assert (r["num_blocks"], r["blocks_per_seq"], r["max_seqs"], r["binding"]) == (36_186, 512, 70, "kv_pool")
    assert r["vllm_max_concurrency"] == 70.67578125
    assert round(r["requested_bytes"] / GiB, 2) == 63.35          # log: 63.35GiB
    assert round(r["available_kv_bytes"] / GiB, 2) == 61.84       # log: 61.84GiB
    assert round(r["available_kv_bytes"] / GiB, 3) == 61.842
    assert round(36_184 * 16 / 8192, 2) == 70.67                  # the logged blocks, the logged 70.67x
    assert round(r["vllm_max_concurrency"], 2) == 70.68
    assert 36_186 - 36_184 == 2 and 2 * r["page_bytes"] / 2**20 == 3.5 and 0.01 * GiB > 2 * r["page_bytes"]
    assert round(36_184 * r["page_bytes"] / GiB, 3) == 61.838
    # the 4 GiB CPU swap space of the same log: "# CPU blocks: 2340"
    assert int(4 * GiB // r["page_bytes"]) == 2340
    assert round(LOG["total"] / 1e9, 2) == 85.03
    assert 81_559 * 2**20 == 85_520_809_984
    # the colleague's naive figure
    assert (r["requested_bytes"] - LOG["weights"]) // (8192 * 114_688) == 71
    # with the 0.13 GiB the log's graph capture took, subtracted (vLLM >= 0.21 behaviour)
    g = log_case(cudagraph_bytes=round(0.13 * GiB))
    assert round(0.13 * GiB) == 139_586_437
    assert (g["num_blocks"], g["max_seqs"]) == (36_110, 70)


def test_llama_70b():
    assert round(LLAMA70_BF16 / 1e9, 1) == 141.1
    assert [LLAMA70_BF16 // tp for tp in (4, 8, 16)] == [35_276_193_792, 17_638_096_896, 8_819_048_448]
    want = {4: (2, 81_920, 28_604, 114, 114, "kv_pool", 37.49),
            8: (1, 40_960, 84_122, 336, 256, "max_num_seqs", 55.13),
            16: (1, 40_960, 97_579, 390, 256, "max_num_seqs", 63.95)}
    for tp, (h, kv, nb, ms, eff, bind, avail_gb) in want.items():
        r = llama(tp)
        assert (r["kv_heads_per_gpu"], r["kv_bytes_per_token_per_gpu"], r["num_blocks"],
                r["max_seqs"], r["max_seqs_effective"], r["binding"]) == (h, kv, nb, ms, eff, bind)
        assert round(r["available_kv_bytes"] / 1e9, 2) == avail_gb
        assert r["requested_bytes"] - LLAMA70_BF16 // tp - r["available_kv_bytes"] == 3.5 * GiB
    # the naive K / tp split at TP 16: half a head -> twice the sequences
    r16 = llama(16)
    assert r16["num_blocks"] // 250 * 2 == 780
    # block rounding at 4,001 tokens: 251 blocks = 4,016 slots
    r = llama(16, 4001)
    assert (r["blocks_per_seq"], r["blocks_per_seq"] * 16, r["max_seqs"]) == (251, 4016, 388)
    assert r["vllm_max_concurrency"] == pytest.approx(97_579 / 251, rel=1e-15)
    assert round(97_579 * 16 / 4001, 2) == 390.22 and round(97_579 / 251, 2) == 388.76
    assert (llama(4, 4001)["max_seqs"], llama(8, 4001)["max_seqs"]) == (113, 335)
    assert r["requested_bytes"] == 76_526_653_539 and r["available_kv_bytes"] == 63_949_508_707


def test_mla_on_every_rank():
    per = {tp: ref.kv_capacity(150_000_000_000, 0.9, 10**9, GiB, 0, 0, specs.DEEPSEEK_V3, tp, BF,
                               64, 4096, 256)["kv_bytes_per_token_per_gpu"] for tp in (1, 8, 16)}
    assert per == {1: 70_272, 8: 70_272, 16: 70_272}


def test_ceiling_reasons():
    assert ref.ceiling_reasons() == ["growth-preemption", "max-num-seqs", "rank-minimum",
                                     "reserved-before-kv", "whole-blocks"]


if __name__ == "__main__":
    print(budget_svg())
