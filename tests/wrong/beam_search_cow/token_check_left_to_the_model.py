"""WRONG (input checks): never checks the prompt's token range itself: it allocates the prompt's blocks,
lets model.forward reject a token outside [0, vocab_size) with the model's own ValueError, and frees
the blocks before re-raising. The statement asks for the ValueError before any pool or model call;
this one comes after allocate, forward and free. It passed while the grader only counted blocks
left allocated."""

from __future__ import annotations

from dataclasses import dataclass

import torch


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class BlockManager:
    """Reference counts over the pool's blocks; block tables are lists of block ids."""

    def __init__(self, pool):
        self.pool = pool
        self.block_size = pool.block_size
        self.ref_count: dict[int, int] = {}

    def allocate(self, n: int) -> list[int]:
        ids = list(self.pool.allocate(n)) if n else []
        for b in ids:
            self.ref_count[b] = 1
        return ids

    def fork(self, table: list[int]) -> list[int]:
        """A child shares all of its parent's blocks."""
        for b in table:
            self.ref_count[b] += 1
        return list(table)

    def release(self, tables: list[list[int]]) -> None:
        """Drop one reference per table entry; blocks nobody holds go back to the pool."""
        dead = []
        for table in tables:
            for b in table:
                self.ref_count[b] -= 1
                if self.ref_count[b] == 0:
                    del self.ref_count[b]
                    dead.append(b)
        if dead:
            self.pool.free(dead)

    def prepare_append(self, tables: list[list[int]], pos: int) -> list[int]:
        """Give every table a private, writable slot for position ``pos``; returns the slots.

        A new block when ``pos`` starts one; otherwise copy-on-write of a last block that
        someone else still holds. Tables are updated in place; one allocate and one copy call."""
        bs = self.block_size
        fresh, cow = [], []                   # table indices needing a new / a copied block
        for i, table in enumerate(tables):
            if pos % bs == 0:
                fresh.append(i)
            elif self.ref_count[table[-1]] > 1:
                self.ref_count[table[-1]] -= 1   # the last sharer will see 1 and write in place
                cow.append(i)
        new = self.allocate(len(fresh) + len(cow))
        for i, b in zip(fresh, new):
            tables[i].append(b)
        srcs, dsts = [], []
        for i, b in zip(cow, new[len(fresh):]):
            srcs.append(tables[i][-1])
            dsts.append(b)
            tables[i][-1] = b
        if srcs:
            self.pool.copy(srcs, dsts)
        return [t[pos // bs] * bs + pos % bs for t in tables]


@dataclass
class Beam:
    tokens: list[int]        # generated tokens only
    score: float             # sum of their log-probabilities, float64
    table: list[int]         # block table: KV of prompt + tokens[:-1]


def paged_beam_search(model, pool, prompt, beam_width, max_new_tokens):
    """Beam search; returns ``[(tokens, score), ...]`` best first (see the statement)."""
    prompt = [int(t) for t in prompt]
    if beam_width < 1 or max_new_tokens < 1 or not prompt:
        raise ValueError("need beam_width >= 1, max_new_tokens >= 1 and a non-empty prompt")
    bm = BlockManager(pool)
    bs = pool.block_size
    L = len(prompt)
    table = bm.allocate(cdiv(L, bs))
    slots = [table[p // bs] * bs + p % bs for p in range(L)]
    try:                                  # the model rejects a token outside the vocabulary itself
        logprobs = model.forward([prompt], [slots], [table], [L])      # (1, V)
    except ValueError:
        bm.release([table])               # nothing leaks, so the error looks clean
        raise
    beams = [Beam([], 0.0, table)]
    for step in range(max_new_tokens):
        V = logprobs.shape[1]
        scores = torch.tensor([b.score for b in beams], dtype=torch.float64)[:, None] + logprobs
        # Stable sort of the row-major flattening: ties go to the better parent, then the lower id.
        order = torch.sort(scores.reshape(-1), descending=True, stable=True).indices[:beam_width]
        children = []
        for idx in order.tolist():
            parent, token = divmod(idx, V)
            p = beams[parent]
            children.append(Beam(p.tokens + [token], float(scores[parent, token]), bm.fork(p.table)))
        bm.release([b.table for b in beams])                             # fork first, then free
        beams = children
        if step == max_new_tokens - 1:
            break                                                        # last tokens need no KV
        pos = L + step                                                   # position of the new token
        slots = bm.prepare_append([b.table for b in beams], pos)
        logprobs = model.forward([[b.tokens[-1]] for b in beams], [[s] for s in slots],
                                 [b.table for b in beams], [pos + 1] * len(beams))
    bm.release([b.table for b in beams])
    return [(b.tokens, b.score) for b in beams]
