"""Every figure quoted by exp-vs-matmul's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "exp_vs_matmul.py", "_fig_exp_vs_matmul")
BF16, FP8 = DType.BF16, DType.FP8


def test_h100_rates():
    assert round(H100_SXM.sfu_ops_per_s / 1e12, 2) == 3.86
    assert H100_SXM.sfu_ops_per_s == 3.86496e12
    assert round(H100_SXM.dense_flops(BF16) / H100_SXM.sfu_ops_per_s) == 256
    assert ref.matmul_flops_per_score(128) == 512
    assert round(ref.exp_to_matmul_ratio(H100_SXM, BF16, 128), 5) == 0.49998
    assert round(100 * ref.exp_time_share(H100_SXM, BF16, 128)) == 33


def test_table():
    rows = {(A100_SXM_80GB, BF16): ([0.50, 0.25, 0.125], 20), (H100_SXM, BF16): ([1.00, 0.50, 0.25], 33),
            (H100_SXM, FP8): ([2.00, 1.00, 0.50], 50), (B200, BF16): ([2.00, 1.00, 0.50], 50)}
    for (gpu, dt), (ratios, share) in rows.items():
        got = [ref.exp_to_matmul_ratio(gpu, dt, d) for d in (64, 128, 256)]
        assert [round(x, 3 if r == 0.125 else 2) for x, r in zip(got, ratios)] == ratios
        assert round(100 * ref.exp_time_share(gpu, dt, 128)) == share


def test_b200_fp8_overlap_cap():
    # B200's clock is derived from its dense peak at 8192 FLOP/clk/SM (inferprep.specs), so its
    # BF16 ratio is 8192 / (16 x 4d) per clock: 1.00 at d = 128, 2.00 in FP8.
    assert round(ref.exp_to_matmul_ratio(B200, FP8, 128), 2) == 2.00
    assert round(100 * ref.attention_fraction_of_peak(B200, FP8, 128, 1.0, True)) == 50


def test_fa2_bound():
    assert round(ref.attention_fraction_of_peak(H100_SXM, BF16, 128, 2 / 3, False), 4) == 0.5
    assert round(1 / (2 / 3) + ref.exp_to_matmul_ratio(H100_SXM, BF16, 128), 2) == 2.0
    assert round(ref.attention_fraction_of_peak(H100_SXM, BF16, 64, 2 / 3, False), 4) == 0.4
    assert round(ref.exp_to_matmul_ratio(H100_SXM, BF16, 64), 3) == 1.0


def test_fa3_bound():
    assert ref.attention_fraction_of_peak(H100_SXM, BF16, 128, 1.0, True) == 1.0
    assert round(ref.attention_fraction_of_peak(H100_SXM, FP8, 128, 1.0, True), 4) == 1.0
    assert round(ref.exp_to_matmul_ratio(H100_SXM, FP8, 128), 3) == 1.0


def test_remedies():
    assert ref.fa3_remedy("synchronous_mma") == "wgmma"
    assert ref.fa3_remedy("global_memory_latency") == "warp_specialization_tma"
    assert ref.fa3_remedy("exp_serialized_with_gemm") == "pingpong_scheduling"
    assert ref.fa3_remedy("softmax_waits_on_gemm") == "intra_warpgroup_pipelining"
    assert ref.fa3_remedy("fp8_outlier_error") == "incoherent_processing"
