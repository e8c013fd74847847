"""Public cases for fp8-attention (literal expected values)."""

import torch

from inferprep.grading import INPUT_CHECKS, Grading, expect_close, expect_tensor

F64 = torch.float64


def grade(g: Grading) -> None:
    dev = g.device
    x = torch.tensor([[1.0, -3.0, 0.5], [2.0, 0.02, -7.0]], dtype=F64, device=dev)
    with g.case("quantize-tensor-scale-2^-6"):
        out = g.call("fp8_quantize", x, "tensor")
        expect_tensor(out, torch.tensor([[1.0, -3.0, 0.5], [2.0, 0.01953125, -7.0]], dtype=F64, device=dev),
                      name="dequantized")
    with g.case("lowprec-dot-truncation"):
        a = torch.tensor([[1.0] + [2.0 ** -10] * 5], dtype=F64, device=dev)
        b = torch.ones_like(a)
        expect_tensor(g.call("lowprec_dot", a, b, mant_bits=3, chunk=1),
                      torch.tensor([1.0], dtype=F64, device=dev), name="sum")
        expect_tensor(g.call("lowprec_dot", a, b, mant_bits=3, chunk=1, promote=2),
                      torch.tensor([1.00390625], dtype=F64, device=dev), name="sum (promoted)")
    q = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=F64, device=dev)
    k = torch.tensor([[1.0, 1.0], [2.0, -1.0], [0.0, 3.0]], dtype=F64, device=dev)
    v = torch.tensor([[1.0], [2.0], [4.0]], dtype=F64, device=dev)
    with g.case("forward-two-tiles"):
        out = g.call("fp8_attention_forward", q, k, v, block_k=2)
        expect_tensor(out, torch.tensor([[1.9870666158534356], [3.8336991565186107]], dtype=F64, device=dev),
                      name="out", rtol=1e-9)
    with g.case("logit-errors"):
        out = g.call("logit_errors", q, k)
        expect_close(out["std"], 0.03496228417536549, name="std", rtol=1e-7)
        expect_close(out["p_weighted"], 0.030006027043792956, name="p_weighted", rtol=1e-7)
    with g.case("rejects-bad-mode", group=INPUT_CHECKS):
        g.raises("ValueError", "fp8_quantize", x, "row")
