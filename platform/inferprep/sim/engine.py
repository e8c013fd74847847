"""A paged KV block pool and a toy greedy language model that reads and writes KV only through
the block tables and slot mappings its caller passes (the ``scheduler-loop`` exercise).

Both objects live in the trusted grader process; a submission reaches them through proxies:

- ``KVBlockPool``: ``allocate(n) -> list[int] | None``, ``free(block_ids) -> None``,
  ``num_free_blocks() -> int``; attributes ``num_blocks`` and ``block_size``.
- ``ToyModel``: ``forward(request_ids, input_ids, positions, query_start_loc, block_tables,
  slot_mapping) -> Tensor[B] int64``; attributes ``vocab_size`` and ``kv_pool`` (the pool's proxy).

Why the pool is hosted too (and block ids are not plain ints the scheduler invents): the parent
then knows at every moment which blocks are allocated, so "blocks in use", leaks and the pool
limit are the parent's own counters; the model refuses any block table entry that is not an
allocated block or that another request already holds (ownership is bound on first use and
released by ``free``), and any slot mapping that disagrees with the block table. With plain ints
the parent could not tell a preempted request from one merely left out of a step by the token
budget, so it could neither count blocks in use nor tell a leak from a live request.

Slot ``s`` is offset ``s % block_size`` of block ``s // block_size``; a request's block table
entry ``j`` holds its positions ``j * block_size .. (j + 1) * block_size - 1``.

The model is one attention layer with one head of size ``head_dim``. The key, value and query
of a token depend only on (token id, position); every entry is an integer held in float64, so
they are exact whichever batch or chunk computes them, and the batched, chunked, paged forward
returns bit-for-bit the tokens of ``greedy`` (unbatched, contiguous). Freed blocks are poisoned
(keys and values set to ``POISON``) and every slot remembers which (request, position) wrote it,
so a stale read both changes the output and is reported in ``stale_reads``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import torch

__all__ = ["KVBlockPool", "ToyModel", "ForwardRecord", "POISON"]

POISON = 1.0e6
"""Value written into the keys and values of a freed block."""


class KVBlockPool:
    """``num_blocks`` KV blocks of ``block_size`` slots, each slot a key and a value of
    ``head_dim`` float64 numbers. ``allocate`` hands out the lowest-numbered free blocks.

    Violations a submission could catch (double free, freeing an unknown block) raise
    ValueError and are also appended to ``violations`` for the grader.
    """

    def __init__(self, num_blocks: int, block_size: int, head_dim: int = 16):
        if num_blocks < 1 or block_size < 1 or head_dim < 1:
            raise ValueError("num_blocks, block_size and head_dim must be >= 1")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.head_dim = head_dim
        n_slots = num_blocks * block_size
        self.k_cache = torch.zeros(n_slots, head_dim, dtype=torch.float64)
        self.v_cache = torch.zeros(n_slots, head_dim, dtype=torch.float64)
        self.writer: list[tuple[str, int] | None] = [None] * n_slots  # (request id, position)
        self.owner: dict[int, str] = {}                               # block -> request id
        self._free = list(range(num_blocks))                           # a heap
        self.allocated: set[int] = set()
        self.peak_used = 0
        self.violations: list[str] = []
        self.calls_since_forward = 0
        self.max_calls_per_step = 1_000

    # -- methods a submission may call ----------------------------------------------------------
    def allocate(self, num_blocks: int) -> list[int] | None:
        """``num_blocks`` (int >= 0) free block ids, lowest first, or None (nothing allocated)
        when fewer are free. Raises TypeError/ValueError for a bad count."""
        self._count_call()
        if isinstance(num_blocks, bool) or not isinstance(num_blocks, int):
            raise TypeError(f"allocate takes an int number of blocks, not {type(num_blocks).__name__}")
        if num_blocks < 0:
            raise ValueError(f"cannot allocate {num_blocks} blocks")
        if num_blocks > len(self._free):
            return None
        ids = [heapq.heappop(self._free) for _ in range(num_blocks)]
        self.allocated.update(ids)
        self.peak_used = max(self.peak_used, self.num_used)
        return ids

    def free(self, block_ids: list[int]) -> None:
        """Return allocated blocks to the pool; their KV is poisoned. Raises ValueError for an id
        out of range, not allocated (double free) or repeated in the call; then nothing is freed."""
        self._count_call()
        if not isinstance(block_ids, (list, tuple)) or any(
                isinstance(b, bool) or not isinstance(b, int) for b in block_ids):
            raise TypeError("free takes a list of int block ids")
        bad = None
        if len(set(block_ids)) != len(block_ids):
            bad = f"free({list(block_ids)[:16]}) names a block twice"
        for b in block_ids:
            if bad is None and not 0 <= b < self.num_blocks:
                bad = f"free: block {b} is out of range [0, {self.num_blocks})"
            elif bad is None and b not in self.allocated:
                bad = f"free: block {b} is not allocated (a double free?)"
        if bad is not None:
            self.violations.append(bad)
            raise ValueError(bad)
        bs = self.block_size
        for b in block_ids:
            self.allocated.discard(b)
            self.owner.pop(b, None)
            self.k_cache[b * bs:(b + 1) * bs] = POISON
            self.v_cache[b * bs:(b + 1) * bs] = POISON
            for s in range(b * bs, (b + 1) * bs):
                self.writer[s] = None
            heapq.heappush(self._free, b)

    def num_free_blocks(self) -> int:
        """How many blocks ``allocate`` can hand out now."""
        self._count_call()
        return len(self._free)

    # -- the grader's view ----------------------------------------------------------------------
    @property
    def num_used(self) -> int:
        return self.num_blocks - len(self._free)

    def _count_call(self) -> None:
        self.calls_since_forward += 1
        if self.calls_since_forward > self.max_calls_per_step:
            msg = (f"more than {self.max_calls_per_step} pool calls without a forward call "
                   "(a scheduling loop that never ends?)")
            if not self.violations or self.violations[-1] != msg:
                self.violations.append(msg)
            raise RuntimeError(msg)


@dataclass
class ForwardRecord:
    """What one ``forward`` call ran: per scheduled request (in batch order) its id, first
    position and number of tokens; blocks allocated at the call; how many requests hold blocks
    (the running requests, scheduled now or not); the tokens returned."""

    request_ids: list[str]
    starts: list[int]
    num_tokens: list[int]
    blocks_in_use: int
    num_running: int
    next_tokens: list[int]
    stale_reads: int = 0

    @property
    def total_tokens(self) -> int:
        return sum(self.num_tokens)


def _position_code(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """A fixed integer code per position, (T,) int64 -> (T, dim) float64, entries in [-5, 5]."""
    d = torch.arange(dim, dtype=torch.int64)
    return (((positions[:, None] + 1) * (2 * d + 3) + d * d) % 11 - 5).to(torch.float64)


class ToyModel:
    """Greedy one-layer, one-head attention LM over a ``KVBlockPool`` (no EOS).

    Weights are drawn from ``seed``: integer embeddings in [-3, 3] and integer Q/K/V projections
    in [-2, 2] (so every key, value and query is an exact integer in float64), float64 output
    projection. Next token = argmax (lowest id on ties) of
    ``W_o (softmax(K q / scale) V + x)`` at the last position of a request's chunk, where K and V
    are the keys and values of positions 0..last read through the request's block table.

    ``max_forward_calls``: a forward call beyond this many raises RuntimeError (a livelock guard).
    """

    def __init__(self, pool: KVBlockPool, vocab_size: int = 64, seed: int = 0,
                 max_forward_calls: int = 100_000):
        self.kv_pool = pool
        self.vocab_size = vocab_size
        self.max_forward_calls = max_forward_calls
        d = pool.head_dim
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.randint(-3, 4, (vocab_size, d), generator=g).to(torch.float64)
        self.w_q = torch.randint(-2, 3, (d, d), generator=g).to(torch.float64)
        self.w_k = torch.randint(-2, 3, (d, d), generator=g).to(torch.float64)
        self.w_v = torch.randint(-2, 3, (d, d), generator=g).to(torch.float64)
        self.w_o = torch.randn(vocab_size, d, generator=g, dtype=torch.float64)
        self.scale = float(40 * d)
        self.records: list[ForwardRecord] = []
        self.violations: list[str] = []
        self.stale_reads: list[str] = []
        self.computed: dict[str, int] = {}  # request id -> positions with KV (this incarnation)

    # -- the math shared by the paged and the contiguous path -----------------------------------
    def _x(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return self.embed[tokens] + _position_code(positions, self.embed.shape[1])

    def _kv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Elementwise products and sums, not BLAS: exact on integers, and no thread pool (a GEMM
        # of a few rows can spend milliseconds waking threads on a busy machine).
        xe = x[:, None, :]
        return (xe * self.w_k).sum(-1), (xe * self.w_v).sum(-1)

    def _next_token(self, x_last: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> int:
        q = (x_last * self.w_q).sum(-1)
        p = torch.softmax((keys * q).sum(-1) / self.scale, dim=0)
        h = (p[:, None] * values).sum(0) + x_last
        return int(torch.argmax((self.w_o * h).sum(-1)))

    def greedy(self, prompt: list[int], max_new_tokens: int) -> list[int]:
        """Unbatched greedy decoding with a contiguous KV cache (the grader's ground truth)."""
        tokens = list(prompt)
        x = self._x(torch.tensor(tokens), torch.arange(len(tokens)))
        k, v = self._kv(x)
        out: list[int] = []
        for _ in range(max_new_tokens):
            nxt = self._next_token(x[-1], k, v)
            out.append(nxt)
            tokens.append(nxt)
            xn = self._x(torch.tensor([nxt]), torch.tensor([len(tokens) - 1]))
            kn, vn = self._kv(xn)
            x, k, v = torch.cat([x, xn]), torch.cat([k, kn]), torch.cat([v, vn])
        return out

    # -- the method a submission calls ----------------------------------------------------------
    def forward(self, request_ids, input_ids, positions, query_start_loc, block_tables, slot_mapping):
        """Run one engine step over B scheduled requests holding T tokens in all.

        request_ids: list of B distinct str (B >= 1), in batch order.
        input_ids: (T,) int64 token ids in [0, vocab_size), the requests' chunks concatenated.
        positions: (T,) int64; request i's chunk must continue where its KV stops (the number of
            its positions computed so far) or restart at 0 (recompute after a preemption), and
            its positions must be consecutive.
        query_start_loc: (B+1,) int64, 0 = q[0] < q[1] < ... < q[B] = T; request i owns tokens
            q[i]:q[i+1] (FlashAttention's cu_seqlens_q).
        block_tables: (B, M) int64; row i's first ceil((last position + 1) / block_size) entries
            are request i's blocks, allocated, held by no other request; later entries ignored.
        slot_mapping: (T,) int64; slot where each token's KV is written, which must equal
            block_tables[i, pos // block_size] * block_size + pos % block_size.
        Returns (B,) int64 on CPU: the greedy next token after each request's last position
        (for a chunk that does not finish a prefill, the caller discards it).
        Raises ValueError for any input that breaks these rules (recorded in ``violations``),
        RuntimeError past ``max_forward_calls``. KV is written before it is read.
        """
        pool = self.kv_pool
        pool.calls_since_forward = 0
        if len(self.records) >= self.max_forward_calls:
            return self._refuse(RuntimeError, f"more than {self.max_forward_calls} forward calls "
                                "(the engine never finishes: a livelock?)")
        ids = request_ids
        if not isinstance(ids, (list, tuple)) or not all(isinstance(r, str) for r in ids):
            return self._refuse(TypeError, "request_ids must be a list of str")
        if len(ids) == 0:
            return self._refuse(ValueError, "forward called with no requests (a step that schedules "
                                "nothing must not call the model)")
        if len(set(ids)) != len(ids):
            return self._refuse(ValueError, "a request appears twice in one batch")
        b = len(ids)
        tensors = {"input_ids": input_ids, "positions": positions, "query_start_loc": query_start_loc,
                   "block_tables": block_tables, "slot_mapping": slot_mapping}
        for name, t in tensors.items():
            if not isinstance(t, torch.Tensor) or t.dtype != torch.int64:
                return self._refuse(TypeError, f"{name} must be an int64 torch.Tensor")
        input_ids, positions, qsl = input_ids.cpu(), positions.cpu(), query_start_loc.cpu()
        tables, slots = block_tables.cpu(), slot_mapping.cpu()
        t_total = input_ids.shape[0] if input_ids.dim() == 1 else -1
        if (input_ids.dim() != 1 or positions.shape != (t_total,) or slots.shape != (t_total,)
                or qsl.shape != (b + 1,) or tables.dim() != 2 or tables.shape[0] != b):
            return self._refuse(ValueError, "shapes disagree: want input_ids, positions, slot_mapping (T,), "
                                f"query_start_loc (B+1,), block_tables (B, M) with B = {b}")
        q = qsl.tolist()
        if q[0] != 0 or q[-1] != t_total or any(q[i] >= q[i + 1] for i in range(b)):
            return self._refuse(ValueError, "query_start_loc must rise strictly from 0 to T")
        if bool(((input_ids < 0) | (input_ids >= self.vocab_size)).any()):
            return self._refuse(ValueError, f"a token id outside [0, {self.vocab_size})")
        bs = pool.block_size
        pos_l, slot_l, tab_l = positions.tolist(), slots.tolist(), tables.tolist()
        claimed: dict[int, str] = {}  # blocks named in this batch, so two rows cannot share one
        for i, rid in enumerate(ids):
            pos = pos_l[q[i]:q[i + 1]]
            start, last = pos[0], pos[-1]
            done = self.computed.get(rid, 0)
            if start not in (0, done) or pos != list(range(start, start + len(pos))):
                return self._refuse(ValueError, f"request {rid}: chunk positions {start}..{last} do not "
                                    f"continue its KV ({done} positions computed) nor restart at 0")
            need = last // bs + 1
            row = tab_l[i][:need]
            if len(row) < need:
                return self._refuse(ValueError, f"request {rid}: block table has {len(tab_l[i])} entries, "
                                    f"position {last} needs {need}")
            if len(set(row)) != len(row):
                return self._refuse(ValueError, f"request {rid}: a block appears twice in its block table")
            for blk in row:
                if not 0 <= blk < pool.num_blocks or blk not in pool.allocated:
                    return self._refuse(ValueError, f"request {rid}: block {blk} in its block table is not "
                                        "an allocated block of the pool")
                holder = pool.owner.get(blk)
                if holder is None:
                    holder = claimed.setdefault(blk, rid)
                if holder != rid:
                    return self._refuse(ValueError, f"request {rid}: block {blk} in its block table is held "
                                        f"by request {holder}")
            for t in range(q[i], q[i + 1]):
                p = pos_l[t]
                want = row[p // bs] * bs + p % bs
                if slot_l[t] != want:
                    return self._refuse(ValueError, f"request {rid}: slot_mapping says slot {slot_l[t]} for "
                                        f"position {p}, its block table says slot {want}")
        for i, rid in enumerate(ids):  # all valid: bind owners, write KV
            last = pos_l[q[i + 1] - 1]
            for blk in tab_l[i][:last // bs + 1]:
                pool.owner[blk] = rid
        x = self._x(input_ids, positions)
        k, v = self._kv(x)
        pool.k_cache[slots] = k
        pool.v_cache[slots] = v
        for i, rid in enumerate(ids):
            for t in range(q[i], q[i + 1]):
                pool.writer[slot_l[t]] = (rid, pos_l[t])
        out: list[int] = []
        stale = 0
        for i, rid in enumerate(ids):
            last = pos_l[q[i + 1] - 1]
            ctx = [tab_l[i][p // bs] * bs + p % bs for p in range(last + 1)]
            for p, s in enumerate(ctx):
                if pool.writer[s] != (rid, p):
                    stale += 1
                    w = pool.writer[s]
                    what = "a freed or never-written slot" if w is None else f"the KV of request {w[0]} position {w[1]}"
                    if len(self.stale_reads) < 50:
                        self.stale_reads.append(f"forward call {len(self.records)}: request {rid} read position "
                                                f"{p} from slot {s}, which holds {what}")
            idx = torch.tensor(ctx, dtype=torch.int64)
            out.append(self._next_token(x[q[i + 1] - 1], pool.k_cache[idx], pool.v_cache[idx]))
            self.computed[rid] = last + 1
        self.records.append(ForwardRecord(list(ids), [pos_l[q[i]] for i in range(b)],
                                          [q[i + 1] - q[i] for i in range(b)], pool.num_used,
                                          len(set(pool.owner.values())), out, stale))
        return torch.tensor(out, dtype=torch.int64)

    def _refuse(self, exc: type[Exception], message: str):
        self.violations.append(message)
        raise exc(message)

