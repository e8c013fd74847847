"""long-generation-batch: batch sizing for short prompts and very long outputs.

Definitions, conventions and errors are in the statement. ``StepModel`` is the shared step-time
model (``inferprep.sim.step_model``); you may call its methods.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def kv_pool_blocks(step_model: StepModel, block_size: int, gpu_memory_utilization: float,
                   reserved_bytes_per_gpu: float) -> int:
    """KV blocks of the replica: floor(n * (u * hbm_bytes - W/n - reserved) / (kvb * block_size)).

    Raises:
        ValueError: bad inputs (see the statement); no memory left for the KV cache.
    """
    raise NotImplementedError


def admission_limits(pool_blocks: int, prompt: int, output: int, block_size: int,
                     max_num_seqs: int) -> dict:
    """Batches three admission rules allow: ``{"reserved": int, "staggered": int, "current": int}``.

    Raises:
        ValueError: bad inputs (see the statement).
    """
    raise NotImplementedError


def overflow_step(pool_blocks: int, batch: int, prompt: int, output: int, block_size: int):
    """First decode step at which ``batch`` requests started together need more blocks than the
    pool, or ``None``.

    Raises:
        ValueError: bad inputs; the prompts alone do not fit.
    """
    raise NotImplementedError


def preemption_cost(step_model: StepModel, prompt: int, generated: int,
                    pcie_bytes_per_s: float) -> dict:
    """``{"recompute_tokens": int, "recompute_s": float, "swap_bytes": float, "swap_s": float}``.

    Raises:
        ValueError: bad inputs (see the statement).
    """
    raise NotImplementedError


def staggered_tpot(step_model: StepModel, batch: int, prompt: int, output: int) -> float:
    """Decode step time (s) of ``batch`` staggered requests at the KV peak.

    Raises:
        ValueError: bad inputs (see the statement).
    """
    raise NotImplementedError


def batch_for_user_speed(step_model: StepModel, pool_blocks: int, prompt: int, output: int,
                         block_size: int, target_tokens_per_s: float, max_num_seqs: int) -> dict:
    """``{"batch": int, "binding": "speed" | "kv_pool" | "max_num_seqs",
    "tokens_per_s_per_user": float | None, "throughput_tokens_per_s": float | None}``.

    Raises:
        ValueError: bad inputs (see the statement).
    """
    raise NotImplementedError
