"""Public examples for triton-paged-decode (run them with `inferprep grade --public`)."""

import torch

from inferprep.grading import Grading, expect_tensor, kernel_input, kernel_output


def grade(g: Grading) -> None:
    with g.case("two-blocks-out-of-order"):
        # one sequence of 5 tokens, pages of 4: positions 0-3 in block 2, position 4 in block 0;
        # keys are 0 (scores 0), values 1..5 in dimension 0: the output averages them, 3.0
        k = torch.zeros(3, 4, 1, 16)
        v = torch.full((3, 4, 1, 16), float("nan"))
        v[2, :, 0] = 0.0
        v[2, :, 0, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0])
        v[0, 0, 0] = 0.0
        v[0, 0, 0, 0] = 5.0
        dev = g.device
        qa = kernel_input(torch.ones(1, 1, 16, device=dev), name="q")
        ka, va = kernel_input(k.to(dev), name="k_cache"), kernel_input(v.to(dev), name="v_cache")
        ta = kernel_input(torch.tensor([[2, 0]], dtype=torch.int32, device=dev), name="block_tables")
        la = kernel_input(torch.tensor([5], dtype=torch.int32, device=dev), name="seq_lens")
        oa = kernel_output((1, 1, 16), torch.float32, dev, name="o")
        (o,) = g.launch("paged_decode_kernel", (1, 1), qa, ka, va, ta, la, oa,
                        qa.stride[0], qa.stride[1], ka.stride[0], ka.stride[1], ka.stride[2],
                        va.stride[0], va.stride[1], va.stride[2], ta.stride[0], oa.stride[0], oa.stride[1],
                        0.25, 1, HEAD_DIM=16, PAGE_SIZE=4)
        want = torch.zeros(1, 1, 16, device=dev)
        want[0, 0, 0] = 3.0
        expect_tensor(o, want, name="o", atol=1e-5)
