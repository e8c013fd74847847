"""disagg-kv-transfer: the KV link bandwidth a disaggregated prefill instance needs.

Inputs are ``inferprep.specs`` values: ``ModelConfig``, ``GPU`` (``dense_flops(dtype)``: dense
tensor-core peak, FLOP/s; ``nic_bytes_per_s``: one NIC per GPU, bytes/s) and ``DType``
(``bytes_per_element``). Definitions in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def kv_bytes_per_token(model: ModelConfig, kv_dtype: DType) -> float:
    """KV-cache bytes one token adds over all layers (GQA: K and V of every KV head; MLA: the
    latent plus the shared RoPE key).

    Raises:
        ValueError: wrong types, an inconsistent model (see the statement).
    """
    raise NotImplementedError


def prefill_flops_per_token(model: ModelConfig, prompt_len: int | None = None) -> float:
    """Prefill FLOPs per prompt token: 2 x active decoder-layer matmul weights; with a
    ``prompt_len``, plus causal attention and the LM head applied once per request.

    Raises:
        ValueError: ``prompt_len`` not None and not an int >= 1; an inconsistent model.
    """
    raise NotImplementedError


def kv_transfer_rate(model: ModelConfig, gpu: GPU, n_gpus: int, compute_dtype: DType, mfu: float,
                     kv_dtype: DType, prompt_len: int | None = None) -> dict:
    """KV bytes per second a busy prefill instance of ``n_gpus`` GPUs emits.

    Returns ``{"kv_bytes_per_token", "prefill_flops_per_token", "prefill_s_per_token",
    "bytes_per_s_instance", "bytes_per_s_per_gpu", "nic_fraction", "min_link_gbps": float,
    "verdict": "ok" | "tight" | "breaks"}``.

    Raises:
        ValueError: ``n_gpus`` not an int >= 1, ``mfu`` outside (0, 1], a compute dtype the GPU
            has no tensor-core peak for, bad ``prompt_len``, wrong types.
    """
    raise NotImplementedError


def link_verdict(bytes_per_s: float, link_gbps: float) -> str:
    """``"ok"``, ``"tight"`` or ``"breaks"`` for a rate in bytes/s on a link quoted in Gb/s.

    Raises:
        ValueError: ``bytes_per_s`` negative or not finite; ``link_gbps`` not finite or <= 0.
    """
    raise NotImplementedError
