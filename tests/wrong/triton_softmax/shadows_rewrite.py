"""WRONG: sets the kernel object's rewrite attribute to return a Python function (numpy inside):
an instance attribute that shadows a method of the kernel's class is refused."""
import numpy as np
import triton
import triton.language as tl


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pass


def _evil(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE):
    r = tl.program_id(0)
    cols = tl.arange(0, tl.constexpr(int(getattr(BLOCK_SIZE, "value", BLOCK_SIZE))))
    mask = cols < n_cols
    x = tl.load(in_ptr + r * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    a = x.handle.data.astype(np.float64)
    e = np.exp(a - a.max())
    from triton.runtime.interpreter import TensorHandle
    y = tl.tensor(TensorHandle((e / e.sum()).astype(np.float32), tl.float32), x.type)
    tl.store(out_ptr + r * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


softmax_kernel.rewrite = lambda: _evil
