"""Occupancy as the minimum of four per-SM budgets, and whether raising it helps.

GPU limits come from the ``inferprep.specs.GPU`` argument (CUDA C++ Programming Guide, technical
specifications per compute capability; NVIDIA occupancy calculator). Constants that are the same
on every GPU here: 4 register sub-partitions per SM, 65,536 registers per block.
"""

from __future__ import annotations

from inferprep.specs import GPU, DType


def occupancy(gpu: GPU, threads_per_block: int, registers_per_thread: int, smem_per_block_bytes: int) -> dict:
    """Resident blocks per SM under each budget.

    Args:
        gpu: the GPU's per-SM limits.
        threads_per_block: int in [1, gpu.max_threads_per_block].
        registers_per_thread: int in [1, gpu.max_registers_per_thread].
        smem_per_block_bytes: the kernel's static + dynamic shared memory, bytes, in
            [0, gpu.smem_per_block_max_bytes].
    Returns: dict with keys warps_per_block, registers_per_warp, smem_per_block_bytes (with the
        per-block reserve and rounding), blocks_limit ({"warps", "registers", "shared_memory",
        "blocks"} -> int), active_blocks, active_warps, occupancy (float), limiters (list of str).
    Raises: ValueError on bad types or ranges, or when the block fails the per-block register check.
    """
    raise NotImplementedError


def occupancy_helps(gpu: GPU, dtype: DType, active_warps_per_sm: int, bytes_in_flight_per_warp: int,
                    latency_s: float, arithmetic_intensity: float) -> dict:
    """Roofline first, then Little's law.

    Returns: dict with ridge_flops_per_byte (float), bytes_in_flight_per_sm (float), warps_needed
        (int), regime ("compute_bound" | "latency_bound" | "bandwidth_saturated"), helps (bool).
    Raises: ValueError on bad types or ranges, or no tensor-core peak for dtype on gpu.
    """
    raise NotImplementedError
