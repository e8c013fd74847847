"""WRONG: staggered_tpot hand-rolled with decode attention priced as the KV read kvb*context/BW only (the FLOP side of the max dropped). Killed by tpot-mqa64-slow-int4kv-compute-bound-attention-b8-p512-o4096."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _check_real(name: str, v, positive: bool = False) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {v!r}")


def _check_step_model(sm) -> None:
    if not isinstance(sm, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")


def blocks(tokens: int, block_size: int) -> int:
    """Blocks of block_size tokens that hold `tokens` tokens."""
    return -(-tokens // block_size)


def kv_pool_blocks(step_model: StepModel, block_size: int, gpu_memory_utilization: float,
                   reserved_bytes_per_gpu: float) -> int:
    """floor(n * (u * hbm_bytes - W / n - reserved) / (kvb * bs)): the replica's KV blocks."""
    _check_step_model(step_model)
    _check_int("block_size", block_size, 1)
    u = gpu_memory_utilization
    if isinstance(u, bool) or not isinstance(u, (int, float)) or not 0 < u <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {u!r}")
    _check_real("reserved_bytes_per_gpu", reserved_bytes_per_gpu)
    sm = step_model
    free_per_gpu = u * sm.gpu.hbm_bytes - sm.weight_bytes / sm.n_gpus - reserved_bytes_per_gpu
    if free_per_gpu <= 0:
        raise ValueError("the weights and the reserve leave no memory for the KV cache")
    return math.floor(sm.n_gpus * free_per_gpu / (sm.kv_bytes_per_token * block_size))


def _check_load(prompt, output, block_size) -> None:
    _check_int("prompt", prompt, 1)
    _check_int("output", output, 1)
    _check_int("block_size", block_size, 1)


def _staggered_steps(batch: int, output: int) -> list[int]:
    """Decode steps of b staggered requests at the KV peak: the oldest at its last step."""
    return [output - (i * output) // batch for i in range(batch)]


def _staggered_need(batch, prompt, output, block_size) -> int:
    return sum(blocks(prompt + s, block_size) for s in _staggered_steps(batch, output))


def _largest(fits, hi: int) -> int:
    """Largest b in 0..hi with fits(b) (fits is monotone: true up to some b, then false)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _staggered_limit(pool_blocks, prompt, output, block_size, hi) -> int:
    return _largest(lambda b: _staggered_need(b, prompt, output, block_size) <= pool_blocks, hi)


def admission_limits(pool_blocks: int, prompt: int, output: int, block_size: int,
                     max_num_seqs: int) -> dict:
    """Batches three admission rules allow: {"reserved", "staggered", "current"}."""
    _check_int("pool_blocks", pool_blocks, 0)
    _check_load(prompt, output, block_size)
    _check_int("max_num_seqs", max_num_seqs, 1)
    return {
        "reserved": min(max_num_seqs, pool_blocks // blocks(prompt + output, block_size)),
        "staggered": _staggered_limit(pool_blocks, prompt, output, block_size, max_num_seqs),
        "current": min(max_num_seqs, pool_blocks // blocks(prompt, block_size)),
    }


def overflow_step(pool_blocks: int, batch: int, prompt: int, output: int, block_size: int):
    """First decode step s (1..output) at which `batch` requests admitted together need more
    blocks than the pool: batch * blocks(prompt + s) > pool_blocks. None if they never do."""
    _check_int("pool_blocks", pool_blocks, 0)
    _check_int("batch", batch, 1)
    _check_load(prompt, output, block_size)
    if batch * blocks(prompt, block_size) > pool_blocks:
        raise ValueError("the batch's prompts alone do not fit in the pool")
    per_request = pool_blocks // batch               # blocks each may hold
    s = per_request * block_size - prompt + 1         # first step needing one more block
    return s if s <= output else None


def preemption_cost(step_model: StepModel, prompt: int, generated: int,
                    pcie_bytes_per_s: float) -> dict:
    """Price of preempting a request after `generated` decode steps."""
    _check_step_model(step_model)
    _check_int("prompt", prompt, 1)
    _check_int("generated", generated, 0)
    _check_real("pcie_bytes_per_s", pcie_bytes_per_s, positive=True)
    n = prompt + generated
    swap_bytes = n * step_model.kv_bytes_per_token
    return {"recompute_tokens": n, "recompute_s": step_model.step_s([(n, 0, 1)]),
            "swap_bytes": swap_bytes, "swap_s": swap_bytes / pcie_bytes_per_s}


def staggered_tpot(step_model: StepModel, batch: int, prompt: int, output: int) -> float:
    """Decode step time of `batch` staggered requests at the KV peak."""
    _check_step_model(step_model)
    _check_int("batch", batch, 1)
    _check_int("prompt", prompt, 1)
    _check_int("output", output, 1)
    sm = step_model
    n = batch
    gemm = sm.gemm_s(n, n)
    att = 0.0
    for s in _staggered_steps(batch, output):
        att += sm.kv_bytes_per_token * (prompt + s) / sm.bytes_per_s
    return sm.t_fixed_s + gemm + att


def batch_for_user_speed(step_model: StepModel, pool_blocks: int, prompt: int, output: int,
                         block_size: int, target_tokens_per_s: float, max_num_seqs: int) -> dict:
    """Largest staggered batch whose per-user rate 1 / TPOT meets the target, within the pool
    and max_num_seqs: {"batch", "binding", "tokens_per_s_per_user", "throughput_tokens_per_s"}."""
    _check_step_model(step_model)
    _check_int("pool_blocks", pool_blocks, 0)
    _check_load(prompt, output, block_size)
    _check_real("target_tokens_per_s", target_tokens_per_s, positive=True)
    _check_int("max_num_seqs", max_num_seqs, 1)
    pool_limit = _staggered_limit(pool_blocks, prompt, output, block_size, max_num_seqs + 1)
    cap = min(pool_limit, max_num_seqs)

    def fast_enough(b: int) -> bool:
        return 1.0 / staggered_tpot(step_model, b, prompt, output) >= target_tokens_per_s

    if cap >= 1 and fast_enough(cap):
        batch = cap
        binding = "kv_pool" if pool_limit <= max_num_seqs else "max_num_seqs"
    else:
        batch = _largest(fast_enough, cap)
        binding = "speed" if cap >= 1 else "kv_pool"
    if batch == 0:
        return {"batch": 0, "binding": binding, "tokens_per_s_per_user": None,
                "throughput_tokens_per_s": None}
    t = staggered_tpot(step_model, batch, prompt, output)
    return {"batch": batch, "binding": binding, "tokens_per_s_per_user": 1.0 / t,
            "throughput_tokens_per_s": batch / t}
