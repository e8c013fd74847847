"""Every figure of the disagg-kv-transfer statement and editorial, computed by the reference; the
editorial's picture (per-GPU link rate vs prompt length) is regenerated here and must match."""

import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType, ModelConfig

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "disagg_kv_transfer.py", "ref_disagg_kv_transfer")
EDITORIAL = ROOT / "exercises" / "disagg-kv-transfer" / "editorial.md"
BF16, FP8 = DType.BF16, DType.FP8
H100, H200, B200 = specs.H100_SXM, specs.H200_SXM, specs.B200
L8, L70, DS3, K2 = specs.LLAMA_3_1_8B, specs.LLAMA_3_1_70B, specs.DEEPSEEK_V3, specs.KIMI_K2
# meta-llama/Llama-2-7b-hf config.json: MHA (32 KV heads), 512 KiB of BF16 KV per token.
MHA_7B = ModelConfig(name="Llama-2-7B", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32,
                     head_dim=128, ffn_size=11008, vocab_size=32000, max_context=4096)


def rate(m, gpu, n, cdt, P=None, kdt=BF16, mfu=0.5):
    return ref.kv_transfer_rate(m, gpu, n, cdt, mfu, kdt, P)


LINES = [  # (label, model, gpu, n_gpus, compute dtype, colour)
    ("Llama-2-7B (MHA), 1 B200, FP8", MHA_7B, B200, 1, FP8, "#d62728"),
    ("Llama-2-7B (MHA), 1 H100, FP8", MHA_7B, H100, 1, FP8, "#ff7f0e"),
    ("Llama 3.1 8B, 1 B200, FP8", L8, B200, 1, FP8, "#9467bd"),
    ("Llama 3.1 8B, 1 H100, BF16", L8, H100, 1, BF16, "#1f77b4"),
    ("Llama 3.1 70B, 8 H100, FP8", L70, H100, 8, FP8, "#2ca02c"),
    ("DeepSeek-V3, 32 H100, FP8", DS3, H100, 32, FP8, "#8c564b"),
]


def link_svg() -> str:
    """Per-GPU KV rate (GB/s) vs prompt length, MFU 0.5, BF16 KV, against a 400 Gb/s NIC."""
    W, H, L, R, T, B = 620, 320, 50, 210, 20, 40
    xmin, xmax, ymax = 10, 17, 100.0                     # log2 prompt length; GB/s

    def px(P):
        return L + (math.log2(P) - xmin) / (xmax - xmin) * (W - L - R)

    def py(gbs):
        return T + (ymax - min(gbs, ymax)) / ymax * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#999"/>']
    for e in range(xmin, xmax + 1):
        out.append(f'<text x="{px(2 ** e):.1f}" y="{H - B + 14}" text-anchor="middle">{2 ** (e - 10)}K</text>')
    for v in (0, 25, 50, 75, 100):
        out.append(f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v}</text>')
    out.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 8}" text-anchor="middle">prompt length (tokens)</text>')
    out.append(f'<text x="14" y="{(T + H - B) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(T + H - B) / 2:.0f})">KV GB/s per GPU</text>')
    nic = H100.nic_bytes_per_s / 1e9
    for v, label in ((nic, "400 Gb/s NIC: breaks above"), (nic / 2, "tight above")):
        out.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W - R}" y2="{py(v):.1f}" stroke="#000" '
                   f'stroke-dasharray="{"6,3" if v == nic else "2,3"}"/>')
        out.append(f'<text x="{L + 4}" y="{py(v) - 4:.1f}">{label}</text>')
    for k, (label, m, gpu, n, cdt, colour) in enumerate(LINES):
        pts = [(P, rate(m, gpu, n, cdt, P)["bytes_per_s_per_gpu"] / 1e9)
               for P in (2 ** e for e in range(xmin, xmax + 1))]
        path = " ".join(f"{px(P):.1f},{py(v):.1f}" for P, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        y = T + 12 + 16 * k
        out.append(f'<line x1="{W - R + 8}" y1="{y - 4}" x2="{W - R + 22}" y2="{y - 4}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 26}" y="{y}" font-size="10">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def test_editorial_picture_is_current():
    text = EDITORIAL.read_text()
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    assert text[start:end] == link_svg(), "regenerate the SVG: print(link_svg())"


def test_statement_example():
    assert ref.kv_bytes_per_token(L8, BF16) == 131_072
    assert ref.kv_bytes_per_token(DS3, BF16) == 70_272
    assert ref.prefill_flops_per_token(L8) == 13_958_643_712
    assert ref.prefill_flops_per_token(L8, 8192) == 16_106_517_760
    r = rate(L8, H100, 1, BF16)
    assert round(r["prefill_s_per_token"] * 1e6, 2) == 28.22
    assert round(r["bytes_per_s_instance"] / 1e9, 3) == 4.645
    assert round(100 * r["nic_fraction"], 1) == 9.3 and r["verdict"] == "ok"
    r8 = rate(L8, H100, 8, FP8)
    assert round(r8["bytes_per_s_instance"] / 1e9, 2) == 74.33
    assert round(r8["bytes_per_s_per_gpu"] / 1e9, 2) == 9.29 and r8["verdict"] == "ok"
    assert round(r8["min_link_gbps"], 1) == 74.3
    assert ref.link_verdict(9.29e9, 25) == "breaks" and 25e9 / 8 == 3.125e9
    assert ref.link_verdict(25e9, 400) == "tight"
    # the "gigabytes per request" of the opening: 70B, 8K prompt
    assert round(8192 * ref.kv_bytes_per_token(L70, BF16) / 1e9, 1) == 2.7


@pytest.mark.parametrize("m, gpu, n, cdt, inst, per_gpu, pct, verdict", [
    (L8, H100, 1, BF16, 4.65, 4.65, 9.3, "ok"),
    (L8, H100, 1, FP8, 9.29, 9.29, 18.6, "ok"),
    (L8, B200, 1, FP8, 21.13, 21.13, 42.3, "ok"),
    (L70, H100, 8, BF16, 9.47, 1.18, 2.4, "ok"),
    (MHA_7B, H100, 1, BF16, 20.03, 20.03, 40.1, "ok"),
    (MHA_7B, H100, 1, FP8, 40.05, 40.05, 80.1, "tight"),
    (MHA_7B, B200, 1, FP8, 91.08, 91.08, 182.2, "breaks"),
    (DS3, H100, 32, FP8, 31.16, 0.97, 1.9, "ok"),
    (K2, H200, 16, FP8, 18.23, 1.14, 2.3, "ok"),
])
def test_table(m, gpu, n, cdt, inst, per_gpu, pct, verdict):
    r = rate(m, gpu, n, cdt)
    assert round(r["bytes_per_s_instance"] / 1e9, 2) == inst
    assert round(r["bytes_per_s_per_gpu"] / 1e9, 2) == per_gpu
    assert round(100 * r["nic_fraction"], 1) == pct and r["verdict"] == verdict


def test_kv_per_flop():
    # KV bytes per prefill FLOP, the model's half of the answer (x 1e6)
    assert round(1e6 * 131_072 / ref.prefill_flops_per_token(L8), 2) == 9.39
    assert round(1e6 * 524_288 / ref.prefill_flops_per_token(MHA_7B), 2) == 40.48
    assert round(1e6 * 327_680 / ref.prefill_flops_per_token(L70), 2) == 2.39
    assert round(1e6 * 70_272 / ref.prefill_flops_per_token(DS3), 2) == 0.98
    assert round(ref.prefill_flops_per_token(MHA_7B) / 1e9, 2) == 12.95
    assert ref.kv_bytes_per_token(MHA_7B, BF16) == 512 * 1024
    assert DS3.kv_lora_rank + DS3.qk_rope_head_dim == 576
    assert round(ref.body_params(DS3) / 1e9, 1) == 35.7
    assert round(ref.prefill_flops_per_token(L70) / ref.prefill_flops_per_token(L8)) == 10


def test_prompt_length():
    rs = {P: rate(L70, H100, 8, BF16, P)["bytes_per_s_instance"] / 1e9
          for P in (None, 2048, 8192, 32768, 131072)}
    assert [round(rs[P], 2) for P in (None, 2048, 8192, 32768, 131072)] == [9.47, 9.29, 8.78, 7.21, 4.20]
    assert round(32768 * 327_680 / 1e9, 2) == 10.74 and round(8192 * 327_680 / 1e9, 2) == 2.68
    # attention share of prefill FLOPs at 128K for the 70B
    f = ref.prefill_flops_per_token(L70, 131072)
    assert round(100 * ref.attention_flops_per_key(L70) * 131073 / 2 / f) == 56
    # the MHA model on B200 breaks the NIC for short prompts, not at 128K
    assert rate(MHA_7B, B200, 1, FP8, 4096)["verdict"] == "breaks"
    r128 = rate(MHA_7B, B200, 1, FP8, 131072)
    assert r128["verdict"] == "ok" and round(100 * r128["nic_fraction"], 1) == 49.9
    # LM head once per request vs every token: the notes' 4.32 GB/s for the 8B
    f_head = 2 * (ref.body_params(L8) + L8.vocab_size * L8.hidden_size)
    assert round(131_072 * H100.bf16_dense_flops * 0.5 / f_head / 1e9, 2) == 4.32


def test_slips():
    # sparse peak: the 8B on a B200 in FP8 would look "tight"
    r = rate(L8, B200, 1, FP8)
    assert round(200 * r["nic_fraction"], 1) == 84.5
    # Gb/s read as GB/s: 40 GB/s on a 400 Gb/s NIC looks like 10%
    r = rate(MHA_7B, H100, 1, FP8)
    assert round(100 * r["bytes_per_s_per_gpu"] / 400e9) == 10
    assert ref.link_verdict(r["bytes_per_s_per_gpu"], 400) == "tight"
    # per-instance rate against one NIC: the 8B on 8 H100s in FP8 would "break" it
    r = rate(L8, H100, 8, FP8)
    assert r["bytes_per_s_instance"] > H100.nic_bytes_per_s and r["verdict"] == "ok"
    # 25 GbE (3.125 GB/s) breaks even the 8B on one H100 in BF16
    assert ref.link_verdict(rate(L8, H100, 1, BF16)["bytes_per_s_per_gpu"], 25) == "breaks"
    assert ref.link_verdict(rate(L70, H100, 8, BF16)["bytes_per_s_per_gpu"], 25) == "ok"


def test_deepseek_published():
    # DeepSeek day 6: ~73.7k input tokens/s per H800 node while prefilling (cache hits included)
    per_node = 73.7e3 * ref.kv_bytes_per_token(DS3, BF16)
    assert round(per_node / 1e9, 2) == 5.18 and round(per_node / 8 / 1e9, 2) == 0.65
    assert round(100 * per_node / (8 * 50e9), 1) == 1.3
    # our model at MFU 0.5 on H100-class FP8 compute: tokens/s per GPU of prefill
    r = rate(DS3, H100, 32, FP8)
    assert round(1 / (r["prefill_s_per_token"] * 32)) == 13_859
    assert round(73.7e3 / 8) == 9212


if __name__ == "__main__":
    print(link_svg())
