"""WRONG: a plain Python function in the kernel's place that calls torch.softmax: not a Triton kernel."""

import torch


def block_sizes(n_cols: int) -> dict:
    return {"BLOCK_SIZE": 1024}


def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE):
    out_ptr.copy_(torch.softmax(in_ptr, dim=-1))
