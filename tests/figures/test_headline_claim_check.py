"""Every figure quoted by headline-claim-check's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import H100_SXM, LLAMA_3_1_8B, LLAMA_3_1_70B, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "headline_claim_check.py", "_fig_headline_claim_check")
B = DType.BF16


def claim(model, n, ctx, n_gpus=1, max_gpus=8, tau=5.0):
    return ref.check_claim(model, H100_SXM, n, ctx, B, B, n_gpus, max_gpus, tau)


def test_8b_1000():
    assert ref.decode_weight_params(LLAMA_3_1_8B) == 7_504_658_432
    assert ref.kv_bytes_per_token(LLAMA_3_1_8B, B) == 131072
    r = claim(LLAMA_3_1_8B, 1000.0, 2048)
    assert round(2 * 7_504_658_432 / 1e9, 2) == 15.01 and round(2048 * 131072 / 1e9, 2) == 0.27
    assert round(r["bytes_per_token"] / 1e9, 2) == 15.28
    assert round(r["implied_bytes_per_s"] / 1e12, 2) == 15.28
    assert round(r["fraction_of_peak"], 2) == 4.56 and r["physical"] is False
    assert round(r["max_weight_bytes_per_param"], 2) == 0.41
    assert round(r["min_tokens_per_step"], 2) == 4.56
    assert r["min_gpus"] == 5 and r["min_batch"] == 5
    assert r["conditions"] == ["batch", "speculation", "tensor_parallel"]


def test_8b_150():
    r = claim(LLAMA_3_1_8B, 150.0, 2048)
    assert round(r["implied_bytes_per_s"] / 1e12, 2) == 2.29
    assert round(100 * r["fraction_of_peak"]) == 68 and r["physical"] is True and r["conditions"] == []


def test_8b_600_int4():
    r = ref.check_claim(LLAMA_3_1_8B, H100_SXM, 600.0, 512, B, B, 1, 1, 1.0)
    assert round(r["fraction_of_peak"], 2) == 2.70
    assert round(r["max_weight_bytes_per_param"], 3) == 0.735
    assert r["min_batch"] == 3 and r["conditions"] == ["batch", "quantization"]


def test_70b():
    r = claim(LLAMA_3_1_70B, 1000.0, 2048)
    assert round(r["fraction_of_peak"], 1) == 41.7 and r["min_gpus"] == 42
    assert round(r["max_weight_bytes_per_param"], 3) == 0.039
    assert round(ref.decode_weight_params(LLAMA_3_1_70B) * 2 / 1e9) == 139
    assert r["conditions"] == []
    node = claim(LLAMA_3_1_70B, 1000.0, 2048, n_gpus=8)
    assert round(node["fraction_of_peak"], 1) == 5.2
    assert node["min_batch"] == 6 and node["conditions"] == ["batch"]


def test_int4_kv_flips_the_answer():
    i4 = DType.INT4
    assert ref.kv_bytes_per_token(LLAMA_3_1_8B, i4) == 32768.0
    r = ref.check_claim(LLAMA_3_1_8B, H100_SXM, 190.0, 200_000, B, i4, 1, 2, 1.5)
    assert round(200_000 * 32768 / 1e9, 2) == 6.55
    assert round(r["fraction_of_peak"], 2) == 1.22 and r["physical"] is False
    truncated = 190.0 * 2 * ref.decode_weight_params(LLAMA_3_1_8B) / H100_SXM.hbm_bytes_per_s
    assert round(truncated, 2) == 0.85


def test_gb_not_gib_flips_batch():
    w = 2 * ref.decode_weight_params(LLAMA_3_1_8B)
    fits = claim(LLAMA_3_1_8B, 260.0, 77824, max_gpus=1, tau=1.0)
    assert fits["min_batch"] == 6 and fits["conditions"] == ["batch"]
    need = w + 6 * 77824 * 131072
    assert round(need / 1e9, 1) == 76.2 and 80e9 / 2**30 * 1e9 < need <= 80e9
    over = claim(LLAMA_3_1_8B, 316.0, 65536, max_gpus=1, tau=1.0)
    assert over["min_batch"] == 8 and over["conditions"] == []
    need = w + 8 * 65536 * 131072
    assert round(need / 1e9, 1) == 83.7 and 80e9 < need <= 80 * 2**30
    assert round(80 * 2**30 / 1e9, 1) == 85.9 and round(80e9 / 2**30, 1) == 74.5
