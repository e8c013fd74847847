"""draft-length-per-batch: a step-time model for speculative decoding and the best draft length
per batch size, in the [start_bs, end_bs, K] table format of vLLM's dynamic speculative decoding.

``target`` and ``drafter`` are ``inferprep.sim.step_model.StepModel`` instances (a frozen
dataclass; ``gemm_s``, ``attention_s``, ``step_s`` compute the step-time formula the statement
restates). Times in seconds.
"""

from __future__ import annotations

from inferprep.sim.step_model import StepModel


def spec_step_time(target: StepModel, drafter: StepModel, batch: int, context_len: int,
                   g: int) -> float:
    """Seconds of one speculative step for ``batch`` requests with ``context_len`` cached tokens
    each: ``g`` drafter forwards of ``batch`` rows (1, c, 1), then one target forward of
    ``batch`` rows (g+1, c, g+1). ``g == 0``: a plain decode step, no drafter.

    Raises:
        ValueError: ``batch`` < 1, ``context_len`` < 0, ``g`` < 0 (ints only), a model that is
            not a StepModel.
    """
    raise NotImplementedError


def spec_speedup(target: StepModel, drafter: StepModel, batch: int, context_len: int, g: int,
                 alpha: float) -> float:
    """Throughput (tokens/s) at draft length ``g`` over throughput at g = 0, with i.i.d.
    acceptance rate ``alpha`` in [0, 1].

    Raises:
        ValueError: as ``spec_step_time``; ``alpha`` outside [0, 1] or NaN.
    """
    raise NotImplementedError


def best_draft_length(target: StepModel, drafter: StepModel, batch: int, context_len: int,
                      alpha: float, g_max: int) -> int:
    """The g in 0..g_max with the highest throughput; an exact tie goes to the smaller g.

    Raises:
        ValueError: as ``spec_speedup``; ``g_max`` < 0.
    """
    raise NotImplementedError


def draft_table(target: StepModel, drafter: StepModel, context_len: int, alpha: float,
                g_max: int, max_num_seqs: int, kv_capacity_tokens: int) -> list[list[int]]:
    """``[[start_bs, end_bs, K], ...]``: the best draft length for every batch 1..b_max, runs of
    equal K merged, ends inclusive, where
    ``b_max = min(max_num_seqs, kv_capacity_tokens // (context_len + g_max + 1))``.

    Raises:
        ValueError: as ``best_draft_length``; ``max_num_seqs`` < 1; ``kv_capacity_tokens`` < 0;
            b_max < 1 (not one request fits).
    """
    raise NotImplementedError
