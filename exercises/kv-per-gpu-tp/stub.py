"""kv-per-gpu-tp: KV bytes per token on one GPU under tensor parallelism, GQA vs MLA.

Inputs are an ``inferprep.specs.ModelConfig``, ints and a ``DType``; rules in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, ModelConfig


def kv_bytes_per_token_per_gpu(model: ModelConfig, tp: int, kv_dtype: DType, dcp: int = 1) -> float:
    """Average KV bytes one GPU stores per token of a request, all layers.

    Raises:
        ValueError: tp or dcp not an int >= 1; tp incompatible with the model's heads; dcp not
            dividing the copies TP keeps of each KV head.
    """
    raise NotImplementedError


def max_request_tokens(model: ModelConfig, tp: int, kv_dtype: DType, free_kv_bytes_per_gpu: int,
                       dcp: int = 1) -> int:
    """Longest single request (tokens) whose KV fits in each GPU's ``free_kv_bytes_per_gpu``.

    Raises:
        ValueError: as ``kv_bytes_per_token_per_gpu``; a budget not an int >= 0.
    """
    raise NotImplementedError


def which_fits(request_tokens: int, deployments: list[dict]) -> list[bool]:
    """One bool per deployment dict ({"model", "tp", "kv_dtype", "free_kv_bytes_per_gpu"[, "dcp"]}).

    Raises:
        ValueError: ``request_tokens`` not an int >= 1; a malformed deployment; as above.
    """
    raise NotImplementedError
