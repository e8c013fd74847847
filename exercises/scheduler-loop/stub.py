"""Continuous-batching engine step. Fill in ``Scheduler``; keep ``run_engine`` as it is (the
grader calls it). See the statement for every rule."""

from __future__ import annotations

import torch


class Scheduler:
    """Admit, chunk, preempt and stream over a paged KV block pool (vLLM V1 style, FCFS).

    Args:
        num_blocks: KV blocks in the pool (>= 1).
        block_size: tokens per block (>= 1).
        max_num_batched_tokens: token budget of one step, prefill chunks and decodes together (>= 1).
        max_num_seqs: most requests running (admitted, not finished, not preempted) at once (>= 1).

    Raises:
        ValueError: any argument < 1.
    """

    def __init__(self, num_blocks: int, block_size: int, max_num_batched_tokens: int, max_num_seqs: int):
        raise NotImplementedError

    def add_request(self, request_id: str, prompt: list[int], max_new_tokens: int) -> None:
        """Queue a request at the tail of the waiting queue.

        Args:
            request_id: a str, unique over the scheduler's life.
            prompt: token ids (ints >= 0), at least one.
            max_new_tokens: tokens to generate (>= 1); there is no EOS, so exactly this many.

        Raises:
            ValueError: request_id already added; empty prompt; a negative token id;
                max_new_tokens < 1; KV for len(prompt) + max_new_tokens - 1 tokens does not fit
                in num_blocks blocks (ceil(that / block_size) > num_blocks).
        """
        raise NotImplementedError

    def has_unfinished(self) -> bool:
        """True while any added request is waiting or running."""
        raise NotImplementedError

    def step(self, model) -> list[tuple[str, int, bool]]:
        """One engine step: schedule, call ``model.forward`` once, stream the new tokens.

        model (a proxy of the grader's toy model):
            model.vocab_size: int.
            model.kv_pool.num_blocks, model.kv_pool.block_size: ints (equal to yours).
            model.kv_pool.allocate(n) -> list[int] | None: n block ids (lowest free first), or
                None and nothing allocated if fewer than n are free.
            model.kv_pool.free(block_ids: list[int]) -> None: return blocks (ValueError on a
                double free).
            model.kv_pool.num_free_blocks() -> int.
            model.forward(request_ids, input_ids, positions, query_start_loc, block_tables,
                          slot_mapping) -> (B,) int64: the greedy next token after each
                request's last scheduled position. B requests, T tokens in all:
                request_ids: list of B str, in scheduling order.
                input_ids, positions, slot_mapping: (T,) int64, the chunks concatenated;
                    slot = block_table[pos // block_size] * block_size + pos % block_size.
                query_start_loc: (B+1,) int64, request i owns tokens [q[i], q[i+1]).
                block_tables: (B, M) int64, row i = request i's block ids, padded with -1.

        Returns:
            [(request_id, token, finished), ...] in scheduling order: one event per request whose
            scheduled tokens reach the end of its tokens (a decode, or the last prefill chunk);
            finished is True on its max_new_tokens-th token. [] (and no model call) when nothing
            is unfinished.
        """
        raise NotImplementedError


def run_engine(config: dict, requests: list, model, max_steps: int) -> list:
    """The grader's driver: do not change it.

    config: the four Scheduler arguments by name. requests: (arrival_step, request_id, prompt,
    max_new_tokens) tuples; a request is added just before step number arrival_step (0-based).
    Returns one list of events per step; raises RuntimeError after max_steps steps.
    """
    sched = Scheduler(**config)
    pending = sorted(requests, key=lambda r: r[0])
    steps: list = []
    i = 0
    while i < len(pending) or sched.has_unfinished():
        if len(steps) >= max_steps:
            raise RuntimeError(f"not finished after {max_steps} steps")
        while i < len(pending) and pending[i][0] <= len(steps):
            _, request_id, prompt, max_new_tokens = pending[i]
            sched.add_request(request_id, prompt, max_new_tokens)
            i += 1
        steps.append(sched.step(model))
    return steps
