"""Every figure quoted by flash-attention-backward's statement and editorial."""

import math
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "flash_attention_backward.py", "_fig_fa_bwd_ref")
W = ROOT / "tests/wrong/flash_attention_backward"
grader = load_module(ROOT / "graders" / "flash_attention_backward.py", "_fig_fa_bwd_grader")


def test_hand_worked_example():
    q = torch.zeros(1, 1, 2, 1, dtype=torch.float64)
    k = torch.tensor([1.0, 2.0], dtype=torch.float64).view(1, 1, 2, 1)
    v = torch.tensor([1.0, 3.0], dtype=torch.float64).view(1, 1, 2, 1)
    do = torch.ones(1, 1, 2, 1, dtype=torch.float64)
    for causal, o_want, lse_want, dq_want, dv_want in (
            (False, [2.0, 2.0], [math.log(2), math.log(2)], [0.5, 0.5], [1.0, 1.0]),
            (True, [1.0, 2.0], [0.0, math.log(2)], [0.0, 0.5], [1.5, 0.5])):
        o, lse, (dq_t, dk_t, dv_t) = grader.truth(q, k, v, do, causal, 1.0)
        assert o.flatten().tolist() == pytest.approx(o_want)
        assert lse.flatten().tolist() == pytest.approx(lse_want)
        dq, dk, dv = ref.flash_attention_backward(q, k, v, o, lse, do, causal, 1, 1, 1.0)
        assert dq.flatten().tolist() == pytest.approx(dq_want, abs=1e-12)
        assert dk.flatten().tolist() == pytest.approx([0.0, 0.0], abs=1e-12)
        assert dv.flatten().tolist() == pytest.approx(dv_want, abs=1e-12)
        assert torch.allclose(dq, dq_t) and torch.allclose(dv, dv_t)


def test_memory_and_flop_figures():
    assert 32 * 8192**2 * 2 / 2**30 == 4.0            # P in bf16, 32 heads, N = 8192
    assert 5 / 2 == 2.5                                # backward / forward matmuls
    assert (2 + 5) / (2 + 4) - 1 == pytest.approx(0.1667, abs=5e-5)
    assert 12288**2 * 4 / 2**20 == 576


def test_d_identity():
    g = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(1, 1, 20, 8, generator=g, dtype=torch.float64) for _ in range(4))
    p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), -1)
    o = p @ v
    dp = do @ v.transpose(-1, -2)
    assert float(((p * dp).sum(-1) - (do * o).sum(-1)).abs().max()) < 1e-15


def _case(dtype, n, d, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 1, n, d, generator=g, dtype=torch.float64).to(dtype) for _ in range(4)]


def test_unscaled_lse_gradients_blow_up():
    bad = load_module(W / "unscaled_scores_in_lse.py", "_fig_fa_bwd_unscaled")
    q, k, v, do = _case(torch.float32, 64, 16, 0)
    o, lse, grads = grader.truth(q, k, v, do, False, 0.25)
    dq, _, _ = bad.flash_attention_backward(q, k, v, o.float(), lse.float(), do, False, 16, 16)
    assert float(grads[0].abs().max()) < 10
    assert float((dq.double() - grads[0]).abs().max()) > 1e4


def test_bf16_accumulation_loses_about_two_percent():
    bad = load_module(W / "accumulate_in_input_dtype.py", "_fig_fa_bwd_acc")
    q, k, v, do = _case(torch.bfloat16, 1024, 32, 1)
    o, lse, grads = grader.truth(q, k, v, do, False, 1 / math.sqrt(32))
    good = ref.flash_attention_backward(q, k, v, o.bfloat16(), lse.float(), do, False, 64, 64)
    wrong = bad.flash_attention_backward(q, k, v, o.bfloat16(), lse.float(), do, False, 64, 64)
    frac = lambda got, want: float((got.double() - want).abs().max() / want.abs().max())  # noqa: E731
    assert max(frac(a, w) for a, w in zip(good, grads)) < 0.005
    worst = max(frac(a, w) for a, w in zip(wrong, grads))
    assert 0.01 < worst < 0.04
