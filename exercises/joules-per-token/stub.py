"""Joules per token = power / throughput. Definitions in statement.md; GPU constants from
inferprep.specs (NVIDIA datasheets: TDP, HBM capacity and bandwidth, dense tensor-core peaks)."""

from __future__ import annotations

from inferprep.specs import GPU, DType


def joules_per_token(power_w_per_gpu: float, tokens_per_s: float, n_gpus: int) -> float:
    """n_gpus * power_w_per_gpu / tokens_per_s (J/token). Raises ValueError on non-positive input."""
    raise NotImplementedError


def energy_curve(gpu: GPU, dtype: DType, weight_bytes: float, kv_bytes_per_token: float, context_len: int,
                 flops_per_token: float, batches: list[int], floor_power_w: float, overhead_s: float) -> dict:
    """Per batch: step_time_s, tokens_per_s, power_w, joules_per_token (lists, in batch order);
    plus joules_spread, throughput_spread, power_spread (max/min) and moved_by ("throughput" | "power").

    Step time = max(bytes / hbm_bytes_per_s, b * flops_per_token / dense peak) + overhead_s;
    power = floor + (tdp - floor) * t_cmp / t.
    Raises: ValueError on bad input, floor above TDP, or a batch whose weights + KV exceed gpu.hbm_bytes.
    """
    raise NotImplementedError


def measured_energy_report(power_w_per_gpu: list[float], tokens_per_s: list[float], n_gpus: int,
                           tdp_w: float) -> dict:
    """joules_per_token (list), joules_spread, throughput_spread, power_spread, moved_by.

    Raises: ValueError on mismatched or empty lists, non-positive values, or a reading above tdp_w.
    """
    raise NotImplementedError
