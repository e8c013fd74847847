"""Every figure of the layer-op-ranking statement and editorial, computed by the reference."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "layer_op_ranking.py", "ref_layer_op_ranking")
M, G, B = specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16


def test_statement_example():
    t = ref.layer_op_times(M, G, B, 1, 8192, 0.0)
    assert [round(t[k], 2) for k in ref.OPS] == [15.02, 10.02, 70.11, 35.06, 10.02, 0.06]
    assert round(ref.layer_op_times(M, G, B, 8, 8192, 0.0)["attention"], 2) == 80.13
    assert ref.op_ranking(M, G, B, 8, 8192, 0.0)[0] == "attention"
    assert ref.ranking_flip_batch(M, G, B, 8000, 0.0) == 8


def test_bytes_story():
    assert ref._gemm_weights(M)["gate_up_proj"] * 2 == 224 * 2**20
    assert 2 * 8 * 128 * 2 * 8192 == 32 * 2**20          # one sequence's K and V per layer, bytes
    assert 7 * 32 == 224
    assert ref.layer_op_times(M, G, B, 64, 8192, 0.0)["gate_up_proj"] == \
        ref.layer_op_times(M, G, B, 1, 8192, 0.0)["gate_up_proj"]


@pytest.mark.parametrize("b, row", [
    (1, [18.02, 13.02, 73.11, 38.06, 13.02, 18.06]),
    (8, [18.02, 13.02, 73.11, 38.06, 83.13, 18.45]),
    (64, [18.02, 13.02, 73.11, 38.06, 644.04, 21.60]),
    (512, [29.05, 20.36, 124.55, 63.77, 5131.32, 46.80]),
])
def test_table(b, row):
    t = ref.layer_op_times(M, G, B, b, 8192, 3.0)
    assert [round(t[k], 2) for k in ref.OPS] == row


@pytest.mark.parametrize("L, small, large", [
    (1024, 56, 224), (4096, 14, 56), (8000, 8, 29), (32768, 2, 7), (131072, 1, 2)])
def test_flip_table(L, small, large):
    assert ref.ranking_flip_batch(M, G, B, L, 3.0) == small
    assert ref.ranking_flip_batch(specs.LLAMA_3_1_70B, G, B, L, 3.0) == large


def test_never_and_remedies():
    assert ref.ranking_flip_batch(M, G, B, 100, 0.0) is None
    r1 = ref.remedies(M, G, B, 1, 8192)
    assert [r1[k] for k in ref.OPS] == ["batch"] * 4 + ["architecture", "fusion"]
    r512 = ref.remedies(M, G, B, 512, 8192)
    assert [r512[k] for k in ref.OPS] == ["none"] * 4 + ["architecture", "fusion"]
    t = ref.layer_op_times(M, G, B, 1, 8192, 3.0)
    assert round(100 * t["elementwise"] / sum(t.values()), 1) == 10.4
