"""FlashAttention forward. Fill in the three functions; see the statement for every rule."""

from __future__ import annotations

import torch


def flash_attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                            block_q: int = 64, block_k: int = 64,
                            scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact softmax attention computed tile by tile with the online-softmax recurrence.

    Args:
        q, k, v: (B, H, N, d), one dtype among float16, bfloat16, float32, float64, one device.
        causal: query i sees keys 0..i (N queries over the same N keys).
        block_q, block_k: tile heights (>= 1); they need not divide N.
        scale: multiplies q k^T; None means 1/sqrt(d); any other value (0.0 too) is used as given.

    Returns:
        out: (B, H, N, d), q's dtype and device.
        lse: (B, H, N), natural-log logsumexp of the scaled (and masked) scores of each row;
             float64 for float64 inputs, float32 otherwise.

    Raises:
        ValueError: q, k, v not 4-D, shapes or dtypes differ, unsupported dtype, block < 1 (0 or negative).

    Keep S, m, l and the output accumulator in float32 (float64 for float64) and divide in it.
    PyTorch's fused attention kernels (scaled_dot_product_attention, torch.ops.aten's) raise.

    Memory: never allocate anything of size N x N (or B*H*N*N); on CPU the grader's memory limit
    (384 MiB) is smaller than one 12288 x 12288 float32 matrix.
    """
    raise NotImplementedError


def flash_attention_tiles(hbm, causal: bool = False) -> None:
    """The same algorithm on the grader's HBM model of one head.

    hbm attributes: seq_len (N), head_dim (d), block_q, block_k (ints), scale (float: the softmax
    scale to use; the grader varies it, it is not always 1/sqrt(d)).
    hbm methods (each call moves the tile across the wire and is counted):
        load_q(i) -> (rows, d) float32, rows i*block_q .. min((i+1)*block_q, N) - 1
        load_k(j), load_v(j) -> (rows, d) float32, rows j*block_k .. min((j+1)*block_k, N) - 1
        store_o(i, o_tile (rows, d)), store_lse(i, lse_tile (rows,))
    Schedule: for each Q tile i: load_q(i); each needed K and V tile exactly once; store_o(i)
    and store_lse(i). With causal, skip K/V tiles whose first key is after tile i's last query.
    """
    raise NotImplementedError


def hbm_traffic(seq_len: int, head_dim: int, block_q: int, block_k: int,
                causal: bool = False) -> dict[str, int]:
    """Elements (not bytes) moved between HBM and the chip for one head.

    Returns {"flash_reads", "flash_writes", "naive_reads", "naive_writes"} as ints.
    Raises ValueError if seq_len, head_dim, block_q or block_k is < 1.
    """
    raise NotImplementedError
