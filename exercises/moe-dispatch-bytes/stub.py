"""moe-dispatch-bytes: dispatch + combine bytes of an MoE layer, group-limited routing, and the
NIC / NVLink split of a routing trace. Definitions in the statement."""

from __future__ import annotations

from inferprep.specs import ModelConfig


def payload_bytes(model: ModelConfig, dispatch_format: str = "fp8_block128",
                  low_latency: bool = False) -> dict:
    """Bytes one token moves per MoE layer and per decode step (dispatch + combine).

    ``dispatch_format``: ``"fp8_block128"`` or ``"bf16"``; combine is always BF16.
    ``low_latency``: DeepEP low-latency kernels (16-byte header on every dispatch copy).
    Returns ``{"dispatch_copy_bytes", "combine_copy_bytes", "per_token_per_layer",
    "moe_layers", "per_token_per_step"}``.

    Raises:
        ValueError: not an MoE model, unknown format, FP8 with hidden_size not divisible by 128.
    """
    raise NotImplementedError


def route_experts(model: ModelConfig, scores: list[list[float]], group_limited: bool) -> list[list[int]]:
    """Each token's ``experts_per_token`` routed experts, highest score first (ties: lower id).

    ``scores[t][e]``: token t's routing score for expert e (n_routed_experts per row). With
    ``group_limited`` and ``model.n_expert_groups > 1`` only the ``topk_expert_groups`` best
    groups (group score = sum of its two highest expert scores; ties: lower group index) are
    eligible.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError


def link_traffic(model: ModelConfig, topk_ids: list[list[int]], src_gpus: list[int], n_gpus: int,
                 gpus_per_node: int, mode: str, dispatch_format: str = "fp8_block128") -> dict:
    """NIC, NVLink and local copies (and link bytes, dispatch + combine) of one MoE layer.

    ``topk_ids[t]``: token t's routed experts; ``src_gpus[t]``: the GPU it lives on. Expert e is
    on GPU ``e // (n_routed_experts // n_gpus)``, GPU g on node ``g // gpus_per_node``.
    ``mode``: ``"per_expert"`` or ``"node_dedup"``.
    Returns ``{"nic_copies", "nvlink_copies", "local_copies": int, "nic_bytes", "nvlink_bytes"}``.

    Raises:
        ValueError: see the statement.
    """
    raise NotImplementedError
