# No import but triton's: under the interpreter a tensor's .handle.data is a numpy array (and numpy
# reaches ctypes), out of sight of the child's read, which skipped attributes of values.
import triton
import triton.language as tl


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    raw = x.handle.data
    y = tl.exp(x - tl.max(x, 0))
    tl.store(out_ptr + row * out_row_stride + cols, y / tl.sum(y, 0), mask=mask)
