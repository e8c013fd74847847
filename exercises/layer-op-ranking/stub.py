"""layer-op-ranking: per-op times of one decoder layer at decode, their ranking, and remedies.

Inputs are ``inferprep.specs`` values: a dense GQA ``ModelConfig``, a ``GPU``
(``gpu.dense_flops(dtype)``: dense peak FLOP/s; ``hbm_bytes_per_s``: peak bandwidth, bytes/s)
and a ``DType`` (``bytes_per_element``). The op names are "qkv_proj", "o_proj", "gate_up_proj",
"down_proj", "attention", "elementwise"; the cost model is in the statement.
"""

from __future__ import annotations

from inferprep.specs import DType, GPU, ModelConfig


def layer_op_times(model: ModelConfig, gpu: GPU, dtype: DType, batch: int, context_len: int,
                   launch_us: float) -> dict[str, float]:
    """Microseconds each op of one layer takes in a decode step of ``batch`` sequences, each
    attending to ``context_len`` cached tokens.

    Raises:
        ValueError: ``batch``/``context_len`` not an int >= 1; ``launch_us`` negative or not
            finite; an MoE model or an MLA model (with or without experts); a model size < 1 or
            ``n_heads`` not a multiple of ``n_kv_heads``; ``dtype`` without a dense peak on ``gpu``.
    """
    raise NotImplementedError


def op_ranking(model: ModelConfig, gpu: GPU, dtype: DType, batch: int, context_len: int,
               launch_us: float) -> list[str]:
    """The six op names from slowest to fastest (ties: the order listed in the statement).

    Raises:
        ValueError: as ``layer_op_times``.
    """
    raise NotImplementedError


def ranking_flip_batch(model: ModelConfig, gpu: GPU, dtype: DType, context_len: int,
                       launch_us: float) -> int | None:
    """Smallest batch at which attention is at least as slow as every other op, or None if no
    batch makes it so.

    Raises:
        ValueError: as ``layer_op_times``.
    """
    raise NotImplementedError


def remedies(model: ModelConfig, gpu: GPU, dtype: DType, batch: int, context_len: int) -> dict[str, str]:
    """For each op, what closes its gap to ideal: "batch", "architecture", "fusion" or "none".

    Raises:
        ValueError: as ``layer_op_times`` (no ``launch_us`` here).
    """
    raise NotImplementedError
