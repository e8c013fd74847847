"""Buffers for launching a submission's Triton kernel (``Grading.launch``).

The grader lays out every tensor a kernel touches. Each one lives in a flat buffer of its own:
``guard`` elements before and after it, and optionally ``row_gap`` elements after each row (the
last dimension), so its row stride is larger than its row. Every byte of the guard bands and
gaps, and every element of an output before the kernel runs, is ``0xFF``: a NaN in every
floating dtype (so an unmasked load past a row poisons the result) and ``-1`` in the integer
ones. Output buffers are filled with ``0xFE`` instead (bytes no arithmetic produces: a NaN loaded
from an input's band and stored keeps the input's bit pattern, which must not pass for an
untouched output band). After the launch the grader's side checks, bit for bit, that the kernel
left every guard band and gap untouched (a store without its mask shows there), wrote every
element of every output, and left every input unchanged.

    x = kernel_input(torch.randn(5, 37), row_gap=3)
    out = kernel_output((5, 37), torch.float32)
    (y,) = g.launch("softmax_kernel", (5,), out, x, x.stride[0], out.stride[0], 37, BLOCK_SIZE=64)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .checks import fail

GUARD = 256
"""Elements of guard band before and after every buffer: more than a row block of the track's
kernels, so a store that runs a block past its end lands in the band, not in another buffer."""
POISON = 0xFF
"""The byte every input's guard bands and gaps are filled with (NaN / -1)."""
OUTPUT_POISON = 0xFE
"""The byte every output buffer starts as, bands and elements alike."""


@dataclass
class KernelArg:
    """One tensor argument of a kernel launch: ``buffer`` (flat, guard bands included) holds the
    tensor at ``offset`` with ``shape`` and ``stride`` (in elements). ``output``: the kernel is
    expected to write it; otherwise the kernel must leave it as it was."""

    name: str
    buffer: torch.Tensor
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    output: bool
    original: torch.Tensor = field(repr=False, default=None)

    def wire(self) -> dict:
        return {"buffer": self.buffer, "offset": self.offset, "shape": list(self.shape), "stride": list(self.stride)}

    def view(self, buffer: torch.Tensor) -> torch.Tensor:
        return buffer.as_strided(self.shape, self.stride, self.offset)

    def inside(self) -> torch.Tensor:
        """(numel of the buffer,) bool: True where an element of the tensor lives."""
        mask = torch.zeros(self.buffer.numel(), dtype=torch.bool)
        self.view(mask).fill_(True)
        return mask


def _layout(shape: tuple[int, ...], row_gap: int, guard: int) -> tuple[int, tuple[int, ...], int]:
    """(buffer numel, row-major strides with ``row_gap`` after each row, offset)."""
    stride, step = [], 1
    for i, n in enumerate(reversed(shape)):
        stride.append(step)
        step *= n + (row_gap if i == 0 else 0)
    stride = tuple(reversed(stride))
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    return guard + span + row_gap + guard, stride, guard


def _poisoned(numel: int, dtype: torch.dtype, device, byte: int = POISON) -> torch.Tensor:
    raw = torch.full((numel * torch.empty(0, dtype=dtype).element_size(),), byte, dtype=torch.uint8, device=device)
    return raw.view(dtype)


def kernel_input(t: torch.Tensor, *, name: str = "input", row_gap: int = 0, guard: int = GUARD) -> KernelArg:
    """``t`` copied into a poisoned buffer (guard bands, ``row_gap`` poisoned elements after each row)."""
    shape = tuple(t.shape)
    numel, stride, offset = _layout(shape, row_gap, guard)
    buf = _poisoned(numel, t.dtype, t.device)
    arg = KernelArg(name, buf, offset, shape, stride, output=False)
    arg.view(buf).copy_(t)
    arg.original = buf.clone()
    return arg


def kernel_output(shape, dtype: torch.dtype, device="cpu", *, name: str = "output", row_gap: int = 0,
                  guard: int = GUARD) -> KernelArg:
    """A poisoned buffer for an output of ``shape`` (``OUTPUT_POISON``): an element the kernel does
    not write is reported by ``check_buffers``."""
    shape = tuple(int(n) for n in shape)
    numel, stride, offset = _layout(shape, row_gap, guard)
    buf = _poisoned(numel, dtype, device, OUTPUT_POISON)
    return KernelArg(name, buf, offset, shape, stride, output=True, original=buf.clone())


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().contiguous().view(torch.uint8).view(-1, t.element_size())


def check_buffers(args: list[KernelArg], returned) -> list[torch.Tensor]:
    """The outputs' views after a launch, once the kernel's writes check out: every guard band and
    gap as it was, every output element written, every input unchanged, bit for bit. Raises
    WrongAnswer otherwise."""
    if not isinstance(returned, list) or len(returned) != len(args):
        fail("the launch returned something other than the kernel's buffers")
    outs = []
    for arg, buf in zip(args, returned):
        if not isinstance(buf, torch.Tensor) or buf.dtype != arg.buffer.dtype or buf.shape != arg.buffer.shape:
            fail(f"the launch returned a malformed buffer for {arg.name}")
        changed = (_bits(buf) != _bits(arg.original)).any(-1)
        outside = changed & ~arg.inside()
        if outside.any():
            fail(f"the kernel wrote {int(outside.sum())} element(s) outside {arg.name} (in its guard band or "
                 "between its rows): an out-of-bounds store; is a tl.store missing its mask?")
        if arg.output:
            unwritten = ~changed & arg.inside()
            if unwritten.any():
                fail(f"the kernel left {int(unwritten.sum())} of {arg.view(buf).numel()} element(s) of {arg.name} "
                     "unwritten (a program that returned early, a row or column tile it never stored?)")
            outs.append(arg.view(buf.to(arg.buffer.device)))
        elif changed.any():
            fail(f"the kernel changed {int(changed.sum())} element(s) of its input {arg.name}; inputs are read-only")
    return outs


def expect_block_sizes(got, names: tuple[str, ...], low: int, high: int) -> dict[str, int]:
    """The block sizes a submission declared: a dict with exactly ``names``, each a power of two
    in [``low``, ``high``] (the range the statement allows; the interpreter's cost grows with the
    block). Raises WrongAnswer naming the rule broken."""
    if not isinstance(got, dict) or sorted(got) != sorted(names):
        fail(f"block_sizes must return a dict with exactly the keys {', '.join(names)}, got "
             f"{sorted(got) if isinstance(got, dict) else type(got).__name__}")
    for k, v in got.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < low or v > high or v & (v - 1):
            fail(f"block size {k} = {v!r} must be a power of two in [{low}, {high}]")
    return dict(got)
