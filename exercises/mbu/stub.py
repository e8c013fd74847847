"""mbu: memory-bandwidth utilisation from a server's step log, and the dashboard mistakes.

Inputs are ``inferprep.specs`` values: a dense ``ModelConfig``, a ``GPU`` (only
``hbm_bytes_per_s``, the peak HBM bandwidth of one GPU in bytes/s, is used), ``DType`` s
(``bytes_per_element``) and the tensor-parallel degree ``tp``. A log row is a dict
``{"step": int, "t_start_s": float, "duration_s": float, "context_lens": [int, ...],
"num_prefill_tokens": int}``. Exact definitions in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig

LABELS = ("correct", "weights_only", "achievable_denominator", "node_bytes_gpu_peak",
          "gpu_bytes_node_peak", "mean_of_ratios", "idle_in_denominator", "kv_once_per_batch")


def step_bytes_per_gpu(model: ModelConfig, tp: int, context_lens: list[int], weight_dtype: DType,
                       kv_dtype: DType) -> dict:
    """Bytes ONE GPU of a TP group reads in one decode step of these sequences.

    Returns ``{"weight_bytes": float, "kv_bytes": float}``: matmul weights (LM head included,
    embedding not) / tp, and sum(context_lens) x KV bytes per token on one GPU (GQA heads:
    max(1, n_kv_heads // tp); an MLA latent whole on every rank).

    Raises:
        ValueError: a bad model, tp, dtype or context_lens (see the statement).
    """
    raise NotImplementedError


def mbu(log: list[dict], model: ModelConfig, gpu: GPU, tp: int, weight_dtype: DType,
        kv_dtype: DType) -> dict:
    """MBU over the busy decode steps of ``log`` (non-empty context_lens, no prefill tokens).

    Returns ``{"mbu": float, "busy_s": float, "bytes_per_gpu": float, "steps_used": int,
    "steps_excluded": int}`` with mbu = bytes_per_gpu / (busy_s x gpu.hbm_bytes_per_s).

    Raises:
        ValueError: a malformed log, no busy decode step, or a bad model/GPU/tp/dtype.
    """
    raise NotImplementedError


def dashboard_numbers(log: list[dict], model: ModelConfig, gpu: GPU, tp: int, weight_dtype: DType,
                      kv_dtype: DType, achievable_fraction: float) -> dict:
    """What the right computation and each of the seven dashboard mistakes report on ``log``.

    Returns ``{label: float}`` for every label of ``LABELS`` (formulas in the statement's table).

    Raises:
        ValueError: as ``mbu``; ``achievable_fraction`` outside (0, 1).
    """
    raise NotImplementedError


def diagnose_dashboard(log: list[dict], model: ModelConfig, gpu: GPU, tp: int, weight_dtype: DType,
                       kv_dtype: DType, achievable_fraction: float, reported_mbu: float) -> str:
    """The one label of ``LABELS`` whose number is within relative 1e-6 of ``reported_mbu``.

    Raises:
        ValueError: as ``dashboard_numbers``; ``reported_mbu`` not finite and > 0; no label or
            several labels match.
    """
    raise NotImplementedError
