"""WRONG: patches Triton's interpreter (GridExecutor.__call__) at import so that a launch computes
the softmax in torch; the kernel itself is empty. The launcher compares Triton's runtime with its
snapshot and refuses."""

import torch
import triton
import triton.language as tl
from triton.runtime import interpreter


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pass


def _launch(self, out, x, x_stride, out_stride, n_cols, *args, **kwargs):
    rows = self.grid[0]
    y = torch.softmax(x.as_strided((rows, n_cols), (x_stride, 1)).double(), dim=1)
    out.as_strided((rows, n_cols), (out_stride, 1)).copy_(y.to(out.dtype))


interpreter.GridExecutor.__call__ = _launch
