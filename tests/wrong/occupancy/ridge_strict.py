"""WRONG: calls a kernel compute-bound only above the ridge (>), so one exactly at the ridge falls through to Little's law.

The statement's roofline test is intensity >= ridge; no old case put the intensity exactly on a
ridge, so this passed.
"""

from __future__ import annotations

import math

from inferprep.specs import GPU, DType

REGISTER_PARTITIONS = 4          # cudaOccSubPartitionsPerMultiprocessor, compute capability 7.0+
REGISTERS_PER_BLOCK = 65536      # Programming Guide: max 32-bit registers per thread block
LIMITERS = ("warps", "registers", "shared_memory", "blocks")
REGIMES = ("compute_bound", "latency_bound", "bandwidth_saturated")


def _int(name: str, v, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name} must be an int in [{lo}, {hi if hi is not None else 'inf'}], got {v!r}")
    return v


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(gpu: GPU, threads_per_block: int, registers_per_thread: int, smem_per_block_bytes: int) -> dict:
    """Resident blocks per SM under each limiter, the binding limiter(s) and the occupancy."""
    if not isinstance(gpu, GPU):
        raise ValueError("gpu must be an inferprep.specs.GPU")
    threads = _int("threads_per_block", threads_per_block, 1, gpu.max_threads_per_block)
    regs = _int("registers_per_thread", registers_per_thread, 1, gpu.max_registers_per_thread)
    smem = _int("smem_per_block_bytes", smem_per_block_bytes, 0, gpu.smem_per_block_max_bytes)

    warps_per_block = -(-threads // gpu.warp_size)
    max_warps = min(gpu.max_warps_per_sm, gpu.max_threads_per_sm // gpu.warp_size)

    regs_per_warp = _round_up(regs * gpu.warp_size, gpu.register_alloc_unit)
    if regs_per_warp * _round_up(warps_per_block, REGISTER_PARTITIONS) > REGISTERS_PER_BLOCK:
        raise ValueError("too many registers for one block: the launch would fail")
    warps_per_partition = (gpu.registers_per_sm // REGISTER_PARTITIONS) // regs_per_warp

    smem_per_block = _round_up(smem + gpu.smem_reserved_per_block_bytes, gpu.smem_alloc_unit_bytes)

    limits = {
        "warps": max_warps // warps_per_block,
        "registers": warps_per_partition * REGISTER_PARTITIONS // warps_per_block,
        "shared_memory": gpu.smem_per_sm_bytes // smem_per_block,
        "blocks": gpu.max_blocks_per_sm,
    }
    active = min(limits.values())
    return {
        "warps_per_block": warps_per_block,
        "registers_per_warp": regs_per_warp,
        "smem_per_block_bytes": smem_per_block,
        "blocks_limit": limits,
        "active_blocks": active,
        "active_warps": active * warps_per_block,
        "occupancy": active * warps_per_block / gpu.max_warps_per_sm,
        "limiters": [k for k in LIMITERS if limits[k] == active],
    }


def occupancy_helps(gpu: GPU, dtype: DType, active_warps_per_sm: int, bytes_in_flight_per_warp: int,
                    latency_s: float, arithmetic_intensity: float) -> dict:
    """Would more resident warps make this kernel faster? Roofline first, then Little's law."""
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("gpu must be an inferprep.specs.GPU and dtype an inferprep.specs.DType")
    active = _int("active_warps_per_sm", active_warps_per_sm, 1, gpu.max_warps_per_sm)
    per_warp = _int("bytes_in_flight_per_warp", bytes_in_flight_per_warp, 1)
    for name, v in (("latency_s", latency_s), ("arithmetic_intensity", arithmetic_intensity)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0")
    ridge = gpu.dense_flops(dtype) / gpu.hbm_bytes_per_s
    needed_per_sm = gpu.hbm_bytes_per_s * latency_s / gpu.sm_count
    warps_needed = math.ceil(needed_per_sm / per_warp)
    if arithmetic_intensity > ridge:
        regime = "compute_bound"
    elif active < warps_needed:
        regime = "latency_bound"
    else:
        regime = "bandwidth_saturated"
    return {
        "ridge_flops_per_byte": ridge,
        "bytes_in_flight_per_sm": needed_per_sm,
        "warps_needed": warps_needed,
        "regime": regime,
        "helps": regime == "latency_bound",
    }
