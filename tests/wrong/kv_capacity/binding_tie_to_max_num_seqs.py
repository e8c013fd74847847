"""WRONG: a tie between max_num_seqs and the pool binds on max_num_seqs. Killed by max-num-seqs-ties-the-pool."""

from __future__ import annotations

import math

from inferprep.specs import DType, ModelConfig

# The multiple-choice part: ids of the statement's options that are true reasons.
TRUE_REASONS = ("growth-preemption", "max-num-seqs", "rank-minimum", "reserved-before-kv",
                "whole-blocks")


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def kv_heads_per_gpu(model: ModelConfig, tp: int) -> int:
    """KV heads one GPU stores: 1 latent for MLA; max(1, K // tp) for GQA (replicated when tp > K)."""
    _check_int("tp", tp, 1)
    _check_int("n_layers", model.n_layers, 1)
    _check_int("n_heads", model.n_heads, 1)
    if model.n_heads % tp:
        raise ValueError(f"n_heads={model.n_heads} is not divisible by tp={tp}")
    if model.kv_lora_rank > 0:                       # MLA: one latent "head" on every rank
        _check_int("qk_rope_head_dim", model.qk_rope_head_dim, 0)
        return 1
    _check_int("n_kv_heads", model.n_kv_heads, 1)
    _check_int("head_dim", model.head_dim, 1)
    k = model.n_kv_heads
    if tp <= k and k % tp:
        raise ValueError(f"n_kv_heads={k} is not divisible by tp={tp}")
    if tp > k and tp % k:
        raise ValueError(f"tp={tp} is not a multiple of n_kv_heads={k}")
    return max(1, k // tp)


def _kv_elements_per_token_per_gpu(model: ModelConfig, tp: int) -> int:
    h = kv_heads_per_gpu(model, tp)
    if model.kv_lora_rank > 0:
        return model.n_layers * (model.kv_lora_rank + model.qk_rope_head_dim)
    return model.n_layers * 2 * h * model.head_dim


def kv_capacity(total_bytes: int, gpu_memory_utilization: float, weight_bytes_per_gpu: int,
                activation_peak_bytes: int, non_torch_bytes: int, cudagraph_bytes: int,
                model: ModelConfig, tp: int, kv_dtype: DType, block_size: int, context_len: int,
                max_num_seqs: int) -> dict:
    """The budget, the pages and the number of sequences of ``context_len`` tokens that fit."""
    _check_int("total_bytes", total_bytes, 1)
    for name, v in (("weight_bytes_per_gpu", weight_bytes_per_gpu),
                    ("activation_peak_bytes", activation_peak_bytes),
                    ("non_torch_bytes", non_torch_bytes), ("cudagraph_bytes", cudagraph_bytes)):
        _check_int(name, v, 0)
    u = gpu_memory_utilization
    if isinstance(u, bool) or not isinstance(u, (int, float)) or not 0 < u <= 1:
        raise ValueError("gpu_memory_utilization must be a number in (0, 1]")
    if not isinstance(kv_dtype, DType):
        raise ValueError("kv_dtype must be an inferprep.specs.DType")
    _check_int("block_size", block_size, 1)
    _check_int("context_len", context_len, 1)
    _check_int("max_num_seqs", max_num_seqs, 1)
    heads = kv_heads_per_gpu(model, tp)

    requested = math.ceil(total_bytes * u)              # vLLM request_memory: ceil(total * util)
    available = requested - (weight_bytes_per_gpu + activation_peak_bytes + non_torch_bytes) \
        - cudagraph_bytes
    if available <= 0:
        raise ValueError("no memory left for the KV cache blocks")

    half_bytes = int(2 * kv_dtype.bytes_per_element)    # exact: INT4 is half a byte
    elems = _kv_elements_per_token_per_gpu(model, tp)
    page_half_bytes = block_size * elems * half_bytes   # one block of all layers, in half-bytes
    num_blocks = (2 * available) // page_half_bytes     # whole pages only
    blocks_per_seq = -(-context_len // block_size)      # the last block may be partly empty
    if num_blocks < blocks_per_seq:
        raise ValueError("the KV pool cannot hold one sequence of context_len tokens")
    max_seqs = num_blocks // blocks_per_seq
    effective = min(max_seqs, max_num_seqs)
    return {
        "requested_bytes": requested,
        "available_kv_bytes": available,
        "kv_heads_per_gpu": heads,
        "kv_bytes_per_token_per_gpu": elems * half_bytes / 2,
        "page_bytes": page_half_bytes / 2,
        "num_blocks": num_blocks,
        "blocks_per_seq": blocks_per_seq,
        "max_seqs": max_seqs,
        "max_seqs_effective": effective,
        "vllm_max_concurrency": num_blocks / blocks_per_seq,
        "binding": "max_num_seqs" if max_num_seqs <= max_seqs else "kv_pool",
    }


def ceiling_reasons() -> list[str]:
    """The ids of the statement's options that are true reasons, sorted."""
    return sorted(TRUE_REASONS)
