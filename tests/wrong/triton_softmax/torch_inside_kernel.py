"""WRONG: a @triton.jit kernel whose body calls torch (the CPU interpreter would run it; a GPU compile refuses it)."""

import torch
import triton
import triton.language as tl


def block_sizes(n_cols: int) -> dict:
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    torch.softmax(in_ptr, dim=-1)
