"""Pause every process of a sandboxed child (its uid's) and resume them: the perf stage pauses the
submission's processes while the reference is timed, so that nothing the submission left running
(a spinning thread, a forked process hammering memory bandwidth) can slow the reference down and
make the submission's ratio look better than its work.

``SIGSTOP`` cannot be caught, blocked or ignored; ``kill(-1, sig)`` issued *as the uid* reaches
every process of that uid in one sweep of the kernel's task list (as ``sandbox.kill_uid`` does
for SIGKILL), so a fork loop cannot outrun it. ``freeze_uid`` then reads ``/proc`` until every
live thread of every such process reads stopped (``T``): the signal is asynchronous, and the
reference's clock must not start while any of them still runs.

What it does not pause: work already queued on a GPU (a stopped process's kernels run on), and
anything not running as the uid (there is nothing else a submission can start).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import sandbox

__all__ = ["signal_uid", "running_tasks", "freeze_uid", "thaw_uid"]

FREEZE_WAIT_S = 2.0
"""How long ``freeze_uid`` waits for every thread to read stopped, re-sending SIGSTOP meanwhile."""


def signal_uid(uid: int, sig: int) -> None:
    """Send ``sig`` to every process of ``uid``: ``kill -SIG -1`` as that uid when this process is
    root (atomic over the task list), else to each process ``/proc`` lists."""
    setpriv, kill = shutil.which("setpriv"), shutil.which("kill")
    if os.geteuid() == 0 and setpriv and kill:
        subprocess.run([setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", kill,
                        f"-{signal.Signals(sig).name[3:]}", "-1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return
    for pid in sandbox.uid_processes(uid):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _task_state(task_dir: Path) -> str:
    try:
        return (task_dir / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def running_tasks(uid: int) -> list[tuple[int, int, str]]:
    """(pid, tid, state) of every thread of ``uid``'s processes that is neither stopped (``T``,
    ``t``) nor dead (``Z``, ``X``): the ones that could still use a CPU or memory bandwidth."""
    out = []
    for pid in sandbox.uid_processes(uid):
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            state = _task_state(task)
            if state not in ("T", "t", "Z", "X"):
                out.append((pid, int(task.name), state))
    return out


def freeze_uid(uid: int, wait_s: float = FREEZE_WAIT_S) -> list[tuple[int, int, str]]:
    """SIGSTOP every process of ``uid`` and wait until all their threads read stopped, re-sending
    while any does not (a process forked in the meantime). Returns the threads still running after
    ``wait_s`` seconds ([] when all stopped)."""
    deadline = time.monotonic() + wait_s
    rounds = 0
    while True:
        signal_uid(uid, signal.SIGSTOP)
        rounds += 1
        left = running_tasks(uid)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(min(0.001 * rounds, 0.02))


def thaw_uid(uid: int) -> None:
    """SIGCONT every process of ``uid``, one by one from ``/proc`` (a stopped process cannot fork,
    so no sweep is needed, and no helper process is started)."""
    for pid in sandbox.uid_processes(uid):
        try:
            os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass
