"""Reference: beam search over a paged KV cache, with block sharing and copy-on-write.

The pool only allocates, frees and copies; this file keeps the reference counts. A fork copies
a block table and bumps the count of every block in it (no KV moves). Before a beam writes its
next token into its last block, that block must be its own: if another beam still holds it,
the beam copies it first (copy-on-write). Each step forks the chosen children from their
parents *before* it releases the parents, and releases them *before* it allocates, so a pruned
beam's blocks are back in the pool; children are prepared in ranking order, so the last of a
parent's children in that order finds a count of 1 and writes in place (the others copy) (vLLM V0's ``BlockSpaceManagerV1.fork`` / ``append_slot`` order).
"""

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
    if any(not 0 <= t < model.vocab_size for t in prompt):
        raise ValueError(f"prompt tokens must lie in [0, {model.vocab_size})")
    bm = BlockManager(pool)
    bs = pool.block_size
    L = len(prompt)
    table = bm.allocate(cdiv(L, bs))
    slots = [table[p // bs] * bs + p % bs for p in range(L)]
    logprobs = model.forward([prompt], [slots], [table], [L])          # (1, V)
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


# -- the memory example (editorial) -----------------------------------------------------------

def kv_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int, bytes_per_element: float) -> float:
    """K and V of every layer for one token, bytes."""
    return 2 * n_layers * n_kv_heads * head_dim * bytes_per_element


def blocks_after_first_decode(prompt_len: int, beam_width: int, block_size: int, shared: bool) -> int:
    """Blocks held once every beam has written its first generated token.

    Shared: the prompt's full blocks once, plus one private last block per beam (a copy of the
    partial prompt block, or a fresh block when the prompt fills its blocks exactly). Not
    shared: every beam owns all the blocks of its prompt_len + 1 tokens."""
    if shared:
        return prompt_len // block_size + beam_width
    return beam_width * cdiv(prompt_len + 1, block_size)


def blocks_held(seq_len: int, beam_width: int, block_size: int, common_prefix: int) -> int:
    """Blocks ``beam_width`` beams hold when each has KV for ``seq_len`` positions and their
    histories (prompt included) agree on the first ``common_prefix`` positions: the full blocks of
    the common part once, then each beam's own blocks from there on (a partial block where they
    part is copied per beam). ``common_prefix = 0``: nothing shared, every beam owns its cache."""
    shared = min(common_prefix, seq_len) // block_size
    return shared + beam_width * (cdiv(seq_len, block_size) - shared)
