"""WRONG: cheat, half the layers saved whatever the input (the teaser's answer hard-coded). Killed by blocks-W128-C129-B16 (and uniform-gpt-oss-120b-W128-C131072-B16-s2048)."""


def sliding_layer_blocks(window, context_len, block_size):
    return -(-min(context_len, window) // block_size)


def sequence_kv(layer_types, window, context_len, kv_bytes_per_token_per_layer, block_size, allocator):
    full = len(layer_types) * context_len * kv_bytes_per_token_per_layer
    return {"bytes": full / 2, "no_window_bytes": float(full), "saving": 0.5}


def vllm_request_budget(layer_types, window, max_model_len, max_num_batched_tokens, block_size):
    full = -(-max_model_len // block_size)
    return {"full_layer_blocks": full, "sliding_layer_blocks": 8,
            "request_blocks": len(layer_types) * full // 2 + 8 * len(layer_types) // 2, "saving": 0.5}
