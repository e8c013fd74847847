"""Every figure of the decode-floor statement and editorial, computed by the reference."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "decode_floor.py", "ref_decode_floor")
M, G, B = specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16


def test_floor():
    f = ref.decode_floor(M, G, [1], B, B)
    assert f["weight_bytes"] == 15_009_316_864 and f["kv_bytes"] == 131_072
    assert round(f["floor_ms"], 3) == 4.480
    assert round(1e3 / f["floor_ms"]) == 223
    assert round(ref.decode_floor(M, specs.H200_SXM, [1], B, B)["floor_ms"], 3) == 3.127
    assert round(ref.decode_floor(M, specs.B200, [1], B, B)["floor_ms"], 3) == 1.949
    f70 = ref.decode_floor(specs.LLAMA_3_1_70B, G, [1], B, B)["floor_ms"]
    assert round(f70, 2) == 41.49 and round(f70 / 8, 2) == 5.19


def test_kv_growth():
    assert ref._kv_elements_per_token(M) * 2 == 131_072
    f = ref.decode_floor(M, G, [131072], B, B)
    assert round(f["kv_bytes"] / 1e9, 1) == 17.2 and round(f["floor_ms"], 3) == 9.609
    assert round(f["floor_ms"] / ref.decode_floor(M, G, [1], B, B)["floor_ms"], 1) == 2.1
    assert round(ref.decode_floor(M, G, [131072], B, DType.FP8)["floor_ms"], 3) == 7.045
    f32 = ref.decode_floor(M, G, [8192] * 32, B, B)
    assert f32["kv_bytes"] == 34_359_738_368 and round(f32["kv_bytes"] / 1e9, 1) == 34.4
    assert round(f32["weight_bytes"] / 1e9, 1) == 15.0
    assert round(f32["floor_ms"], 3) == 14.737


def test_gap_table():
    a = ref.decode_gaps(M, G, [1], B, B, 0.85, 0.3)
    assert (round(a["weights_ms"], 3), round(a["kv_ms"], 5), round(a["bandwidth_gap_ms"], 3),
            round(a["step_ms"], 3), a["largest_gap"]) == (4.480, 0.00004, 0.791, 5.571, "bandwidth")
    b = ref.decode_gaps(M, G, [8192] * 32, B, B, 0.85, 0.3)
    assert (round(b["kv_ms"], 3), round(b["bandwidth_gap_ms"], 3), round(b["step_ms"], 3),
            b["largest_gap"]) == (10.257, 2.601, 17.638, "kv")
    assert round(100 * 0.3 / a["weights_ms"]) == 7 and round(100 * 0.3 / b["step_ms"]) == 2


def test_statement_example():
    r = ref.decode_gaps(M, G, [4096] * 16, B, B, 0.8, 0.5)
    assert (round(r["weights_ms"], 3), round(r["kv_ms"], 3), round(r["bandwidth_gap_ms"], 3),
            round(r["step_ms"], 3), r["largest_gap"]) == (4.480, 2.564, 1.761, 9.306, "kv")
    assert r["step_ms"] == pytest.approx(9.305690841791044, rel=1e-12)
