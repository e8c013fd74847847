"""Every figure quoted by gpu-generation-speedup's statement and editorial, from the reference."""

from pathlib import Path

from inferprep.grading import load_module
from inferprep.specs import A100_SXM_80GB, B200, H100_SXM, H200_SXM, LLAMA_3_1_8B, LLAMA_3_1_70B, DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "gpu_generation_speedup.py", "_fig_gpu_generation_speedup")


def params(m) -> int:
    d = m.hidden_size
    return m.n_layers * (2 * d * m.n_heads * m.head_dim + 2 * d * m.n_kv_heads * m.head_dim
                         + 3 * d * m.ffn_size) + d * m.vocab_size


def kv(m) -> int:
    return 2 * m.n_layers * m.n_kv_heads * m.head_dim * 2


P8, P70 = params(LLAMA_3_1_8B), params(LLAMA_3_1_70B)
L8 = (2 * P8, kv(LLAMA_3_1_8B), 4096, 2 * P8, 0.9, 4e9)
L70 = (P70 / 2, kv(LLAMA_3_1_70B) / 2, 8192, P70, 0.9, 4e9)


def test_inputs():
    assert 2 * P8 == 15_009_316_864 and kv(LLAMA_3_1_8B) == 131072
    assert round(P70 / 2 / 1e9, 1) == 34.8 and kv(LLAMA_3_1_70B) // 2 == 163840
    # 163,840 is half of the 70B's BF16 KV (2 bytes per element): FP8 weights, BF16 KV, TP 2
    assert kv(LLAMA_3_1_70B) == 327680 == 2 * 80 * 8 * 128 * 2
    assert round(2 * P8 / 1e9, 1) == 15.0


def test_b200_hgx_column():
    assert (B200.bf16_dense_flops, B200.hbm_bytes_per_s, B200.hbm_bytes) == (2.25e15, 7.7e12, 180e9)


def test_datasheet_ratios():
    assert round(H200_SXM.hbm_bytes_per_s / H100_SXM.hbm_bytes_per_s, 2) == 1.43
    assert round(H200_SXM.hbm_bytes / H100_SXM.hbm_bytes, 2) == 1.76


def test_table():
    rows = [((H100_SXM, H200_SXM, DType.BF16, *L8), (1.00, 1.43, 1.62, 98, 200)),
            ((H100_SXM, H200_SXM, DType.FP8, *L70), (1.00, 1.43, 2.13, 24, 65)),
            ((H100_SXM, B200, DType.BF16, *L8), (2.27, 2.30, 2.67, 98, 266)),
            ((A100_SXM_80GB, H100_SXM, DType.BF16, *L8), (3.17, 1.64, 1.64, 98, 98))]
    for args, (c, b, cap, bo, bn) in rows:
        r = ref.generation_speedup(*args)
        assert (round(r["compute"], 2), round(r["bandwidth"], 2), round(r["capacity"], 2)) == (c, b, cap)
        assert (r["max_batch_old"], r["max_batch_new"]) == (bo, bn)
    assert ref.generation_speedup(H100_SXM, H200_SXM, DType.BF16, *L8)["largest"] == "capacity"
    assert ref.generation_speedup(H100_SXM, H200_SXM, DType.FP8, *L70)["largest"] == "capacity"
    assert ref.generation_speedup(A100_SXM_80GB, H100_SXM, DType.BF16, *L8)["largest"] == "compute"


def test_statement_example():
    r = ref.generation_speedup(H100_SXM, H200_SXM, DType.BF16, *L8)
    assert round(r["bandwidth"], 3) == 1.433 and round(r["capacity"], 3) == 1.616


def test_step_times():
    w, k, ctx = L8[0], L8[1], L8[2]
    t_h200 = 200 / ref.decode_throughput(H200_SXM, DType.BF16, w, k, ctx, L8[3], 200)
    t_h100 = 98 / ref.decode_throughput(H100_SXM, DType.BF16, w, k, ctx, L8[3], 98)
    assert round(t_h200 * 1e3, 1) == 25.5 and round(t_h100 * 1e3, 1) == 20.2
