"""Hostile submissions (tests/runner_cases/<case>/): each gets its expected non-pass verdict, on the
warm and the cold path, with bubblewrap and with the runner told it is absent, and the grader stays
healthy.

A case folder holding ``scratch.py`` is a scratch run (``runner.scratch``): that snippet is the
hostile part, run against the folder's ``submission.py`` or else ``correct``'s, and ``status`` lists
scratch statuses (``ok`` when the snippet ran to its end).

Each case folder holds ``submission.py`` (placeholders {GRADER_PATH}, {REFERENCE_PATH},
{REFERENCE_DIR}, {CHECKOUT}, {DATA_DIR} are filled in; {UNHOOK} becomes tests/runner_cases/
_unhook.py, which empties the harness's audit hook first) and ``expected.toml``:

- ``status``: the allowed statuses;
- ``stdout_contains`` / ``stdout_not_contains``: markers that must / must not appear in stdout or
  stderr; ``message_contains`` / ``message_contains_any`` / ``message_not_contains``: the same for
  the verdict's messages (its own and every case's); ``bwrap_stdout_not_contains``: only with bubblewrap (e.g. host paths, visible without it);
- ``layers``: besides "all", "no-seccomp" runs the case with the seccomp filter off (bubblewrap
  only), proving the namespaces and the allow-listed root hold on their own;
- ``controls``: positive controls run in the test process first, showing the target exists and is
  reachable outside the sandbox (so "cannot reach" cannot pass because the target is absent);
- ``after``: checks on the host once the verdict is in (``no_sysv_ipc_left``; ``no_task_left``: no
  thread of the child's uid alive, whatever /proc/<pid>/stat says of its leader);
- ``skip``: "<mode>-<path>" combinations where the case does not apply, with the reason in a comment.
"""

import os
import socket
import tomllib
from pathlib import Path

import pytest

from runner_support import ROOT, sandbox_modes
from inferprep import catalog
from inferprep.runner import forkserver, judge, sandbox, scratch
from inferprep.runner.process import drain_cleanups

PATHS = {"cold": sandbox.launch, "warm": forkserver.launch}

CASES_DIR = ROOT / "tests" / "runner_cases"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir())


def expected_of(name: str) -> dict:
    return tomllib.loads((CASES_DIR / name / "expected.toml").read_text())


def case_params():
    out = []
    for name in CASES:
        exp = expected_of(name)
        for mode in sandbox_modes():
            for path in PATHS:
                for layer in exp.get("layers", ["all"]):
                    if layer != "all" and mode != "bwrap":
                        continue  # without bubblewrap, seccomp is the only kernel layer
                    marks = [pytest.mark.skip(reason="does not apply here (see expected.toml)")] \
                        if f"{mode}-{path}" in exp.get("skip", []) else []
                    out.append(pytest.param(name, mode, path, layer, id=f"{name}-{mode}-{path}-{layer}", marks=marks))
    return out


def submission_code(name: str, file: str = "submission.py") -> str:
    ex = catalog.get("add-vectors")
    path = CASES_DIR / name / file
    if file == "submission.py" and not path.exists():
        path = CASES_DIR / "correct" / file
    code = path.read_text()
    return (code.replace("{UNHOOK}", (CASES_DIR / "_unhook.py").read_text())
            .replace("{GRADER_PATH}", str(ex.grader_path))
            .replace("{REFERENCE_PATH}", str(ex.reference_path))
            .replace("{REFERENCE_DIR}", str(ex.reference_path.parent))
            .replace("{CHECKOUT}", str(ROOT))
            .replace("{DATA_DIR}", os.environ.get("INFERPREP_DATA_DIR", "/nonexistent")))


# -- positive controls: the target of an attack exists and is reachable from outside -----------------
PG_SOCKETS = ("/run/postgresql/.s.PGSQL.5432", "/var/run/postgresql/.s.PGSQL.5432")


def control_postgres_socket() -> None:
    live = [p for p in PG_SOCKETS if os.path.exists(p)]
    if not live:
        if os.environ.get("INFERPREP_REQUIRE_POSTGRES"):
            pytest.fail("PostgreSQL is required here, but its socket file is absent")
        pytest.skip("no PostgreSQL socket file on this machine: nothing to attack")
    s = socket.socket(socket.AF_UNIX)
    s.connect(live[0])  # reachable from outside the sandbox: the attack has a real target
    s.close()


def control_host_paths() -> None:
    present = [p for p in ("/run", "/var", "/root", "/etc/passwd", str(ROOT / ".git"), str(ROOT / "exercises"))
               if os.path.lexists(p)]
    assert len(present) >= 4, present


CONTROLS = {"postgres_socket": control_postgres_socket, "host_paths": control_host_paths}


def sysv_ipc_of(uid: int) -> list[str]:
    """SysV objects on the host owned by ``uid`` (/proc/sysvipc: the host's IPC namespace)."""
    left = []
    for kind in ("shm", "sem", "msg"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        cols = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(cols, line.split()))
            if int(row.get("uid", -1)) == uid:
                left.append(f"{kind}: {line.strip()}")
    return left


def live_tasks_of(uid: int) -> list[str]:
    """Every live task (thread) on the host whose real uid is ``uid``: unlike a look at
    /proc/<pid>/stat, this also finds a thread group whose leader thread has exited (shown "Z")
    while other threads run."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            tasks = list((p / "task").iterdir())
        except OSError:
            continue
        for t in tasks:
            try:
                status = (t / "status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if int(fields["Uid"].split()[0]) == uid and fields["State"].split()[0] not in ("Z", "X"):
                out.append(f"{p.name}/{t.name} {fields['State'].strip()}")
    return out


def no_task_left(uid: int) -> None:
    import time
    deadline = time.monotonic() + 2.0  # a pid namespace being torn down may take a moment
    while (left := live_tasks_of(uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for entry in left:  # never leave a stray process behind, even when the check fails
        try:
            os.kill(int(entry.split("/")[0]), 9)
        except OSError:
            pass
    assert left == [], left


def run_case(name: str, mode: str, launcher_box: list | None = None, path: str = "warm"):
    ex = catalog.get("add-vectors")
    code = submission_code(name)

    def launcher(**kw):
        launched = PATHS[path](**kw)
        if launcher_box is not None:
            launcher_box.append(launched)
        return launched

    if (CASES_DIR / name / "scratch.py").exists():
        return scratch.run(ex, code, submission_code(name, "scratch.py"), sandbox_mode=mode, launcher=launcher)
    return judge.grade(ex, code, device="cpu", sandbox_mode=mode, launcher=launcher)


@pytest.mark.parametrize("name,mode,path,layer", case_params())
def test_hostile_submission(fixture_content, monkeypatch, name, mode, path, layer):
    if name == "stdlib_imports" and mode == "none" and os.geteuid() == 0 and sandbox.unreadable_python():
        pytest.skip(f"{sandbox.unreadable_python()} is not readable by the sandbox uid; CI builds the venv "
                    "on a world-readable Python so that this case runs there")
    expected = expected_of(name)
    for control in expected.get("controls", []):
        CONTROLS[control]()
    monkeypatch.setenv("SECRET_TOKEN", "xyz-secret-token")
    if layer == "no-seccomp":
        monkeypatch.setenv("INFERPREP_SECCOMP", "0")  # read per launch: the child's env says it
    box: list = []
    v = run_case(name, mode, box, path)
    if layer == "no-seccomp":
        assert "seccomp" not in v.sandbox
    if path == "warm" and forkserver.warm_available() is None:
        assert box[0].extra.get("warm"), "the warm path fell back to a cold start"
    status = getattr(v.status, "value", v.status)   # a scratch result's status is a plain string
    assert status in expected["status"], (status, v.message, [(c.name, c.status, c.message[:200])
                                                              for c in getattr(v, "cases", [])])
    if status not in ("passed", "ok"):
        assert not v.ok
    shown = v.stdout + v.stderr
    for marker in expected.get("stdout_contains", []):
        assert marker in shown, (marker, shown[-2000:])
    not_shown = expected.get("stdout_not_contains", []) + (expected.get("bwrap_stdout_not_contains", []) if mode == "bwrap" else [])
    for marker in not_shown:
        assert marker not in shown, (marker, [ln for ln in shown.splitlines() if marker in ln][:10])
    said = "\n".join([v.message, *(c.message for c in getattr(v, "cases", []))])   # a scratch result has none
    for marker in expected.get("message_contains", []):
        assert marker in said, (marker, said[-2000:])
    if expected.get("message_contains_any"):
        assert any(m in said for m in expected["message_contains_any"]), (expected["message_contains_any"], said[-2000:])
    for marker in expected.get("message_not_contains", []):
        assert marker not in said, (marker, said[-2000:])
    drain_cleanups()
    if os.geteuid() == 0 and box and box[0].mode is not None:
        launched = box[0]
        assert launched.proc.returncode is not None
        # nothing the submission started is left running under its uid
        uid = getattr(launched, "uid_used", None)
        if uid is not None:
            assert sandbox.uid_processes(uid) == []
            if "no_sysv_ipc_left" in expected.get("after", []):
                assert sysv_ipc_of(uid) == []
            if "no_task_left" in expected.get("after", []):
                no_task_left(uid)


FILL_TMP = """
import os
def add(x, y):
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.getcwd()):
        try:
            with open(os.path.join(d, "planted-by-submission"), "w") as f:
                f.write("x" * 1000)
            os.chmod(os.path.join(d, "planted-by-submission"), 0o666)
        except OSError:
            pass
    return x + y
"""

SNOOP_TMP = """
import os
def add(x, y):
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        if os.path.exists(os.path.join(d, "planted-by-submission")):
            return x - y
    return x + y
"""


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("mode", sandbox_modes())
def test_nothing_planted_reaches_the_next_submission(fixture_content, mode, path):
    ex = catalog.get("add-vectors")
    launcher = PATHS[path]
    judge.grade(ex, FILL_TMP, sandbox_mode=mode, launcher=launcher)
    drain_cleanups()
    assert judge.grade(ex, SNOOP_TMP, sandbox_mode=mode, launcher=launcher).status.value == "passed"


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("mode", sandbox_modes())
def test_grader_healthy_after_fork_bomb(fixture_content, mode, path):
    assert run_case("fork_bomb", mode, path=path).status.value != "passed"
    assert run_case("correct", mode, path=path).status.value == "passed"


def test_unknown_sandbox_mode_is_an_internal_error(fixture_content):
    v = judge.grade(catalog.get("add-vectors"), "def add(x, y):\n    return x + y\n", sandbox_mode="chroot")
    assert v.status.value == "internal_error" and "sandbox" in v.message
