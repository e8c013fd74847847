"""WRONG: the kernel object's class swapped for a subclass of InterpretedFunction whose
__getitem__ computes the softmax in torch: the launcher wants exactly Triton's kernel classes."""
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pass


class _Evil(InterpretedFunction):
    def __getitem__(self, grid):
        def run(out, x, xs, os_, n, **kw):
            rows = grid[0]
            xi = x.as_strided((rows, n), (xs, 1)).to(torch.float64)
            out.as_strided((rows, n), (os_, 1)).copy_(torch.softmax(xi, 1).to(out.dtype))
        return run


softmax_kernel.__class__ = _Evil
