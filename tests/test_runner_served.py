"""Work a submission asks of the grader's hosted objects is the submission's time.

A hosted object's method runs in the grader's process, where no RLIMIT_CPU of the child sees it,
and the child waits cheaply for each answer. Before ``SubmissionProcess.served`` a submission that
called an expensive method in an endless loop made the grader work until the 200,000-call budget
ran out (bf16-running-sum's mutants that looped on ``model.error`` took 20-25 s each against a
2 s limit). Now that time counts against the CPU limit on its own and against the wall backstop."""

from __future__ import annotations

import threading
import time

import pytest

from runner_support import sandbox_modes
from inferprep.runner.process import PROXY_THREADS, RunFailed, SubmissionProcess, served_limit_message
from inferprep.verdict import Status

CALLS_FOREVER = """\
def hammer(obj):
    while True:
        obj.work()


def few(obj, n):
    return sum(obj.work() for _ in range(n))


def waits(obj, n):
    return sum(obj.wait() for _ in range(n))
"""

WORK_S = 0.05
"""What one call of the hosted ``work`` costs the grader (seconds of busy CPU)."""


class Expensive:
    def __init__(self):
        self.calls = 0

    def work(self) -> int:
        end = time.thread_time() + WORK_S
        while time.thread_time() < end:
            pass
        self.calls += 1
        return 1

    def wait(self) -> int:
        """Blocks without working, like a ring's barrier waiting for the other ranks."""
        time.sleep(WORK_S)
        self.calls += 1
        return 1


def _proc(mode: str, time_s: float) -> SubmissionProcess:
    proc = SubmissionProcess(CALLS_FOREVER, ["hammer", "few", "waits"], time_s=time_s, memory_mib=512, mode=mode)
    assert proc.start().get("op") == "ready"
    return proc


@pytest.mark.parametrize("mode", sandbox_modes())
def test_endless_calls_to_a_hosted_object_hit_the_time_limit(mode):
    proc = _proc(mode, time_s=1.0)
    obj = Expensive()
    try:
        with pytest.raises(RunFailed) as e:
            proc.call("hammer", proc.host(obj, ["work"]))
    finally:
        proc.close()
    assert e.value.status is Status.TIME_LIMIT
    assert "the grader's objects spent" in str(e.value)
    # stopped at the first call after the served time passed the limit: not after 200,000 calls
    assert 1.0 < proc.served <= 1.0 + 2 * WORK_S + 0.5, proc.served
    assert obj.calls <= int((1.0 + 0.5) / WORK_S) + 2, obj.calls


@pytest.mark.parametrize("mode", sandbox_modes())
def test_a_few_calls_are_counted_and_pass(mode):
    proc = _proc(mode, time_s=5.0)
    obj = Expensive()
    try:
        assert proc.call("few", proc.host(obj, ["work"]), 4) == 4
        waited_before = proc.waited
    finally:
        proc.close()
    assert obj.calls == 4
    assert 4 * WORK_S <= proc.served < 5.0
    assert waited_before >= 4 * WORK_S        # the wall backstop counts the time spent answering


def test_the_message_says_whose_time_it_was():
    m = served_limit_message(2.04, 2)
    assert "2.0 s" in m and "the 2 s limit" in m and "your calls" in m


@pytest.mark.parametrize("mode", sandbox_modes())
def test_a_call_that_blocks_is_waiting_not_work(mode):
    proc = _proc(mode, time_s=5.0)
    obj = Expensive()
    try:
        assert proc.call("waits", proc.host(obj, ["wait"], concurrent=True), 4) == 4
    finally:
        proc.close()
    assert proc.served < WORK_S, proc.served      # CPU time: four sleeps of 0.05 s cost almost none


LAST_CALL = """\
def once(obj):
    return obj.long()
"""


class OneLongCall:
    def long(self) -> int:
        end = time.thread_time() + 1.3
        while time.thread_time() < end:
            pass
        return 1


@pytest.mark.parametrize("mode", sandbox_modes())
def test_a_last_call_over_the_limit_is_a_time_limit(mode):
    """Red team: the limit was checked only when the next proxy call came, so one expensive last
    call (or a burst of concurrent ones) ended the submission's call over the limit with a pass."""
    proc = SubmissionProcess(LAST_CALL, ["once"], time_s=1.0, memory_mib=512, mode=mode)
    try:
        assert proc.start().get("op") == "ready"
        with pytest.raises(RunFailed) as e:
            proc.call("once", proc.host(OneLongCall(), ["long"]))
    finally:
        proc.close()
    assert e.value.status is Status.TIME_LIMIT and "the grader's objects spent 1.3 s" in str(e.value)


PIPELINED = """\
import threading


def crowd(obj, n):
    # n calls sent back to back through the proxy's own client, without waiting for the answers
    client = object.__getattribute__(obj, "_client")
    ref = object.__getattribute__(obj, "_ref")
    client._ensure_reader()
    slots = []
    for _ in range(n):
        cid = next(client.ids)
        slot = [threading.Event(), None]
        with client.lock:
            client.waiters[cid] = slot
        client.send({"op": "pcall", "id": cid, "proxy": ref.id, "method": "hold", "args": (), "kwargs": {}})
        slots.append(slot)
    for slot in slots:
        slot[0].wait()
    return sum(1 for slot in slots if slot[1] is not None and "value" in slot[1])
"""


class Gate:
    """Every call waits at a gate (like ranks at a ring's barrier) until the test opens it."""

    def __init__(self):
        self.open = threading.Event()

    def hold(self) -> int:
        self.open.wait(timeout=5.0)
        return 1


@pytest.mark.parametrize("mode", sandbox_modes())
def test_calls_in_flight_are_bounded(mode):
    """Red team: a child that sends calls without waiting for the answers made the parent take and
    queue every one of them (with its decoded arguments). Now it is read from only while fewer
    than PROXY_THREADS calls are in flight."""
    n = PROXY_THREADS + 40
    proc = SubmissionProcess(PIPELINED, ["crowd"], time_s=5.0, memory_mib=512, mode=mode)
    gate, taken = Gate(), []

    def look_then_open():
        taken.append(proc.dispatched)       # all 64 threads wait at the gate by now
        gate.open.set()

    timer = threading.Timer(1.0, look_then_open)
    try:
        assert proc.start().get("op") == "ready"
        timer.start()
        assert proc.call("crowd", proc.host(gate, ["hold"], concurrent=True), n) == n
    finally:
        timer.cancel()
        proc.close()
    assert taken and taken[0] <= PROXY_THREADS + 1, taken   # + the one read while waiting for a thread
    assert proc.dispatched == n
