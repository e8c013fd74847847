"""fp8-kv-cache: an e4m3/e5m2 KV codec with vLLM's scale convention, decode attention over the
FP8 cache, and a clipping audit over a long hosted KV stream. Rules in the statement."""

from __future__ import annotations

import torch


def fp8_encode(x: torch.Tensor, scale, fmt: str = "e4m3") -> torch.Tensor:
    """Codes of ``x`` (any shape, floating dtype): round_to_fp8(clamp(float32(x) / scale, -max, max)).

    ``scale``: a positive number or a float tensor broadcastable to ``x`` (e.g. ``()`` or
    ``(H_kv, 1, 1)`` for ``x: (B, H_kv, L, D)``). ``fmt``: ``"e4m3"`` (max 448) or ``"e5m2"``
    (max 57344). Returns ``torch.uint8`` codes (the FP8 bit patterns), shape of ``x``, on its device.

    Raises:
        ValueError: non-floating or non-finite ``x``; a scale that is not positive and finite
            or does not broadcast to ``x``; an unknown ``fmt``.
    """
    raise NotImplementedError


def fp8_decode(codes: torch.Tensor, scale, fmt: str = "e4m3") -> torch.Tensor:
    """float32 values ``fp8_value(code) * scale`` (scale as in ``fp8_encode``).

    Raises:
        ValueError: ``codes`` not ``torch.uint8``; a NaN or infinity code; a bad scale or ``fmt``.
    """
    raise NotImplementedError


def fp8_decode_attention(q: torch.Tensor, k_codes: torch.Tensor, v_codes: torch.Tensor, k_scale,
                         v_scale, fmt: str = "e4m3", sm_scale: float | None = None) -> torch.Tensor:
    """Decode attention (one new query per sequence) over an FP8 KV cache.

    q: (B, H_q, D) floating; k_codes, v_codes: (B, H_kv, L, D) uint8; H_q a multiple of H_kv,
    query head h reads KV head h // (H_q // H_kv). k_scale, v_scale: a positive number, a 0-d
    tensor or a (H_kv,) tensor (one scale per KV head). sm_scale: default 1 / sqrt(D).
    Returns float32 (B, H_q, D).

    Raises:
        ValueError: see the statement (shapes, dtypes, scales, fmt, sm_scale).
    """
    raise NotImplementedError


def audit_long_context(stream, calib_start: int, calib_end: int, k_div: float = 200.0,
                       v_div: float = 100.0, per_head: bool = False) -> dict:
    """Calibrate K and V scales on tokens [calib_start, calib_end) of a hosted stream
    (scale = amax / div) and find the tokens of the whole stream that they clip: an element
    clips if |x| * div > 448 * amax, compared exactly (in float64, not float32).

    ``stream``: attributes ``length``, ``num_kv_heads``, ``head_dim``; ``stream.read(start, end)``
    returns ``(k, v)``, float32 CPU tensors of shape (end - start, num_kv_heads, head_dim), at most
    4096 tokens per call. Read each token at most twice in all.

    Returns ``{"k_scale", "v_scale": float (or a list of floats, one per KV head, if per_head),
    "k_first_clipped", "v_first_clipped": int | None, "k_clipped_tokens", "v_clipped_tokens": int}``.

    Raises:
        ValueError: a window that is not 0 <= calib_start < calib_end <= length; a div that is
            not positive and finite; a calibration amax of 0.
    """
    raise NotImplementedError
