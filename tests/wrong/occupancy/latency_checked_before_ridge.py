"""Wrong: checks Little's law (too few warps in flight) before the roofline, so a kernel past the ridge with few warps is called latency_bound instead of compute_bound."""
import math
from inferprep.specs import GPU, DType

def _isint(x):
    return isinstance(x, int) and not isinstance(x, bool)

def _cdiv(a, b):
    return -(-a // b)

def occupancy(gpu, threads_per_block, registers_per_thread, smem_per_block_bytes):
    if not isinstance(gpu, GPU):
        raise ValueError("gpu")
    for x in (threads_per_block, registers_per_thread, smem_per_block_bytes):
        if not _isint(x):
            raise ValueError("int")
    if not (1 <= threads_per_block <= gpu.max_threads_per_block):
        raise ValueError("tpb")
    if not (1 <= registers_per_thread <= gpu.max_registers_per_thread):
        raise ValueError("rpt")
    if not (0 <= smem_per_block_bytes <= gpu.smem_per_block_max_bytes):
        raise ValueError("smem")
    ws = gpu.warp_size
    W = _cdiv(threads_per_block, ws)
    R = _cdiv(registers_per_thread * ws, gpu.register_alloc_unit) * gpu.register_alloc_unit
    if R * _cdiv(W, 4) * 4 > 65536:
        raise ValueError("regs per block")
    lw = min(gpu.max_warps_per_sm, gpu.max_threads_per_sm // ws) // W
    wbr = ((gpu.registers_per_sm // 4) // R) * 4
    lr = wbr // W
    S = _cdiv(smem_per_block_bytes + gpu.smem_reserved_per_block_bytes, gpu.smem_alloc_unit_bytes) * gpu.smem_alloc_unit_bytes
    ls = gpu.smem_per_sm_bytes // S
    lb = gpu.max_blocks_per_sm
    lim = {"warps": lw, "registers": lr, "shared_memory": ls, "blocks": lb}
    ab = min(lim.values())
    return {"warps_per_block": W, "registers_per_warp": R, "smem_per_block_bytes": S,
            "blocks_limit": lim, "active_blocks": ab, "active_warps": ab * W,
            "occupancy": ab * W / gpu.max_warps_per_sm,
            "limiters": [k for k in ("warps", "registers", "shared_memory", "blocks") if lim[k] == ab]}

def occupancy_helps(gpu, dtype, active_warps_per_sm, bytes_in_flight_per_warp, latency_s, arithmetic_intensity):
    if not isinstance(gpu, GPU) or not isinstance(dtype, DType):
        raise ValueError("types")
    peak = gpu.dense_flops(dtype)
    if not _isint(active_warps_per_sm) or not (1 <= active_warps_per_sm <= gpu.max_warps_per_sm):
        raise ValueError("warps")
    if not _isint(bytes_in_flight_per_warp) or bytes_in_flight_per_warp < 1:
        raise ValueError("bytes")
    for x in (latency_s, arithmetic_intensity):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
            raise ValueError("num")
    ridge = peak / gpu.hbm_bytes_per_s
    inflight = gpu.hbm_bytes_per_s * latency_s / gpu.sm_count
    need = math.ceil(inflight / bytes_in_flight_per_warp)
    if active_warps_per_sm < need:
        regime = "latency_bound"
    elif arithmetic_intensity >= ridge:
        regime = "compute_bound"
    else:
        regime = "bandwidth_saturated"
    return {"ridge_flops_per_byte": float(ridge), "bytes_in_flight_per_sm": float(inflight),
            "warps_needed": int(need), "regime": regime, "helps": regime == "latency_bound"}
