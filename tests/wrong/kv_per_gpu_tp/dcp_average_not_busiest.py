"""WRONG: divides the budget by the average per-token bytes (floor(free x dcp / bytes)), not by the busiest rank's ceil(T / dcp). Killed by max-request-deepseek-v3-tp8-dcp8-bf16-one-byte-short."""

from __future__ import annotations

from inferprep.specs import DType, ModelConfig


def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")


def _per_rank_half_bytes(model: ModelConfig, tp: int, kv_dtype: DType, dcp: int) -> int:
    """Bytes (x2, so that INT4 stays an int) one rank stores per token it holds, all layers."""
    _check_int("tp", tp, 1)
    _check_int("dcp", dcp, 1)
    _check_int("n_layers", model.n_layers, 1)
    _check_int("n_heads", model.n_heads, 1)
    if not isinstance(kv_dtype, DType):
        raise ValueError("kv_dtype must be an inferprep.specs.DType")
    if model.n_heads % tp:
        raise ValueError(f"n_heads={model.n_heads} is not divisible by tp={tp}")
    half = int(2 * kv_dtype.bytes_per_element)
    if model.kv_lora_rank > 0:                  # MLA: the latent + rope key, whole on every rank
        _check_int("qk_rope_head_dim", model.qk_rope_head_dim, 0)
        copies = tp                             # tp identical copies
        elems = model.n_layers * (model.kv_lora_rank + model.qk_rope_head_dim)
    else:
        _check_int("n_kv_heads", model.n_kv_heads, 1)
        _check_int("head_dim", model.head_dim, 1)
        k = model.n_kv_heads
        if tp <= k and k % tp:
            raise ValueError(f"n_kv_heads={k} is not divisible by tp={tp}")
        if tp > k and tp % k:
            raise ValueError(f"tp={tp} is not a multiple of n_kv_heads={k}")
        copies = tp // k if tp > k else 1       # each head is replicated on tp // k ranks
        elems = model.n_layers * 2 * max(1, k // tp) * model.head_dim
    if copies % dcp:
        raise ValueError(f"dcp={dcp} must divide the {copies} copies TP keeps of each KV head")
    return elems * half


def kv_bytes_per_token_per_gpu(model: ModelConfig, tp: int, kv_dtype: DType, dcp: int = 1) -> float:
    """Average KV bytes one GPU stores per token of a request (all layers)."""
    return _per_rank_half_bytes(model, tp, kv_dtype, dcp) / 2 / dcp


def max_request_tokens(model: ModelConfig, tp: int, kv_dtype: DType, free_kv_bytes_per_gpu: int,
                       dcp: int = 1) -> int:
    """Longest single request whose KV fits in every GPU's free KV budget."""
    _check_int("free_kv_bytes_per_gpu", free_kv_bytes_per_gpu, 0)
    b2 = _per_rank_half_bytes(model, tp, kv_dtype, dcp)
    # the busiest rank holds ceil(T / dcp) tokens of a T-token request
    return (2 * free_kv_bytes_per_gpu * dcp) // b2


def which_fits(request_tokens: int, deployments: list[dict]) -> list[bool]:
    """For each deployment, whether one request of ``request_tokens`` tokens fits."""
    _check_int("request_tokens", request_tokens, 1)
    if not isinstance(deployments, (list, tuple)):
        raise ValueError("deployments must be a list of dicts")
    out = []
    for d in deployments:
        if not isinstance(d, dict) or not {"model", "tp", "kv_dtype", "free_kv_bytes_per_gpu"} <= set(d) \
                or not set(d) <= {"model", "tp", "kv_dtype", "free_kv_bytes_per_gpu", "dcp"}:
            raise ValueError("each deployment is a dict with keys model, tp, kv_dtype, "
                             "free_kv_bytes_per_gpu and optionally dcp")
        out.append(request_tokens <= max_request_tokens(d["model"], d["tp"], d["kv_dtype"],
                                                        d["free_kv_bytes_per_gpu"], d.get("dcp", 1)))
    return out
