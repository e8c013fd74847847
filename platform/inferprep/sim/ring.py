"""A simulated ring of p ranks in lock-step, hosted in the grader's process.

Each rank gets a ``RankComm`` (host it with ``g.host(comm, ["send_recv"], {"rank": r,
"world_size": p}, concurrent=True)``). One call of ``send_recv(t)`` is one ring step: the rank
sends a copy of ``t`` to rank ``(r + 1) % p`` and receives what rank ``(r - 1) % p`` sent in the
same step. Every rank must call it the same number of times; a rank that skips or adds a step
leaves the others waiting at a barrier, which times out after ``timeout_s`` and is reported as a
``Deadlock`` (which ranks were stuck at which step, and how many steps each rank made).

The network records every message (a copy, its size and dtype) per rank and per step, so the
grader can count messages and bytes and compare each message with what a ring algorithm must be
carrying at that step (``reduce_scatter_messages``, ``all_gather_messages``). Nothing is raised
for a wrong message: raising in one rank would desynchronize the others, so violations are
checked after the SPMD call returns.

``SoloRank`` runs one rank on its own: the grader plays the other p - 1 ranks, so ``send_recv``
returns what the left neighbour of a correct ring sends in that step, computed in the grader from
inputs the submission never sees. A rank can then only succeed by computing from its own input and
what it receives, which is what ranks in separate processes would have to do; threads of one
process could otherwise pool their inputs in a module-level dict and send the ring's messages
without ever needing them.

The expected messages follow NCCL's ring: in reduce-scatter step s, rank r sends the partial sum
of chunk (r - s - 1) mod p (``src/device/all_reduce.h`` indexes it as ``modRanks(ring->index +
nranks - 1 - s)``); in all-gather step s it forwards chunk (r - s) mod p. Chunks are
``torch.tensor_split(x, p)``: the first N mod p chunks have ceil(N / p) elements, the others
floor(N / p) (possibly 0, still a message).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

__all__ = ["Deadlock", "Message", "RankComm", "RingNetwork", "SoloRank", "all_gather_messages",
           "all_reduce_messages", "chunk_sizes", "reduce_scatter_messages"]


@dataclass(frozen=True)
class Message:
    step: int
    tensor: torch.Tensor          # a copy of what was sent

    @property
    def numel(self) -> int:
        return self.tensor.numel()

    @property
    def nbytes(self) -> int:
        return self.tensor.numel() * self.tensor.element_size()


@dataclass
class Deadlock:
    """A barrier timed out: ``stuck`` ranks waited at ``step``; ``steps[r]`` = steps rank r made."""

    step: int
    stuck: list[int]
    steps: list[int]

    def describe(self) -> str:
        absent = [r for r in range(len(self.steps)) if r not in self.stuck]
        where = ", ".join(f"rank {r} made {self.steps[r]}" for r in absent)
        return (f"deadlock at ring step {self.step}: rank(s) {self.stuck} waited for a partner that never "
                f"called send_recv ({where} step(s)); every rank must make the same number of steps")


class RingNetwork:
    """The ring's state (see the module's docstring). What it keeps is bounded, since every step
    keeps a copy of a message of up to ``max_message_numel`` elements in the grader's memory: a
    rank may make at most ``max_steps`` steps (default ``4 * world_size``; an all-reduce needs
    ``2 * (world_size - 1)``), and once a deadlock is recorded no step is taken or kept (the
    ring is dead; a submission that swallows the TimeoutError and calls again gets it again)."""

    def __init__(self, world_size: int, timeout_s: float = 2.0, max_message_numel: int = 1 << 22,
                 max_steps: int | None = None):
        if world_size < 1:
            raise ValueError("world_size must be >= 1")
        self.p = world_size
        self.max_steps = 4 * world_size if max_steps is None else max_steps
        self._overstepped: set[int] = set()
        self.timeout_s = timeout_s
        self.max_message_numel = max_message_numel
        self._barrier = threading.Barrier(world_size, timeout=timeout_s)
        self._lock = threading.Lock()
        self._slots: list[torch.Tensor | None] = [None] * world_size
        self._waiting: set[int] = set()
        self.messages: list[list[Message]] = [[] for _ in range(world_size)]
        self.deadlock: Deadlock | None = None
        self.type_errors: list[str] = []

    def comm(self, rank: int) -> "RankComm":
        return RankComm(self, rank)

    # -- counters -----------------------------------------------------------------------------
    def steps(self, rank: int) -> int:
        return len(self.messages[rank])

    def bytes_sent(self, rank: int) -> int:
        return sum(m.nbytes for m in self.messages[rank])

    def bytes_per_step(self, rank: int) -> list[int]:
        return [m.nbytes for m in self.messages[rank]]

    # -- one step -----------------------------------------------------------------------------
    def _wait(self, rank: int, step: int) -> None:
        with self._lock:
            self._waiting.add(rank)
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            with self._lock:
                if self.deadlock is None:
                    self.deadlock = Deadlock(step, sorted(self._waiting), [self.steps(r) for r in range(self.p)])
                self._waiting.discard(rank)
                msg = self.deadlock.describe()
            raise TimeoutError(msg) from None
        with self._lock:
            self._waiting.discard(rank)

    def send_recv(self, rank: int, t) -> torch.Tensor:
        if not isinstance(t, torch.Tensor):
            with self._lock:
                self.type_errors.append(f"rank {rank} sent a {type(t).__name__}, not a tensor")
            raise TypeError(f"send_recv takes a torch.Tensor, got {type(t).__name__}")
        if self.p == 1:
            raise RuntimeError("send_recv with world_size 1: a ring of one rank has no steps")
        if t.numel() > self.max_message_numel:             # protects the grader's memory
            with self._lock:
                self.type_errors.append(f"rank {rank} sent {t.numel()} elements in one message")
            raise ValueError(f"a message may hold at most {self.max_message_numel} elements")
        if self.deadlock is not None:                     # dead: nothing more is taken or kept
            raise TimeoutError(self.deadlock.describe())
        step = self.steps(rank)
        if step >= self.max_steps:
            with self._lock:
                if rank not in self._overstepped:
                    self._overstepped.add(rank)
                    self.type_errors.append(f"rank {rank} called send_recv more than {self.max_steps} times")
            raise ValueError(f"a ring of {self.p} ranks needs far fewer than {self.max_steps} steps per rank")
        copy = t.detach().clone()
        with self._lock:
            self.messages[rank].append(Message(step, copy))
            self._slots[rank] = copy
        self._wait(rank, step)                      # everyone has posted this step's message
        got = self._slots[(rank - 1) % self.p]
        self._wait(rank, step)                      # everyone has read before slots are reused
        return got.clone()

    # -- checks -------------------------------------------------------------------------------
    def check_messages(self, expected: list[list[torch.Tensor]],
                       atol: list[list[torch.Tensor]] | None = None) -> list[str]:
        """Compare every rank's messages with ``expected[r][s]``: count, dtype, size, then values
        (exact, or within the elementwise ``atol[r][s]`` for floating tensors). Returns the
        problems found, as sentences."""
        problems: list[str] = list(self.type_errors)
        for r in range(self.p):
            problems += compare_messages(r, self.messages[r], expected[r], None if atol is None else atol[r])
        return problems


def compare_messages(rank: int, got: list[Message], want: list[torch.Tensor],
                     atol: list[torch.Tensor] | None = None) -> list[str]:
    """One rank's messages against the expected ones (see ``RingNetwork.check_messages``)."""
    problems: list[str] = []
    if len(got) != len(want):
        problems.append(f"rank {rank} made {len(got)} step(s); the ring needs {len(want)}")
    for s, (m, w) in enumerate(zip(got, want)):
        t = m.tensor
        if t.dtype != w.dtype:
            problems.append(f"rank {rank} step {s}: sent dtype {t.dtype}, the data is {w.dtype}")
        elif t.numel() != w.numel() or t.dim() != 1:
            problems.append(f"rank {rank} step {s}: sent a message of shape {tuple(t.shape)}; "
                            f"one chunk here has {w.numel()} element(s)")
        else:
            diff = (t.to("cpu") != w) if atol is None or not w.is_floating_point() else \
                ((t.to("cpu", torch.float64) - w.to(torch.float64)).abs() > atol[s])
            if diff.any():
                problems.append(f"rank {rank} step {s}: {int(diff.sum())} of {w.numel()} value(s) are not "
                                "the partial result the ring carries at this step")
    return problems


class RankComm:
    """What one rank holds: ``send_recv(t) -> t`` (hosted with attrs rank and world_size)."""

    def __init__(self, net: RingNetwork, rank: int):
        self.net, self.rank, self.world_size = net, rank, net.p

    def send_recv(self, t):
        return self.net.send_recv(self.rank, t)


class SoloRank:
    """Rank ``rank`` of a ``world_size``-rank ring, run alone (host it like a ``RankComm``, with
    attrs rank and world_size; ``concurrent`` is not needed). The other ranks are played by the
    grader: step s of ``send_recv(t)`` records ``t`` and returns ``incoming[s]``, what rank
    (rank - 1) % p of a correct ring sends in step s. A step past ``len(incoming)`` is one the
    partners never answer: it is recorded in ``extra_steps`` and raises ``TimeoutError``, as a
    deadlock would. The messages are checked afterwards with ``check_messages``."""

    def __init__(self, world_size: int, rank: int, incoming: list[torch.Tensor],
                 max_message_numel: int = 1 << 22):
        if world_size < 2 or not 0 <= rank < world_size:
            raise ValueError("a solo rank needs world_size >= 2 and 0 <= rank < world_size")
        self.rank, self.world_size = rank, world_size
        self.incoming = [t.detach().clone() for t in incoming]
        self.max_message_numel = max_message_numel
        self.messages: list[Message] = []
        self.type_errors: list[str] = []
        self.extra_steps = 0

    def send_recv(self, t):
        if not isinstance(t, torch.Tensor):
            self.type_errors.append(f"rank {self.rank} sent a {type(t).__name__}, not a tensor")
            raise TypeError(f"send_recv takes a torch.Tensor, got {type(t).__name__}")
        if t.numel() > self.max_message_numel:
            self.type_errors.append(f"rank {self.rank} sent {t.numel()} elements in one message")
            raise ValueError(f"a message may hold at most {self.max_message_numel} elements")
        step = len(self.messages)
        # a step past the partners' last is only counted: its content is never compared, and a
        # submission that swallows the TimeoutError and calls again must not fill the grader's memory
        self.messages.append(Message(step, t.detach().clone() if step < len(self.incoming) else t.new_empty(0)))
        if step >= len(self.incoming):
            self.extra_steps += 1
            raise TimeoutError(f"rank {self.rank} called send_recv for step {step}, but its partners "
                               f"stopped after {len(self.incoming)} step(s): a deadlock")
        return self.incoming[step].clone()

    def check_messages(self, expected: list[torch.Tensor], atol: list[torch.Tensor] | None = None) -> list[str]:
        return self.type_errors + compare_messages(self.rank, self.messages, expected, atol)


# -- what a ring must carry -------------------------------------------------------------------------
def chunk_sizes(n: int, p: int) -> list[int]:
    """Sizes of ``torch.tensor_split(x, p)`` for len(x) = n."""
    return [n // p + (1 if i < n % p else 0) for i in range(p)]


def reduce_scatter_messages(xs: list[torch.Tensor], rtol: float = 1e-5
                            ) -> tuple[list[list[torch.Tensor]], list[list[torch.Tensor]]]:
    """Expected messages of ring reduce-scatter over inputs ``xs[r]`` (each (N,)), and per message
    an elementwise absolute tolerance for floating data: ``rtol`` times the sum of the absolute
    values of the contributions (so cancellation cannot make it 0).

    Step s, rank r sends chunk c = (r - s - 1) mod p holding x_{r-s} + ... + x_r on that chunk."""
    p = len(xs)
    chunks = [torch.tensor_split(x.to("cpu"), p) for x in xs]
    msgs: list[list[torch.Tensor]] = [[] for _ in range(p)]
    tols: list[list[torch.Tensor]] = [[] for _ in range(p)]
    for r in range(p):
        for s in range(p - 1):
            c = (r - s - 1) % p
            parts = [chunks[(r - i) % p][c] for i in range(s + 1)]
            total = parts[0].clone()
            for part in parts[1:]:
                total = total + part
            msgs[r].append(total)
            tols[r].append(rtol * sum(part.to(torch.float64).abs() for part in parts))
    return msgs, tols


def all_gather_messages(chunks: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """Expected messages of ring all-gather when rank r starts with ``chunks[r]``: in step s,
    rank r forwards chunk (r - s) mod p."""
    p = len(chunks)
    return [[chunks[(r - s) % p].to("cpu") for s in range(p - 1)] for r in range(p)]


def all_reduce_messages(xs: list[torch.Tensor], rtol: float = 1e-5
                        ) -> tuple[list[list[torch.Tensor]], list[list[torch.Tensor]] | None]:
    """Expected messages of ring all-reduce (reduce-scatter, then all-gather of the reduced
    chunks) over inputs ``xs[r]``, and the elementwise tolerances for floating data (None for
    integers). The reduced chunks are the direct sum (in float64 for floats), cast to the dtype."""
    p, dtype = len(xs), xs[0].dtype
    rs, rs_tol = reduce_scatter_messages(xs, rtol)
    xs64 = [x.to("cpu", torch.float64) if dtype.is_floating_point else x.to("cpu") for x in xs]
    total = sum(xs64[1:], xs64[0].clone())
    ag = all_gather_messages([c.to(dtype) for c in torch.tensor_split(total, p)])
    if not dtype.is_floating_point:
        return [rs[r] + ag[r] for r in range(p)], None
    tol = torch.tensor_split(rtol * sum(x.abs() for x in xs64), p)
    ag_tol = [[tol[(r - s) % p] for s in range(p - 1)] for r in range(p)]
    return [rs[r] + ag[r] for r in range(p)], [rs_tol[r] + ag_tol[r] for r in range(p)]
