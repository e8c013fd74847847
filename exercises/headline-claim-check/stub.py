"""Is a headline tokens/s physics or marketing? Definitions in statement.md.

Models: inferprep.specs.ModelConfig (Hugging Face config.json fields). GPUs: inferprep.specs.GPU
(NVIDIA datasheets: peak HBM bandwidth and capacity). Dtypes: inferprep.specs.DType.
"""

from __future__ import annotations

from inferprep.specs import GPU, DType, ModelConfig


def decode_weight_params(model: ModelConfig) -> int:
    """Parameters a batch-1 decode step multiplies: attention (GQA or MLA), dense MLPs or the
    router + active (top-k and shared) experts, and the LM head; no embedding table, norms or
    biases. Raises ValueError if model is not a ModelConfig."""
    raise NotImplementedError


def kv_bytes_per_token(model: ModelConfig, kv_dtype: DType) -> float:
    """KV-cache bytes per token over all layers (GQA: 2 * n_kv_heads * head_dim per layer;
    MLA: kv_lora_rank + qk_rope_head_dim per layer), times kv_dtype.bytes_per_element."""
    raise NotImplementedError


def check_claim(model: ModelConfig, gpu: GPU, claimed_tokens_per_s: float, context_len: int,
                weight_dtype: DType, kv_dtype: DType, n_gpus: int, max_gpus: int,
                max_tokens_per_step: float) -> dict:
    """Returns a dict with bytes_per_token, implied_bytes_per_s, fraction_of_peak, physical,
    max_weight_bytes_per_param, min_tokens_per_step, min_gpus, min_batch and conditions
    (subset of ["batch", "quantization", "speculation", "tensor_parallel"], in that order).
    Raises: ValueError on wrong types or out-of-range arguments."""
    raise NotImplementedError
