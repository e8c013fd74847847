"""Time-limit messages state the CPU seconds used against the limit, and when the wall-clock
backstop fires they tell a submission that was running on a busy machine from one that was
waiting or sleeping (by the CPU time its process tree used in that wall time)."""

import pytest

from inferprep.runner import forkserver, sandbox
from inferprep.runner.process import (BUSY_CPU_SHARE, RunFailed, SubmissionProcess, cpu_limit_message,
                                      wall_backstop_message)
from inferprep.verdict import Status


def test_cpu_limit_message_states_used_and_limit():
    assert cpu_limit_message(2.34, 2) == "CPU time limit exceeded: 2.3 s used, the limit is 2 s"
    assert cpu_limit_message(None, 2.5) == "CPU time limit exceeded: the limit is 2.5 s"


def test_wall_backstop_tells_busy_from_sleeping():
    busy = wall_backstop_message(used_s=9.0, waited_s=48.0, wall_s=48, limit_s=20)
    assert "was running" in busy and "machine was busy" in busy and "9.0 s of CPU time used of the 20 s limit" in busy
    asleep = wall_backstop_message(used_s=0.01, waited_s=48.0, wall_s=48, limit_s=20)
    assert "waiting or sleeping" in asleep and "busy" not in asleep
    edge = 48.0 * BUSY_CPU_SHARE
    assert "was running" in wall_backstop_message(edge, 48.0, 48, 20)
    assert "unknown" in wall_backstop_message(None, 48.0, 48, 20)


SPIN = "def add(x, y):\n    while True:\n        pass\n"
SLEEP = "import time\n\ndef add(x, y):\n    time.sleep(60)\n"


@pytest.mark.parametrize("code,said", [(SPIN, "your code was running"), (SLEEP, "your code was waiting or sleeping")])
def test_wall_backstop_firing_before_the_cpu_limit(fixture_content, code, said):
    """A CPU limit far above a short wall backstop: as on a machine too busy for the spinning code
    to reach its CPU limit before the backstop. The spinning code is said to be running."""
    mode = sandbox.sandbox_mode(None)
    proc = SubmissionProcess(code, ["add"], time_s=60, memory_mib=512, mode=mode, launcher=forkserver.launch)
    try:
        assert proc.start().get("op") == "ready"
        if proc.child.uid_used is None and proc.mode == "bwrap":
            pytest.skip("no uid of its own to measure the child's CPU time (not root)")
        proc.wall_s = proc.waited + 1.5
        with pytest.raises(RunFailed) as e:
            proc.call("add", 1, 2)
    finally:
        proc.close()
    assert e.value.status == Status.TIME_LIMIT
    assert said in str(e.value) and "of the 60 s limit" in str(e.value), str(e.value)
