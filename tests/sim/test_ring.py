"""Unit tests of the lock-step ring simulator (``inferprep.sim.ring``), run in-process with one
thread per rank (no sandbox)."""

import threading
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.sim.ring import (RingNetwork, SoloRank, all_gather_messages, all_reduce_messages, chunk_sizes,
                                reduce_scatter_messages)

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "ring_reduce_scatter.py", "_test_ring_reference")


def spmd(fn, p, per_rank, timeout_s=2.0):
    """Run fn(*per_rank[r][:1], comm_r, *per_rank[r][1:]) in p threads; returns (net, results, errors)."""
    net = RingNetwork(p, timeout_s=timeout_s)
    results, errors = [None] * p, [None] * p

    def run(r):
        try:
            a = per_rank[r]
            results[r] = fn(a[0], net.comm(r), *a[1:])
        except Exception as e:  # noqa: BLE001
            errors[r] = e

    ts = [threading.Thread(target=run, args=(r,)) for r in range(p)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    return net, results, errors


@pytest.mark.parametrize("n,p", [(n, p) for p in (1, 2, 3, 4, 5) for n in (0, 1, 3, 10, 13)])
def test_chunk_sizes_match_tensor_split(n, p):
    assert chunk_sizes(n, p) == [len(c) for c in torch.tensor_split(torch.empty(n), p)]


@pytest.mark.parametrize("p,n", [(1, 4), (2, 5), (3, 10), (4, 10), (4, 2), (5, 0), (6, 37)])
def test_reference_reduce_scatter_counts_and_messages(p, n):
    xs = [torch.randint(-50, 50, (n,), generator=torch.Generator().manual_seed(r)) for r in range(p)]
    net, out, errors = spmd(ref.ring_reduce_scatter, p, [(x,) for x in xs])
    assert errors == [None] * p
    total = sum(xs[1:], xs[0].clone())
    for r in range(p):
        assert torch.equal(out[r], torch.tensor_split(total, p)[r])
        assert net.steps(r) == p - 1
        assert net.bytes_sent(r) == 8 * (n - chunk_sizes(n, p)[r])       # all but chunk r
        assert all(m.numel == chunk_sizes(n, p)[(r - s - 1) % p] for s, m in enumerate(net.messages[r]))
    assert net.check_messages(*reduce_scatter_messages(xs)) == []


@pytest.mark.parametrize("p,n", [(2, 3), (3, 10), (4, 2), (5, 13)])
def test_reference_all_gather_and_all_reduce(p, n):
    x = torch.arange(n)
    chunks = list(torch.tensor_split(x, p))
    net, out, errors = spmd(ref.ring_all_gather, p, [(c, n) for c in chunks])
    assert errors == [None] * p and all(torch.equal(o, x) for o in out)
    assert net.check_messages(all_gather_messages(chunks), None) == []
    assert [net.bytes_sent(r) for r in range(p)] == [8 * (n - chunk_sizes(n, p)[(r + 1) % p]) for r in range(p)]

    xs = [torch.full((n,), r + 1.0) for r in range(p)]
    net, out, errors = spmd(ref.ring_all_reduce, p, [(x,) for x in xs])
    assert errors == [None] * p
    assert all(torch.equal(o, torch.full((n,), p * (p + 1) / 2)) for o in out)
    assert all(net.steps(r) == 2 * (p - 1) for r in range(p))


def test_a_rank_that_skips_a_step_is_a_deadlock():
    def skipper(x, comm):
        steps = comm.world_size - 1 - (comm.rank == 0)
        for _ in range(steps):
            x = comm.send_recv(x)
        return x

    net, out, errors = spmd(skipper, 3, [(torch.zeros(2),)] * 3, timeout_s=0.3)
    assert errors[0] is None
    assert isinstance(errors[1], TimeoutError) and isinstance(errors[2], TimeoutError)
    assert net.deadlock is not None
    assert net.deadlock.step == 1 and net.deadlock.stuck == [1, 2] and net.deadlock.steps[0] == 1
    assert "rank 0 made 1" in net.deadlock.describe()


def test_a_rank_that_adds_a_step_is_a_deadlock():
    def extra(x, comm):
        for _ in range(comm.world_size - 1 + (comm.rank == 2)):
            x = comm.send_recv(x)
        return x

    net, out, errors = spmd(extra, 3, [(torch.zeros(1),)] * 3, timeout_s=0.3)
    assert isinstance(errors[2], TimeoutError) and errors[0] is None and errors[1] is None
    assert net.deadlock.stuck == [2] and net.deadlock.steps == [2, 2, 3]


def test_check_messages_names_size_dtype_value_and_count_problems():
    xs = [torch.arange(5) + 10 * r for r in range(3)]
    expected, tols = reduce_scatter_messages(xs)
    net = RingNetwork(3)
    from inferprep.sim.ring import Message
    net.messages[0] = [Message(0, expected[0][0][:0]), Message(1, expected[0][1].double())]
    net.messages[1] = [Message(0, expected[1][0] + 1), Message(1, expected[1][1])]
    net.messages[2] = [Message(0, expected[2][0])]
    problems = net.check_messages(expected, tols)
    text = "\n".join(problems)
    assert "rank 0 step 0" in text and "one chunk here has" in text
    assert "rank 0 step 1" in text and "dtype" in text
    assert "rank 1 step 0" in text and "partial result" in text
    assert "rank 2 made 1 step(s); the ring needs 2" in text


def test_float_messages_get_a_tolerance_from_the_magnitudes():
    xs = [torch.tensor([1e8, -1e8, 1.0], dtype=torch.float32), torch.tensor([-1e8, 1e8, 1.0], dtype=torch.float32)]
    expected, tols = reduce_scatter_messages(xs)
    assert tols[0][0].shape == expected[0][0].shape
    assert float(tols[1][0][0]) == pytest.approx(1e3)                  # 1e-5 * |1e8| (one contribution at step 0)


def test_send_recv_refuses_non_tensors_and_a_ring_of_one():
    net = RingNetwork(2)
    with pytest.raises(TypeError):
        net.comm(0).send_recv([1, 2])
    with pytest.raises(RuntimeError):
        RingNetwork(1).comm(0).send_recv(torch.zeros(1))


def test_oversized_messages_are_refused():
    net = RingNetwork(2, max_message_numel=4)
    with pytest.raises(ValueError):
        net.comm(0).send_recv(torch.zeros(5))
    assert net.type_errors and net.steps(0) == 0


def test_solo_rank_plays_the_partners_and_records_the_messages():
    xs = [torch.arange(10) * (r + 1) for r in range(4)]
    msgs, _ = reduce_scatter_messages(xs)
    total = sum(xs[1:], xs[0].clone())
    for r in range(4):
        solo = SoloRank(4, r, msgs[(r - 1) % 4])
        assert torch.equal(ref.ring_reduce_scatter(xs[r], solo), torch.tensor_split(total, 4)[r])
        assert solo.check_messages(msgs[r]) == [] and solo.extra_steps == 0


def test_solo_rank_all_reduce_messages():
    xs = [torch.randn(13, generator=torch.Generator().manual_seed(r), dtype=torch.float64).float() for r in range(5)]
    msgs, tols = all_reduce_messages(xs)
    for r in range(5):
        solo = SoloRank(5, r, msgs[(r - 1) % 5])
        out = ref.ring_all_reduce(xs[r], solo)
        assert out.shape == (13,) and solo.check_messages(msgs[r], tols[r]) == []


def test_solo_rank_refuses_an_extra_step_and_names_wrong_messages():
    solo = SoloRank(3, 0, [torch.tensor([1]), torch.tensor([2])])
    solo.send_recv(torch.tensor([5]))
    solo.send_recv(torch.tensor([6.0]))
    with pytest.raises(TimeoutError):
        solo.send_recv(torch.tensor([7]))
    assert solo.extra_steps == 1
    problems = solo.check_messages([torch.tensor([5]), torch.tensor([6])])
    assert any("made 3 step(s); the ring needs 2" in p for p in problems)
    assert any("step 1: sent dtype torch.float32" in p for p in problems)
    with pytest.raises(TypeError):
        solo.send_recv([1, 2])
    with pytest.raises(ValueError):
        SoloRank(1, 0, [])


def test_a_dead_ring_keeps_nothing_more():
    """Red team: after a deadlock every send_recv used to clone its message before the broken
    barrier raised, so a submission that swallowed the TimeoutError and called again made the
    grader hold 16 MB per call (640 MiB after 40 calls)."""
    def hoarder(x, comm):
        if comm.rank == 0:
            return x                              # never steps: the others deadlock
        for _ in range(20):
            try:
                comm.send_recv(x)
            except TimeoutError:
                pass
        return x

    net, out, errors = spmd(hoarder, 2, [(torch.zeros(1000),)] * 2, timeout_s=0.2)
    assert net.deadlock is not None and net.deadlock.stuck == [1]
    assert net.steps(1) == 1                      # the step it deadlocked in; the 19 after it kept nothing


def test_a_rank_may_not_step_without_end():
    """Ranks that step in lock-step forever would make the grader keep every message."""
    net = RingNetwork(2, max_steps=3)
    errors = [None, None]

    def run(r):
        try:
            x = torch.zeros(4)
            for _ in range(10):
                x = net.comm(r).send_recv(x)
        except Exception as e:  # noqa: BLE001
            errors[r] = e

    ts = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(isinstance(e, ValueError) and "far fewer than 3 steps" in str(e) for e in errors), errors
    assert net.steps(0) == net.steps(1) == 3
    assert sorted(net.type_errors) == [f"rank {r} called send_recv more than 3 times" for r in range(2)]
    assert RingNetwork(5).max_steps == 20 >= 2 * (5 - 1)       # an all-reduce's 2(p - 1) steps fit


def test_a_solo_rank_keeps_no_copy_past_its_partners():
    solo = SoloRank(2, 0, [torch.tensor([1.0])])
    solo.send_recv(torch.zeros(1))
    for _ in range(5):
        with pytest.raises(TimeoutError):
            solo.send_recv(torch.zeros(1 << 16))
    assert solo.extra_steps == 5 and len(solo.messages) == 6
    assert all(m.numel == 0 for m in solo.messages[1:])
