"""Masking and commitment for the perf stage's timed requests: code both sides run identically.

The wire is far slower than the kernels timed (a socket moves a few GB/s, an H200's HBM 4.8 TB/s),
so no transfer may sit inside the timed window; yet the submission must not see its inputs before
the window opens (it would compute the answer untimed) nor finish its work after it closes. So:

1. **stage** (untimed): the parent sends the call with every tensor XOR-ed with a keystream
   (``mask``): bytes from ``torch.randint`` on a generator seeded by a secret ``key`` (its index
   added per tensor), on the call's device, so the child can regenerate it as fast as it can read
   memory but cannot unmask anything without the key;
2. **timed** (timed by the parent): the parent sends only the key and a ``sketch`` seed; the
   harness unmasks the inputs in place (``unmask``), runs the call, and answers with ``digest``,
   a random linear sketch of its outputs' bit patterns: sum_i w_i * word_i in wrapping int64,
   weights drawn from ``sketch``. A correct digest needs every output bit inside the window;
3. **fetch** (untimed): the parent takes the outputs, recomputes their digest on its own side
   and checks them against the truth. A digest that does not match is work finished after the
   clock stopped (or outputs changed since), and fails the stage.

Integer sums wrap and commute, so the digest does not depend on the order of the reduction: the
same on both sides for the same bytes, device kind and torch version (the CPU generator is
Mersenne Twister, the CUDA one Philox; both sides draw on the call's device).
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import torch

__all__ = ["map_tensors", "tensors", "keystream", "mask", "unmask", "digest"]

_MASK64 = (1 << 64) - 1


def map_tensors(value: Any, fn: Callable[[int, torch.Tensor], torch.Tensor]) -> Any:
    """``value`` with each tensor t (depth first, in order; a launch argument's ``buffer`` too)
    replaced by ``fn(index, t)``; tuples, lists and dicts are rebuilt, everything else kept."""
    counter = [0]

    def walk(v):
        if isinstance(v, torch.Tensor):
            i = counter[0]
            counter[0] += 1
            return fn(i, v)
        if isinstance(v, tuple):
            return tuple(walk(x) for x in v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value)


def tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of ``value`` in ``map_tensors`` order."""
    out: list[torch.Tensor] = []
    map_tensors(value, lambda i, t: out.append(t) or t)
    return out


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """A flat uint8 view of contiguous ``t``'s storage (writes go through to ``t``)."""
    return t.reshape(-1).view(torch.uint8)


def keystream(key: int, index: int, nbytes: int, device) -> torch.Tensor:
    """(nbytes,) uint8 from a generator on ``device`` seeded with ``key + index`` (mod 2**63)."""
    gen = torch.Generator(device=device).manual_seed((key + index) % (1 << 63))
    return torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=gen, device=device)


def mask(value: Any, key: int) -> Any:
    """``value`` with every tensor replaced by a masked contiguous copy (parent side)."""
    def one(i: int, t: torch.Tensor) -> torch.Tensor:
        m = t.detach().clone().contiguous()
        if m.numel():
            b = _bytes(m)
            b ^= keystream(key, i, b.numel(), m.device)
        return m

    return map_tensors(value, one)


def unmask(value: Any, key: int) -> None:
    """Undo ``mask`` in place on the tensors of ``value`` (child side; wire-decoded tensors are
    contiguous and the child's own)."""
    def one(i: int, t: torch.Tensor) -> torch.Tensor:
        if t.numel():
            b = _bytes(t)
            b ^= keystream(key, i, b.numel(), t.device)
        return t

    map_tensors(value, one)


def digest(ts: list[torch.Tensor], sketch: int) -> int:
    """A random linear sketch of the tensors' bytes: for each tensor, its bytes as int32 words
    (bytes where the size is not a multiple of 4) times int64 weights drawn from ``sketch`` plus the
    tensor's index, summed in wrapping int64; combined over tensors with their shapes and dtypes.
    Returns an int in [0, 2**64)."""
    h = len(ts)
    for i, t in enumerate(ts):
        t = t.detach()
        shape_code = zlib.crc32(f"{tuple(t.shape)}:{t.dtype}".encode())
        acc = 0
        if t.numel():
            b = _bytes(t.contiguous())
            words = (b.view(torch.int32) if b.numel() % 4 == 0 else b).to(torch.int64)
            gen = torch.Generator(device=t.device).manual_seed((sketch + i) % (1 << 63))
            w = torch.randint(-(1 << 62), 1 << 62, (words.numel(),), dtype=torch.int64, generator=gen,
                              device=t.device)
            acc = int((words * w).sum()) & _MASK64
        h = (h * 0x100000001B3 + acc + shape_code) & _MASK64
    return h
