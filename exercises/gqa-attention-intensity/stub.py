"""gqa-attention-intensity: arithmetic intensity of decode attention against the ridge.

Inputs are ``inferprep.specs`` values: ``ModelConfig`` (GQA when ``kv_lora_rank == 0``, else
MLA), ``GPU`` (``gpu.dense_flops(dtype)`` FLOP/s, ``hbm_bytes_per_s`` bytes/s), ``DType``
(``bytes_per_element``). Counting rules in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def decode_attention_intensity(model: ModelConfig, kv_dtype: DType, batch: int,
                               context_len: int) -> float:
    """FLOPs per HBM byte of one decode step's attention (all layers) for ``batch`` sequences,
    each attending to ``context_len`` cached tokens stored in ``kv_dtype``.

    Raises:
        ValueError: ``batch`` or ``context_len`` not an int >= 1; a GQA model whose n_heads is
            not a multiple of n_kv_heads.
    """
    raise NotImplementedError


def decode_weight_gemm_intensity(batch: int, weight_dtype: DType) -> float:
    """FLOPs per weight byte of a decode weight GEMM over ``batch`` tokens.

    Raises:
        ValueError: ``batch`` not an int >= 1.
    """
    raise NotImplementedError


def attention_regime(model: ModelConfig, gpu: GPU, kv_dtype: DType, compute_dtype: DType) -> dict:
    """Decode attention against the ridge of ``compute_dtype`` on ``gpu``.

    Returns ``{"intensity": float, "ridge": float, "fraction_of_ridge": float,
    "bound": "memory" | "compute"}``.

    Raises:
        ValueError: ``compute_dtype`` without a dense peak on ``gpu``; an inconsistent model.
    """
    raise NotImplementedError


def heads_per_kv_head_for_ridge(gpu: GPU, kv_dtype: DType, compute_dtype: DType) -> int:
    """Smallest integer query-heads-per-KV-head ratio H/K at which GQA decode attention with a
    ``kv_dtype`` cache is compute-bound against the ridge of ``compute_dtype``.

    Raises:
        ValueError: ``compute_dtype`` without a dense peak on ``gpu``.
    """
    raise NotImplementedError
