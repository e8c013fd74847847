"""million-token-plan: KV bytes, causal prefill FLOPs and a TP x CP memory plan for one long request.

Inputs are ``inferprep.specs`` values: a dense ``ModelConfig`` (GQA or MLA), a ``GPU``
(``hbm_bytes``: capacity in bytes) and ``DType`` s (``bytes_per_element``). Definitions in the
statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def kv_bytes_per_request(model: ModelConfig, context_len: int, kv_dtype: DType) -> float:
    """KV cache bytes of one request holding ``context_len`` tokens (all layers)."""
    raise NotImplementedError


def prefill_flops(model: ModelConfig, prompt_len: int) -> dict:
    """``{"weights", "attention", "total": float, "attention_share": float}`` of a causal prefill."""
    raise NotImplementedError


def plan_fits(model: ModelConfig, gpu: GPU, n_gpus: int, tp: int, context_len: int,
              weight_dtype: DType, kv_dtype: DType, util: float, reserve_bytes: float) -> dict:
    """``{"cp": int, "kv_heads_per_gpu": int, "weights_per_gpu", "kv_per_gpu", "need", "budget": float,
    "fits": bool}`` for one request under TP = ``tp`` x CP = ``n_gpus // tp``."""
    raise NotImplementedError


def replacement(model: ModelConfig, gpu: GPU, n_gpus: int, tp: int, context_len: int,
                weight_dtype: DType, kv_dtype: DType, util: float, reserve_bytes: float) -> dict:
    """``{"fits": bool, "replacement": "none" | "fp8_kv" | "context_parallel" | "impossible",
    "n_gpus": int}``."""
    raise NotImplementedError


def what_breaks(model: ModelConfig, gpu: GPU, n_gpus: int, tp: int, context_len: int,
                weight_dtype: DType, kv_dtype: DType, util: float, reserve_bytes: float) -> dict:
    """``{change: replacement(...) after that change}`` for the changes "mha", "mqa",
    "layers_x2", "head_dim_x2", "context_x2" (GQA models only)."""
    raise NotImplementedError
