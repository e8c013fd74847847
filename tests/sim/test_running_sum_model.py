"""Unit tests of inferprep.sim.running_sum_model (the bf16-running-sum exercise's public model)."""

import math
import random

import numpy as np
import pytest
import torch

from inferprep.sim.running_sum_model import RunningSumModel, StateSpec, demo_model, round_to


@pytest.mark.parametrize("name,dtype", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_round_to_matches_torch_from_float32(name, dtype):
    rng = random.Random(0)
    for _ in range(5000):
        x = float(np.float32(rng.gauss(0, 1) * 10 ** rng.randint(-8, 8)))  # exact in float32: no double rounding
        assert round_to(x, name) == float(torch.tensor(x, dtype=torch.float32).to(dtype))


def test_round_to_fp16_ties_overflow_subnormal():
    assert round_to(2049.0, "fp16") == 2048.0 and round_to(2051.0, "fp16") == 2052.0
    assert round_to(65504.0, "fp16") == 65504.0
    assert round_to(65519.0, "fp16") == 65504.0 and round_to(65520.0, "fp16") == math.inf
    assert round_to(2.0 ** -24, "fp16") == 2.0 ** -24 and round_to(2.0 ** -26, "fp16") == 0.0
    assert round_to(257.0, "bf16") == 256.0


def test_error_is_monotone_and_upcast_fixes():
    m = demo_model(1024)
    curve = m.error_curve()
    assert np.all(np.diff(curve) >= 0)
    assert m.error(1024) > 0.3
    assert m.error(1024, ["layers.2.softmax_denominator"]) < 0.01
    assert m.error(1024, [n for n in m.names if n != "layers.2.softmax_denominator"]) > 0.3


def test_prefix_does_not_depend_on_max_len():
    a, b = demo_model(512), demo_model(2048)
    assert np.array_equal(a.error_curve(), b.error_curve()[:512])


def test_fp16_sum_of_squares_overflows_to_inf():
    m = RunningSumModel([StateSpec("layers.0.sum_sq", "sum_sq", "fp16", scale=8.0)], seed=1, max_len=4096)
    assert m.error(4096) == math.inf
    assert m.error(4096, ["layers.0.sum_sq"]) < 1e-3


def test_error_rejects_bad_calls():
    m = demo_model(256)
    with pytest.raises(ValueError):
        m.error(0)
    with pytest.raises(ValueError):
        m.error(257)
    with pytest.raises(ValueError):
        m.error(10, ["nope"])
    with pytest.raises(ValueError):
        RunningSumModel([StateSpec("a", "position"), StateSpec("a", "ema")])
