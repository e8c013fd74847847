"""hetero-pools: node counts, roles, decode step time, pool sizes and the prefill/decode
compatibility check for a large MoE model on two GPU generations. Definitions in the statement."""

from __future__ import annotations

from inferprep.specs import GPU


def min_nodes(gpu: GPU, weight_bytes: float, util: float, reserve_bytes_per_gpu: float,
              kv_room_bytes_per_gpu: float, gpus_per_node: int = 8, power_of_two: bool = True) -> int:
    """Fewest nodes (a power of two if asked) whose GPUs hold weights / (gpus_per_node * n) each
    and still have kv_room_bytes_per_gpu left under util * hbm_bytes - reserve.

    Raises:
        ValueError: util outside (0, 1], a negative or non-finite size, no node count fits.
    """
    raise NotImplementedError


def assign_roles(pools: dict, weight_bytes: float, util: float, reserve_bytes_per_gpu: float,
                 kv_room_bytes_per_gpu: float, gpus_per_node: int = 8, power_of_two: bool = True) -> dict:
    """``pools``: two names -> GPU. Returns ``{"decode": name, "prefill": name, "decode_nodes": int,
    "prefill_nodes": int}`` (fewer nodes decodes; ties: higher HBM bandwidth, then the smaller name)."""
    raise NotImplementedError


def decode_step_ms(gpu: GPU, nodes: int, weight_bytes: float, kv_bytes_per_gpu: float,
                   bandwidth_efficiency: float, moe_layers: int, dispatch_us: float, combine_us: float,
                   gpus_per_node: int = 8) -> float:
    """HBM time of one decode step plus, when nodes > 1, moe_layers x (dispatch + combine) latency, in ms."""
    raise NotImplementedError


def pool_sizes(requests_per_s: float, prompt_tokens: int, output_tokens: int,
               prefill_tokens_per_s_per_instance: float, decode_tokens_per_s_per_instance: float,
               prefill_nodes_per_instance: int, decode_nodes_per_instance: int) -> dict:
    """Returns ``{"prefill_tokens_per_s", "decode_tokens_per_s": float, "prefill_instances",
    "decode_instances", "prefill_nodes", "decode_nodes": int}`` (instances = ceil(demand / rate))."""
    raise NotImplementedError


def pd_mismatches(prefill_cfg: dict, decode_cfg: dict) -> list[str]:
    """Sorted list of the config fields on which the two halves disagree (rules in the statement)."""
    raise NotImplementedError
