# A plain Python function that says it belongs to triton.language (its __module__ forged) installed
# as tl.fancy and called from the kernel: the child's read trusted __module__, so any Python (torch
# included) could run as a "language" function.
import triton
import triton.language as tl


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


def fancy(x):
    y = tl.exp(x - tl.max(x, 0))
    return y / tl.sum(y, 0)


fancy.__module__ = "triton.language.core"
tl.fancy = fancy


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * out_row_stride + cols, tl.fancy(x), mask=mask)
