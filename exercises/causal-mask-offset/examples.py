"""Public examples for causal-mask-offset (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor


def rows(*bits):
    return torch.tensor([[c == "1" for c in r] for r in bits], dtype=torch.bool)


def grade(g: Grading) -> None:
    dev = g.device
    with g.case("mask-T2-S5"):
        expect_tensor(g.call("causal_mask", 2, 5, device=str(dev)), rows("11110", "11111").to(dev), name="mask")
    with g.case("mask-T5-S2"):
        expect_tensor(g.call("causal_mask", 5, 2, device=str(dev)),
                      rows("00", "00", "00", "10", "11").to(dev), name="mask")
    with g.case("mask-decode-T1-S8"):
        expect_tensor(g.call("causal_mask", 1, 8, device=str(dev)), rows("11111111").to(dev), name="mask")
    with g.case("past-3-new-2-uniform"):
        q = torch.zeros(1, 1, 2, 1, device=dev)
        k = torch.zeros(1, 1, 5, 1, device=dev)
        v = torch.arange(5.0, device=dev).view(1, 1, 5, 1)
        expect_tensor(g.call("attention_with_cache", q, k, v), torch.tensor([1.5, 2.0], device=dev).view(1, 1, 2, 1),
                      atol=1e-6)
    with g.case("more-queries-than-keys-zeros"):
        q = torch.zeros(1, 1, 5, 1, device=dev)
        k = torch.zeros(1, 1, 2, 1, device=dev)
        v = torch.tensor([1.0, 2.0], device=dev).view(1, 1, 2, 1)
        expect_tensor(g.call("attention_with_cache", q, k, v),
                      torch.tensor([0.0, 0.0, 0.0, 1.0, 1.5], device=dev).view(1, 1, 5, 1), atol=1e-6)
