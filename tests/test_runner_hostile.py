"""Hostile submissions (tests/runner_cases/<case>/): each gets its expected non-pass verdict, with
bubblewrap and with the runner told it is absent, and the grader stays healthy.

Each case folder holds ``submission.py`` (placeholders {GRADER_PATH}, {REFERENCE_PATH},
{REFERENCE_DIR}, {CHECKOUT} are filled in) and ``expected.toml``: ``status`` (allowed statuses),
optionally ``stdout_not_contains`` and ``leftover_processes = false``.
"""

import os
import tomllib
from pathlib import Path

import pytest

from runner_support import FIXTURE_CONTENT, ROOT, sandbox_modes
from inferprep import catalog
from inferprep.runner import forkserver, judge, sandbox
from inferprep.runner.process import drain_cleanups

PATHS = {"cold": sandbox.launch, "warm": forkserver.launch}

CASES = sorted(p.name for p in (ROOT / "tests" / "runner_cases").iterdir() if p.is_dir())


def run_case(name: str, mode: str, launcher_box: list | None = None, path: str = "warm"):
    folder = ROOT / "tests" / "runner_cases" / name
    ex = catalog.get("add-vectors")
    code = (folder / "submission.py").read_text()
    code = (code.replace("{GRADER_PATH}", str(ex.grader_path))
            .replace("{REFERENCE_PATH}", str(ex.reference_path))
            .replace("{REFERENCE_DIR}", str(ex.reference_path.parent))
            .replace("{CHECKOUT}", str(ROOT)))

    def launcher(**kw):
        launched = PATHS[path](**kw)
        if launcher_box is not None:
            launcher_box.append(launched)
        return launched

    return judge.grade(ex, code, device="cpu", sandbox_mode=mode, launcher=launcher)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("mode", sandbox_modes())
@pytest.mark.parametrize("name", CASES)
def test_hostile_submission(fixture_content, monkeypatch, name, mode, path):
    if name == "stdlib_imports" and mode == "none" and os.geteuid() == 0 and sandbox.unreadable_python():
        pytest.skip(f"{sandbox.unreadable_python()} is not readable by the sandbox uid; CI builds the venv "
                    "on a world-readable Python so that this case runs there")
    monkeypatch.setenv("SECRET_TOKEN", "xyz-secret-token")
    expected = tomllib.loads((ROOT / "tests" / "runner_cases" / name / "expected.toml").read_text())
    box: list = []
    v = run_case(name, mode, box, path)
    if path == "warm" and forkserver.warm_available() is None:
        assert box[0].extra.get("warm"), "the warm path fell back to a cold start"
    assert v.status.value in expected["status"], (v.status, v.message, [(c.name, c.status, c.message[:200]) for c in v.cases])
    if v.status.value != "passed":
        assert not v.ok
    for marker in expected.get("stdout_not_contains", []):
        assert marker not in v.stdout and marker not in v.stderr
    drain_cleanups()
    if os.geteuid() == 0 and box and box[0].mode is not None:
        launched = box[0]
        assert launched.proc.returncode is not None
        # nothing the submission started is left running under its uid
        uid = getattr(launched, "uid_used", None)
        if uid is not None:
            assert sandbox.uid_processes(uid) == []


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
