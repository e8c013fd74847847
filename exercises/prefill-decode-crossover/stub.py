"""prefill-decode-crossover: the prompt length where prefill turns compute-bound, and TTFT.

Inputs are ``inferprep.specs`` values: ``ModelConfig`` (architecture), ``GPU`` (dense peaks in
FLOP/s via ``gpu.dense_flops(dtype)``, ``hbm_bytes_per_s`` in bytes/s) and ``DType``
(``bytes_per_element``). The counting rules are in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def ttft(model: ModelConfig, gpu: GPU, dtype: DType, prompt_len: int, n_gpus: int = 1) -> dict:
    """Roofline time to first token of one prompt of ``prompt_len`` tokens on an idle server.

    Weights, KV cache and math are all in ``dtype``; ``n_gpus`` GPUs in tensor parallel add
    their peaks and bandwidths (communication ignored).

    Returns ``{"compute_ms": float, "memory_ms": float, "ttft_ms": float,
    "bound": "compute" | "memory"}`` with ttft = max(compute, memory), milliseconds.

    Raises:
        ValueError: ``prompt_len`` or ``n_gpus`` not an int >= 1; ``dtype`` without a dense peak
            on ``gpu``; an inconsistent model (see the statement).
    """
    raise NotImplementedError


def prefill_crossover_tokens(model: ModelConfig, gpu: GPU, dtype: DType) -> int:
    """Smallest prompt length P >= 1 whose prefill is compute-bound (compute time >= memory
    time, one GPU).

    Raises:
        ValueError: ``dtype`` without a dense peak on ``gpu``; an inconsistent model.
    """
    raise NotImplementedError
