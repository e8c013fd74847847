"""Package layout guards: no `platform` package shadows the standard library; the wheel carries
the content; the CLI answers bad input with one clear line and a non-zero exit."""

import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner_support import ROOT
from inferprep.cli import app

runner = CliRunner()


def test_platform_is_the_standard_library_module():
    assert not (ROOT / "platform" / "__init__.py").exists(), "platform/ must stay a source root, not a package"
    assert Path(platform.__file__).resolve().parent != (ROOT / "platform").resolve()
    assert callable(platform.python_version)
    # from the repository root, where ./platform is on sys.path[0], stdlib platform still wins
    out = subprocess.run([sys.executable, "-c", "import platform, uuid; print(platform.python_version())"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == platform.python_version()


@pytest.mark.slow
def test_wheel_carries_package_and_content(tmp_path):
    out = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    if out.returncode != 0 and "No module named build" in out.stderr:
        pytest.skip("the build package is not installed")
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("inferprep-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "inferprep/cli.py" in names and "inferprep/runner/harness.py" in names
    for folder in ("exercises", "reference", "graders", "templates"):
        assert any(n.startswith(f"inferprep/_content/{folder}/") for n in names), folder
    assert not any(n.startswith("platform/") for n in names)


def test_cli_unknown_slug_is_one_clear_line():
    r = runner.invoke(app, ["show", "no-such-exercise"])
    assert r.exit_code == 2 and "no exercise 'no-such-exercise'" in r.output


def test_cli_missing_file(fixture_content, tmp_path):
    r = runner.invoke(app, ["grade", "add-vectors", str(tmp_path / "nope.py"), "--no-record"])
    assert r.exit_code == 2 and "no such file" in r.output


def test_cli_cuda_absent_is_clear(fixture_content, tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    f = tmp_path / "s.py"
    f.write_text("def add(x, y):\n    return x + y\n")
    r = runner.invoke(app, ["grade", "add-vectors", str(f), "--device", "cuda", "--no-record"])
    assert r.exit_code == 2 and "CUDA" in r.output


def test_cli_grade_pass_and_fail_exit_codes(fixture_content, tmp_path):
    ok = tmp_path / "ok.py"
    ok.write_text("def add(x, y):\n    return x + y\n")
    r = runner.invoke(app, ["grade", "add-vectors", str(ok), "--device", "cpu", "--no-record"])
    assert r.exit_code == 0, r.output
    assert "Passed" in r.output and "random-7" in r.output
    bad = tmp_path / "bad.py"
    bad.write_text("def add(x, y):\n    return x - y\n")
    r = runner.invoke(app, ["grade", "add-vectors", str(bad), "--device", "cpu", "--no-record", "--json"])
    assert r.exit_code == 1
    import json
    v = json.loads(r.stdout)
    assert v["status"] == "wrong_answer" and v["total"] == 3 and v["cases"][0]["passed"] is False


def test_cli_start_writes_stub_and_refuses_to_overwrite(fixture_content, tmp_path):
    r = runner.invoke(app, ["start", "add-vectors", str(tmp_path)])
    assert r.exit_code == 0 and (tmp_path / "add_vectors.py").read_text().startswith("def add")
    r = runner.invoke(app, ["start", "add-vectors", str(tmp_path)])
    assert r.exit_code == 2 and "--force" in r.output


def test_cli_list_json(fixture_content):
    import json
    r = runner.invoke(app, ["list", "--json"])
    assert r.exit_code == 0
    slugs = {e["slug"] for e in json.loads(r.stdout)}
    assert {"add-vectors", "ring-sum"} <= slugs
    r = runner.invoke(app, ["list", "--track", "nonsense"])
    assert r.exit_code == 2 and "unknown track" in r.output


def test_python_dash_m_inferprep_is_the_cli():
    out = subprocess.run([sys.executable, "-m", "inferprep", "show", "no-such-exercise"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "no exercise 'no-such-exercise'" in out.stdout + out.stderr
