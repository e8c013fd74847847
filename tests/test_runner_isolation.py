"""Submissions running at the same time: no channel between them, no harm from one to the other,
and the platform's own failures retried by the platform (issue 11, items 4 to 6).

Each channel test has a positive control: the same channel works between two ordinary processes
on this machine, so "B could not reach A" cannot pass because the mechanism is missing.
"""

import ctypes
import os
import socket
import threading
import time

import pytest

from runner_support import sandbox_modes
from inferprep import catalog
from inferprep.runner import forkserver, judge, sandbox
from inferprep.runner.process import drain_cleanups

PATHS = {"cold": sandbox.launch, "warm": forkserver.launch}
SHM_KEY = 0x51A7E
ABSTRACT = "\0inferprep-isolation-test"

WRITER = f"""
import ctypes, os, socket, time, gc
for f in gc.get_objects():  # the audit hook is diagnostics: switch it off, as an attacker would
    if type(f).__name__ == "function" and f.__name__ == "hook" and f.__closure__:
        for c in f.__closure__:
            if isinstance(c.cell_contents, set):
                c.cell_contents.clear()

DONE = []


def add(x, y):
    if DONE:
        return x + y
    DONE.append(1)
    made = []
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        shmid = libc.shmget({SHM_KEY}, 1 << 20, 0o1000 | 0o666)
        if shmid >= 0:
            ctypes.memmove(libc.shmat(shmid, None, 0), b"SECRET-FROM-A", 13)
            made.append("shm")
    except OSError:
        pass
    try:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind({ABSTRACT!r})
        srv.listen(4)
        made.append("abstract")
    except OSError:
        pass
    with open("/tmp/planted-by-a", "w") as f:
        f.write("SECRET-FROM-A")
    print("READY", made, flush=True)
    time.sleep(4)
    return x + y
"""

READER = f"""
import ctypes, os, socket, gc
for f in gc.get_objects():
    if type(f).__name__ == "function" and f.__name__ == "hook" and f.__closure__:
        for c in f.__closure__:
            if isinstance(c.cell_contents, set):
                c.cell_contents.clear()

def add(x, y):
    reached = []
    if add.__dict__.get("checked"):
        return x + y
    add.checked = True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.shmget({SHM_KEY}, 0, 0) >= 0:
            reached.append("shm")
    except OSError:
        pass
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect({ABSTRACT!r})
        reached.append("abstract")
    except OSError:
        pass
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.getcwd()):
        try:
            if "planted-by-a" in os.listdir(d):
                reached.append("file " + d)
        except OSError:
            pass
    print("REACHED", reached)
    add.reached = reached
    return x - y if reached else x + y
"""

CORRECT = "def add(x, y):\n    return x + y\n"


def grade_async(code: str, mode: str, path: str, box: list, results: dict, key: str) -> threading.Thread:
    ex = catalog.get("add-vectors")

    def launcher(**kw):
        launched = PATHS[path](**kw)
        box.append(launched)
        return launched

    def run():
        results[key] = judge.grade(ex, code, sandbox_mode=mode, launcher=launcher)

    t = threading.Thread(target=run)
    t.start()
    return t


def wait_for_stdout(box: list, marker: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if box:
            try:
                text = box[0].stdout_path.read_text()
            except FileNotFoundError:
                text = ""
            if marker in text:
                return text
        time.sleep(0.05)
    raise AssertionError(f"{marker!r} never appeared in the writer's stdout")


def test_control_channels_work_between_ordinary_processes():
    """The positive control: on this kernel, outside the sandbox, a SysV segment made by one
    process is found by key from another, and an abstract socket accepts a connection."""
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(SHM_KEY + 1, 4096, 0o1000 | 0o600)
    assert shmid >= 0, ctypes.get_errno()
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if libc.shmget(SHM_KEY + 1, 0, 0) == shmid else 1)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    finally:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(ABSTRACT + "-control")
    srv.listen(1)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(ABSTRACT + "-control")
    c.close()
    srv.close()


@pytest.mark.parametrize("layer", ["all", "no-seccomp"])
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("mode", sandbox_modes())
def test_two_concurrent_submissions_share_nothing(fixture_content, monkeypatch, mode, path, layer):
    if layer == "no-seccomp":
        if os.geteuid() != 0:
            pytest.skip("without root there are no per-child namespaces: seccomp is the only layer")
        monkeypatch.setenv("INFERPREP_SECCOMP", "0")
    results: dict = {}
    a_box: list = []
    b_box: list = []
    ta = grade_async(WRITER, mode, path, a_box, results, "a")
    text = wait_for_stdout(a_box, "READY")
    if layer == "no-seccomp":
        # the namespaces alone must hold: the writer really made both objects
        assert "'shm'" in text and "'abstract'" in text, text
    tb = grade_async(READER, mode, path, b_box, results, "b")
    tb.join(120)
    ta.join(120)
    a, b = results["a"], results["b"]
    assert a.status.value == "passed", (a.status, a.message, a.stdout[-500:])
    assert b.status.value == "passed", (b.status, b.message, b.stdout[-500:])
    assert "REACHED []" in b.stdout
    drain_cleanups()
    if os.geteuid() == 0:
        # nothing of the writer outlived its verdict on the host
        from test_runner_hostile import sysv_ipc_of
        assert sysv_ipc_of(a_box[0].uid_used) == []
        assert sandbox.uid_processes(a_box[0].uid_used) == []


@pytest.mark.parametrize("hostile", ["deep_tree", "tmp_quota", "fork_bomb"])
@pytest.mark.parametrize("mode", sandbox_modes())
def test_a_hostile_neighbour_does_not_fail_a_correct_submission(fixture_content, mode, hostile):
    """A 1,500-deep folder chain once crashed the fork server's clean-up, and a full shared /tmp
    once made a concurrent correct submission an internal error: both run beside a correct one."""
    if forkserver.warm_available() is not None:
        pytest.skip(forkserver.warm_available())
    from test_runner_hostile import submission_code
    results: dict = {}
    judge.grade(catalog.get("add-vectors"), CORRECT, sandbox_mode=mode)  # the pool is up
    pool = forkserver.get_pool(sandbox.sandbox_mode(mode), "cpu")
    server_pid = pool.proc.pid
    threads = [grade_async(submission_code(hostile), mode, "warm", [], results, "hostile")]
    time.sleep(0.3)
    for i in range(3):
        threads.append(grade_async(CORRECT, mode, "warm", [], results, f"correct-{i}"))
        time.sleep(0.3)
    for t in threads:
        t.join(180)
    assert results["hostile"].status.value != "passed"
    for i in range(3):
        v = results[f"correct-{i}"]
        assert v.status.value == "passed", (v.status, v.message)
    drain_cleanups()
    assert pool.alive() and pool.proc.pid == server_pid, "the fork server died"


def test_warm_pool_outlives_the_thread_that_started_it(fixture_content):
    """bwrap's --die-with-parent is per thread: a pool started by a worker thread that then exits
    must keep serving."""
    if forkserver.warm_available() is not None:
        pytest.skip(forkserver.warm_available())
    forkserver.shutdown()
    ex = catalog.get("add-vectors")
    mode = sandbox.sandbox_mode(None)
    first: dict = {}
    t = threading.Thread(target=lambda: first.update(v=judge.grade(ex, CORRECT, sandbox_mode=mode)))
    t.start()
    t.join(120)
    assert first["v"].status.value == "passed" and "warm pool" in first["v"].sandbox
    pool = forkserver.get_pool(mode, "cpu")
    pid = pool.proc.pid
    time.sleep(0.5)  # let the kernel deliver any parent-death signal
    v = judge.grade(ex, CORRECT, sandbox_mode=mode)
    assert v.status.value == "passed" and "warm pool" in v.sandbox
    assert pool.proc.pid == pid and pool.alive()


def descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def kill_tree(pid: int) -> None:
    for p in descendants(pid):
        try:
            os.kill(p, 9)
        except ProcessLookupError:
            pass


SLOW_CORRECT = "import time\n\ndef add(x, y):\n    time.sleep(1.5)\n    return x + y\n"


def test_a_server_death_is_retried_by_the_platform(fixture_content):
    """The fork server dies in the middle of a grading (the platform's failure): the judge runs the
    grading again by itself and the student gets the real verdict, never a runtime error."""
    if forkserver.warm_available() is not None:
        pytest.skip(forkserver.warm_available())
    ex = catalog.get("add-vectors")
    mode = sandbox.sandbox_mode(None)
    judge.grade(ex, CORRECT, sandbox_mode=mode)
    pool = forkserver.get_pool(mode, "cpu")
    killed: list = []

    def kill_server_once(**kw):
        launched = forkserver.launch(**kw)
        if not killed:
            killed.append(pool.proc.pid)
            threading.Timer(0.5, kill_tree, args=(pool.proc.pid,)).start()
        return launched

    v = judge.grade(ex, SLOW_CORRECT, sandbox_mode=mode, launcher=kill_server_once)
    assert killed
    assert v.status.value == "passed", (v.status, v.message)
    assert v.platform_retries >= 1


def test_platform_failures_exhaust_into_an_internal_error(fixture_content):
    calls: list = []

    def broken(**kw):
        calls.append(1)
        raise RuntimeError("bwrap: cannot mount tmpfs")

    v = judge.grade(catalog.get("add-vectors"), CORRECT, launcher=broken)
    assert v.status.value == "internal_error" and "bwrap: cannot mount tmpfs" in v.message
    assert len(calls) == judge.PLATFORM_RETRIES + 1 and v.platform_retries == judge.PLATFORM_RETRIES
