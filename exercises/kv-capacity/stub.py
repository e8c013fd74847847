"""kv-capacity: the KV budget of one GPU, its blocks, and how many sequences they hold.

Inputs are ints (bytes, counts), a float utilisation, an ``inferprep.specs.ModelConfig`` and a
``DType``. Definitions, formulas and errors are in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, ModelConfig


def kv_capacity(total_bytes: int, gpu_memory_utilization: float, weight_bytes_per_gpu: int,
                activation_peak_bytes: int, non_torch_bytes: int, cudagraph_bytes: int,
                model: ModelConfig, tp: int, kv_dtype: DType, block_size: int, context_len: int,
                max_num_seqs: int) -> dict:
    """Budget, pages and sequences of ``context_len`` tokens on one GPU of a TP replica.

    ``total_bytes``: the memory the device reports (not the datasheet figure).
    Returns ``{"requested_bytes", "available_kv_bytes", "kv_heads_per_gpu", "num_blocks",
    "blocks_per_seq", "max_seqs", "max_seqs_effective": int, "kv_bytes_per_token_per_gpu",
    "page_bytes", "vllm_max_concurrency": float, "binding": "kv_pool" | "max_num_seqs"}``.

    Raises:
        ValueError: a byte amount not a non-negative int; utilisation outside (0, 1]; tp, block
            size, context length or max_num_seqs not an int >= 1; tp incompatible with the
            model's heads; no memory left, or not enough for one sequence (see the statement).
    """
    raise NotImplementedError


def ceiling_reasons() -> list[str]:
    """Sorted ids of the statement's options that are true reasons the figure is a ceiling."""
    raise NotImplementedError
