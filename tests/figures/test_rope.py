"""Every figure quoted by rope's statement and editorial (DOMAIN-NOTES section 7, I10-I12)."""

import math
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "rope.py", "_fig_rope_ref")
shared_arange = load_variant("rope", "shared_arange_positions", "_fig_rope_arange")
sign_flipped = load_variant("rope", "rotation_sign_flipped", "_fig_rope_sign")
interleaved_ignored = load_variant("rope", "interleaved_ignored", "_fig_rope_ignored")

ONE = torch.ones(1, 1, dtype=torch.int64)


def rope(x, interleaved, mod=ref):
    return mod.apply_rope(torch.tensor(x).view(1, 1, 1, -1), ONE, 10000.0, interleaved).flatten().tolist()


def test_inv_freq_d4():
    cos, sin = ref.rope_cos_sin(ONE.flatten(), 4)
    assert torch.atan2(sin, cos).flatten().tolist() == pytest.approx([1.0, 0.01], abs=1e-7)


def test_x_1234_both_layouts():
    assert rope([1.0, 2.0, 3.0, 4.0], False) == pytest.approx([-1.984, 1.960, 2.462, 4.020], abs=5e-4)
    assert rope([1.0, 2.0, 3.0, 4.0], True) == pytest.approx([-1.143, 1.922, 2.960, 4.030], abs=5e-4)
    perm = [0, 2, 1, 3]
    neox_perm = rope([[1.0, 2.0, 3.0, 4.0][i] for i in perm], False)
    gptj = rope([1.0, 2.0, 3.0, 4.0], True)
    assert neox_perm == pytest.approx([gptj[i] for i in perm], abs=1e-6)


def test_x_1000_i11():
    assert rope([1.0, 0.0, 0.0, 0.0], True) == pytest.approx([0.5403, 0.8415, 0.0, 0.0], abs=5e-5)
    assert rope([1.0, 0.0, 0.0, 0.0], False) == pytest.approx([0.5403, 0.0, 0.8415, 0.0], abs=5e-5)
    # the vLLM #49290 bug returns the half-split result for the interleaved flag
    assert rope([1.0, 0.0, 0.0, 0.0], True, interleaved_ignored) == pytest.approx([0.5403, 0.0, 0.8415, 0.0], abs=5e-5)


def test_bf16_rounding_of_positions():
    bf = lambda p: float(torch.tensor(float(p)).bfloat16())  # noqa: E731
    assert bf(100000) == 99840
    assert bf(15962) == 15936
    assert bf(257) == 256 and bf(259) == 260
    assert bf(100000 + 256) - bf(100000 - 256) == 512   # spacing 512 near 100,000
    assert math.cos(15962) == pytest.approx(-0.9080, abs=5e-5)
    assert math.cos(15936) == pytest.approx(-0.2680, abs=5e-5)
    cos, _ = ref.rope_cos_sin(torch.tensor([15962]), 2)
    assert float(cos.flatten()[0]) == pytest.approx(-0.9080, abs=5e-4)
    cos, _ = ref.rope_cos_sin(torch.tensor([256, 257]), 4)
    assert float((cos[0] - cos[1]).abs().max()) > 0.1


def test_angle_error_table_at_100000():
    d, p = 128, 100000
    k = torch.arange(0, d, 2, dtype=torch.float64)
    true = p * (1 / 10000 ** (k / d))
    inv32 = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    fp32 = (torch.tensor(float(p)) * inv32).double()
    bf_inv = (torch.tensor(float(p)) * inv32.bfloat16().float()).double()
    all_bf = (torch.tensor(float(p)).bfloat16() * inv32.bfloat16()).double()
    assert round(float((fp32 - true).abs().max()), 4) == 0.0052
    assert round(float((bf_inv - true).abs().max())) == 122
    assert round(float((all_bf - true).abs().max())) == 237
    assert math.cos(p) == pytest.approx(-0.999, abs=5e-4)
    assert math.cos(float(all_bf[0])) == pytest.approx(0.983, abs=5e-4)
    # the reference's own angles are within the grader's tolerance 1e-5 + 2.5e-7 p
    cos, sin = ref.rope_cos_sin(torch.tensor([p]), d)
    assert float((cos.double() - torch.cos(true)).abs().max()) <= 1e-5 + 2.5e-7 * p
    assert 1e-5 + 2.5e-7 * p == pytest.approx(0.025, abs=1e-4)
    # casting the final cos/sin to bf16 costs at most 2^-9
    c, s = torch.cos(fp32.float()), torch.sin(fp32.float())
    assert float((c.bfloat16().float() - c).abs().max()) <= 2 ** -9
    assert float((s.bfloat16().float() - s).abs().max()) <= 2 ** -9


def test_position_ids_and_packing():
    got = ref.position_ids_from_mask(torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]))
    assert got.tolist() == [[1, 1, 0, 1, 2], [0, 1, 2, 3, 4]]
    got = ref.position_ids_from_mask(torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]]))
    assert got.tolist() == [[1, 1, 0, 1], [0, 1, 2, 3]]      # I10: real tokens [0, 1] and [0..3]
    bad = shared_arange.position_ids_from_mask(torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]))
    assert bad[0, 2:].tolist() == [2, 3, 4]
    assert ref.packed_positions([5, 0, 17], [1, 3, 2]).tolist() == [5, 0, 1, 2, 17, 18]


def test_sign_flip_keeps_relative_property_but_not_values():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 1, 16, generator=g), torch.randn(1, 1, 1, 16, generator=g)
    for mod, same_values in ((ref, True), (sign_flipped, False)):
        dots = [float((mod.apply_rope(q, torch.tensor([[m]])) * mod.apply_rope(k, torch.tensor([[n]]))).sum())
                for m, n in [(7, 3), (1007, 1003), (4, 0)]]
        assert max(dots) - min(dots) < 1e-3
        v = mod.apply_rope(q, torch.tensor([[7]]))
        assert torch.allclose(v, ref.apply_rope(q, torch.tensor([[7]])), atol=1e-5) == same_values


def test_hf_cos_to_input_dtype_example():
    """Statement and editorial: x = [1, 1] in bf16, d = 2, position 4. The float32 rotation is
    off by the output rounding only; bf16 coefficients (cos.to(x.dtype)) exceed the tolerance."""
    hf = load_variant("rope", "cos_sin_rounded_to_input_dtype", "_fig_rope_hf_cos")
    x = torch.tensor([1.0, 1.0], dtype=torch.bfloat16).view(1, 1, 1, 2)
    pos = torch.tensor([[4]])
    want = math.cos(4) - math.sin(4)
    assert round(want, 4) == 0.1032
    y_ref = float(ref.apply_rope(x, pos)[0, 0, 0, 0])
    y_hf = float(hf.apply_rope(x, pos)[0, 0, 0, 0])
    assert round(y_hf, 4) == 0.1055
    assert round(abs(y_hf - want), 4) == 0.0023
    assert round(abs(y_ref - want), 5) == 0.00013
    tol = (1e-5 + 2.5e-7 * 4) * 2 * 1.0 + 8e-3 * abs(want) + 1e-6     # the grader's apply_rope tolerance
    assert round(tol, 5) == 0.00085
    assert abs(y_ref - want) <= tol < abs(y_hf - want)
    assert round(abs(y_hf - want) / abs(y_ref - want)) == 18
    # each coefficient moves by at most 2^-9 when rounded to bf16 (|cos|, |sin| <= 1)
    a = torch.arange(0, 200_000, dtype=torch.float64) * 0.001
    for f in (torch.cos, torch.sin):
        c = f(a).float()   # HF computes cos and sin in float32, then rounds them
        assert float((c.to(torch.bfloat16).float() - c).abs().max()) <= 2.0 ** -9
