"""qat-vs-ptq-cost: the GPU-hours of a QAT run against the serving GPUs it frees.

Inputs are ``inferprep.specs`` values (``ModelConfig``, ``GPU`` with ``dense_flops(dtype)``,
``DType``) and plain numbers, strings and dicts. Definitions in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def qat_gpu_hours(model: ModelConfig, tokens: float, gpu: GPU, compute_dtype: DType, mfu: float,
                  distill_teacher: bool, fakequant_overhead: float = 0.0) -> dict:
    """Cost of a QAT run.

    Returns ``{"active_params": int, "flops_per_token": float, "total_flops": float,
    "gpu_hours": float}``.

    Raises:
        ValueError: bad types or ranges (see the statement); a compute dtype without a peak.
    """
    raise NotImplementedError


def fleet_saving(fleet_gpus: int, ptq_format: str, qat_format: str,
                 tokens_per_s_per_gpu: dict) -> dict:
    """GPUs freed by serving in ``qat_format`` instead of ``ptq_format``.

    Returns ``{"speedup": float, "gpus_needed": float, "gpus_saved": float}``.

    Raises:
        ValueError: ``fleet_gpus`` not an int >= 1; a format missing from the dict; a
            throughput not a finite number > 0.
    """
    raise NotImplementedError


def break_even_days(qat_gpu_hours: float, gpus_saved: float) -> float:
    """Days until the freed GPUs repay the run; ``float('inf')`` when ``gpus_saved <= 0``.

    Raises:
        ValueError: ``qat_gpu_hours`` negative or not finite; ``gpus_saved`` not finite.
    """
    raise NotImplementedError


def skip_qat(case: dict) -> list[str]:
    """The statement's skip rules that hold for ``case``, sorted; ``[]`` means run QAT.

    Raises:
        ValueError: missing or extra keys, bad values (see the statement).
    """
    raise NotImplementedError
