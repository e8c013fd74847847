"""fp8-attention: FP8 attention simulated in float64 with its three rounding points. Rules in the
statement."""

from __future__ import annotations

import torch


def fp8_quantize(x: torch.Tensor, mode: str = "tensor", block: int = 128) -> torch.Tensor:
    """Quantize-dequantize x: (N, d) to e4m3 with amax/448 scales: one per tensor ("tensor"), per
    ``block`` consecutive rows ("block") or per column ("channel"). Returns float64 (N, d).

    Raises:
        ValueError: x not a finite non-empty 2-D floating tensor; unknown mode; block < 1.
    """
    raise NotImplementedError


def fp8_attention_forward(q, k, v, *, qk_mode: str = "tensor", v_mode: str = "tensor",
                          block_k: int = 128, p_scale_log2: float = 8.0, l_source: str = "fp32",
                          smooth_k: bool = False, hadamard=None) -> torch.Tensor:
    """One head, no mask: q (N_q, d), k (N_k, d), v (N_k, d_v) -> float64 (N_q, d_v), simulating
    an FP8 kernel's tile loop (see the statement).

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def logit_errors(q, k, *, qk_mode: str = "tensor", smooth_k: bool = False, hadamard=None,
                 block: int = 128) -> dict:
    """{"std": float, "p_weighted": float}: the FP8 logits' error, plain and probability-weighted."""
    raise NotImplementedError


def lowprec_dot(a, b, mant_bits: int = 13, chunk: int = 4, promote: int | None = None) -> torch.Tensor:
    """sum(a * b) over the last axis through a truncating accumulator with ``mant_bits``
    explicit mantissa bits; float64 of shape a.shape[:-1]."""
    raise NotImplementedError


def fix_gains(q, k, v, hadamard) -> dict:
    """Baseline error / error with each fix: keys "channel_k_scale", "block_scales", "smooth_k",
    "hadamard", "hadamard_std", "scale_p"."""
    raise NotImplementedError
