"""WRONG: a plain Python helper (numpy inside) whose __module__ claims triton.language: the
launcher knows Triton's language by identity, not by name."""
import torch
import triton
import triton.language as tl


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


def fast_softmax(x):
    # runs as plain Python under the interpreter: x wraps a numpy array
    import numpy as np
    from triton.runtime.interpreter import TensorHandle
    a = x.handle.data.astype(np.float64)
    e = np.exp(a - a.max())
    return tl.tensor(TensorHandle((e / e.sum()).astype(np.float32), tl.float32), x.type)


fast_softmax.__module__ = "triton.language.standard"


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + r * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    y = fast_softmax(x)
    tl.store(out_ptr + r * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
