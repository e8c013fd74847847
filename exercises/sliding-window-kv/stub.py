"""sliding-window-kv: the KV cache one sequence holds when some layers use a sliding window.

``layer_types``: a list of ``"full_attention"`` / ``"sliding_attention"`` strings, one per layer
(the Hugging Face ``config.json`` field). Definitions, conventions and errors in the statement.
"""

from __future__ import annotations


def sliding_layer_blocks(window: int, context_len: int, block_size: int) -> int:
    """Blocks one sliding layer holds under vLLM's sliding-window manager at a step that
    attends to ``context_len`` keys (the new token's own key included).

    Raises:
        ValueError: an argument not an int (a bool is not an int) or < 1.
    """
    raise NotImplementedError


def sequence_kv(layer_types: list[str], window: int, context_len: int,
                kv_bytes_per_token_per_layer: float, block_size: int, allocator: str) -> dict:
    """KV bytes one sequence holds under ``allocator`` ("uniform", "hybrid" or "token_exact").

    Returns ``{"bytes": float, "no_window_bytes": float, "saving": float}``.

    Raises:
        ValueError: bad ``layer_types``, an int argument not an int >= 1, a non-positive or
            non-finite ``kv_bytes_per_token_per_layer``, an unknown allocator.
    """
    raise NotImplementedError


def vllm_request_budget(layer_types: list[str], window: int, max_model_len: int,
                        max_num_batched_tokens: int, block_size: int) -> dict:
    """vLLM's worst-case blocks per request (``max_memory_usage_bytes``), counted in layer-blocks.

    Returns ``{"full_layer_blocks": int, "sliding_layer_blocks": int, "request_blocks": int,
    "saving": float}``.

    Raises:
        ValueError: bad ``layer_types``, an int argument not an int >= 1.
    """
    raise NotImplementedError
