"""Figures quoted in the Triton track's statements and editorials (computed here in float64 with
torch: the references are Triton kernels, which the grader runs in the sandbox)."""

import math

import torch


def test_softmax_examples_and_the_float32_overflow():
    got = torch.softmax(torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, float("-inf")]], dtype=torch.float64), -1)
    assert torch.allclose(got[0], torch.tensor([0.0900306, 0.2447285, 0.6652410], dtype=torch.float64), atol=5e-8)
    assert torch.allclose(got[1, :2], torch.tensor([0.2689414, 0.7310586], dtype=torch.float64), atol=5e-8)
    assert math.isinf(torch.tensor(1000.0).exp().item())                      # exp(1000) in float32
    assert abs(math.log(torch.finfo(torch.float32).max) - 88.7) < 0.05


def test_flash_attention_example_and_the_missing_rescale():
    s = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    assert round(float(torch.softmax(s, 0) @ s), 4) == 3.4927
    assert round(float(torch.logsumexp(s, 0)), 4) == 4.4402
    l1 = math.exp(-1) + 1                                                     # tile 1, m = 2
    assert round(l1, 4) == 1.3679
    no_rescale = (math.exp(-1) * 1 + 2 + math.exp(-1) * 3 + 4) / (l1 + math.exp(-1) + 1)
    assert round(no_rescale, 4) == 2.7311


def test_paged_decode_example_mean():
    k, v = torch.zeros(5, 16, dtype=torch.float64), torch.zeros(5, 16, dtype=torch.float64)
    v[:, 0] = torch.arange(1.0, 6.0)
    o = torch.softmax(0.25 * k @ torch.ones(16, dtype=torch.float64), 0) @ v
    assert o[0] == 3.0


def test_moe_decode_padding_and_example_row():
    # one decode token, top-8 over 256 experts: 8 experts with one slot each, blocks of 16
    counts = [1] * 8
    padded = sum(-(-c // 16) * 16 for c in counts)
    assert padded / sum(counts) == 16
    # the statement's example: token t's row (t + 1) * ones, expert e's weight (e + 1) * I
    topk_ids = torch.tensor([[0, 2], [2, 1], [0, 2]])
    w = torch.tensor([0.5, 0.5, 1.0, 0.0, 0.25, 0.75], dtype=torch.float64)
    a = torch.arange(1.0, 4.0, dtype=torch.float64)[:, None].expand(3, 16)
    c = torch.stack([a[s // 2] @ ((topk_ids.view(-1)[s] + 1.0) * torch.eye(16, dtype=torch.float64)) * w[s]
                     for s in range(6)])
    assert torch.equal(c[5], torch.full((16,), 6.75, dtype=torch.float64))


def test_moe_long_k_case_asks_for_one_float16_ulp_and_tf32_misses_float32():
    # the long-K float16 case's rtol 1e-3 is just above one float16 ulp relative to the value
    # (2^-10 at a power of two, the worst place), so a float32 result rounded once always passes
    assert 2.0 ** -10 < 1e-3 < 2 * 2.0 ** -10
    ones = torch.tensor([1.0, 1024.0, 6.1e-5], dtype=torch.float16)
    ulp = torch.nextafter(ones, torch.tensor(float("inf"), dtype=torch.float16)) - ones
    assert float((ulp.double() / ones.double()).max()) < 1e-3
    # TF32 keeps 10 mantissa bits: one rounding is up to 2^-11 relative, far above float32's 1e-4 rtol
    assert 2.0 ** -11 > 4 * 1e-4
    # 512 / 16 = 32 tiles of K in the case
    assert 512 // 16 == 32
