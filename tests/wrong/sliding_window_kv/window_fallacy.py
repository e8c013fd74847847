"""WRONG: the window fallacy, saving = 1 - W/C for every windowed allocator, as if every layer were windowed. Killed by hybrid-gpt-oss-120b-W128-C131072-B16-s2048."""

from __future__ import annotations

import math

FULL, SLIDING = "full_attention", "sliding_attention"
ALLOCATORS = ("uniform", "hybrid", "token_exact")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _count_layers(layer_types) -> tuple[int, int]:
    """(full layers, sliding layers) of a list of Hugging Face ``layer_types`` strings."""
    if not isinstance(layer_types, (list, tuple)) or len(layer_types) == 0:
        raise ValueError("layer_types must be a non-empty list of layer type strings")
    for t in layer_types:
        if t not in (FULL, SLIDING):
            raise ValueError(f"unknown layer type {t!r}: expected {FULL!r} or {SLIDING!r}")
    n_sliding = sum(t == SLIDING for t in layer_types)
    return len(layer_types) - n_sliding, n_sliding


def sliding_layer_blocks(window: int, context_len: int, block_size: int) -> int:
    """Blocks one sliding layer holds under vLLM's manager at a step that attends to context_len keys.

    Before the step's slots are allocated, vLLM frees the leading blocks made only of skipped
    tokens: get_num_skipped_tokens(C - 1) = max(0, C - 1 - W + 1) = max(0, C - W) tokens, of which
    the whole blocks are freed. The step then needs slots for C tokens.
    """
    _check_int("window", window, 1)
    _check_int("context_len", context_len, 1)
    _check_int("block_size", block_size, 1)
    return _cdiv(context_len, block_size) - max(0, context_len - window) // block_size


def sequence_kv(layer_types, window: int, context_len: int, kv_bytes_per_token_per_layer,
                block_size: int, allocator: str) -> dict:
    """{"bytes", "no_window_bytes", "saving"} of one sequence at a step attending to context_len keys."""
    n_full, n_sliding = _count_layers(layer_types)
    s = kv_bytes_per_token_per_layer
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0:
        raise ValueError("kv_bytes_per_token_per_layer must be a finite number > 0")
    if allocator not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {ALLOCATORS}, got {allocator!r}")
    swa_blocks = sliding_layer_blocks(window, context_len, block_size)   # validates the ints
    blocks_full = _cdiv(context_len, block_size)
    n = n_full + n_sliding
    if allocator == "token_exact":               # no pages: exactly the tokens still attended to
        no_window = n * context_len * s
        held = n_full * context_len * s + n_sliding * min(context_len, window) * s
    else:                                        # paged: whole blocks of block_size tokens
        no_window = n * blocks_full * block_size * s
        if allocator == "uniform":               # a sliding layer is stored like a full one
            held = no_window
        else:
            held = (n_full * blocks_full + n_sliding * swa_blocks) * block_size * s
    if allocator != "uniform":
        held = no_window * min(1.0, window / context_len)
    return {"bytes": float(held), "no_window_bytes": float(no_window),
            "saving": 1.0 - held / no_window}


def vllm_request_budget(layer_types, window: int, max_model_len: int, max_num_batched_tokens: int,
                        block_size: int) -> dict:
    """vLLM's worst-case per-request blocks (``max_memory_usage_bytes`` / page size), in layer-blocks."""
    n_full, n_sliding = _count_layers(layer_types)
    _check_int("window", window, 1)
    _check_int("max_model_len", max_model_len, 1)
    _check_int("max_num_batched_tokens", max_num_batched_tokens, 1)
    _check_int("block_size", block_size, 1)
    full = _cdiv(max_model_len, block_size)
    # a prefill chunk of max_num_batched_tokens is allocated whole, next to the W - 1 earlier
    # tokens its first query still sees; +1 because the window need not start on a block boundary
    sliding = _cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block_size) + 1
    total = n_full * full + n_sliding * sliding
    return {"full_layer_blocks": full, "sliding_layer_blocks": sliding, "request_blocks": total,
            "saving": 1.0 - total / ((n_full + n_sliding) * full)}
