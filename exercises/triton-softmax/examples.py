"""Public examples for triton-softmax (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor, kernel_input, kernel_output


def grade(g: Grading) -> None:
    with g.case("two-rows-of-3"):
        x = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], device=g.device)
        xin, out = kernel_input(x, name="in"), kernel_output((2, 3), torch.float32, g.device, name="out")
        (y,) = g.launch("softmax_kernel", (2,), out, xin, xin.stride[0], out.stride[0], 3, BLOCK_SIZE=16)
        want = torch.tensor([[0.09003057, 0.24472847, 0.66524096], [1 / 3, 1 / 3, 1 / 3]], device=g.device)
        expect_tensor(y, want, name="out", rtol=1e-5, atol=1e-6)
    with g.case("logits-1000-1001-with-row-gap"):
        x = torch.tensor([[1000.0, 1001.0]], device=g.device)
        xin = kernel_input(x, name="in", row_gap=3)
        out = kernel_output((1, 2), torch.float32, g.device, name="out", row_gap=3)
        (y,) = g.launch("softmax_kernel", (1,), out, xin, xin.stride[0], out.stride[0], 2, BLOCK_SIZE=16)
        expect_tensor(y, torch.tensor([[0.26894142, 0.73105858]], device=g.device), name="out", rtol=1e-5, atol=1e-6)
