"""WRONG: seeds the interpreter's rewrite cache (InterpretedFunction.rewritten_fn) with a Python
function (numpy inside) for an empty kernel: the launcher empties the cache before each launch."""
import numpy as np
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction


def block_sizes(n_cols):
    return {"BLOCK_SIZE": max(16, triton.next_power_of_2(n_cols))}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pass


def _evil(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE):
    # runs as plain Python once per program; the pointers are interpreter tensors over raw memory
    r = tl.program_id(0)
    cols = tl.arange(0, tl.constexpr(int(getattr(BLOCK_SIZE, "value", BLOCK_SIZE))))
    mask = cols < n_cols
    x = tl.load(in_ptr + r * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    a = x.handle.data.astype(np.float64)
    e = np.exp(a - a.max())
    from triton.runtime.interpreter import TensorHandle
    y = tl.tensor(TensorHandle((e / e.sum()).astype(np.float32), tl.float32), x.type)
    tl.store(out_ptr + r * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


InterpretedFunction.rewritten_fn[softmax_kernel.fn] = _evil
