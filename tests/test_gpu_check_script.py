"""scripts/gpu_check.sh, the GPU machine's prepared check (issue 19): run end to end with
``--device cpu`` on one small exercise (the dry run CI can afford), its wheel unpacking with a
made-up wheel, and the driver's planning and expectations as plain functions."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from inferprep import catalog

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def _driver():
    spec = importlib.util.spec_from_file_location("gpu_check_driver", ROOT / "scripts" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _env(**extra) -> dict:
    env = dict(os.environ, PYTHON=sys.executable, **extra)
    env.pop("OUT", None)
    return env


def test_the_cpu_dry_run_grades_reference_stub_and_a_variant_and_writes_the_summary(tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(SCRIPT), "--device", "cpu", "--out", str(out), "--only", "ridge-point",
                          "--variants", "1", "--jobs", "2"], capture_output=True, text=True, timeout=240,
                         env=_env(INFERPREP_DATA_DIR=str(tmp_path / "data")))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "-- torch " in run.stdout and "-- python " in run.stdout  # the versions it found
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] is True and summary["device"] == "cpu"
    assert summary["counts"]["reference"] == {"ok": 1, "run": 1, "planned": 1}
    assert summary["counts"]["stub"] == {"ok": 1, "run": 1, "planned": 1}
    assert summary["counts"]["variant"] == {"ok": 1, "run": 1, "planned": 1}
    kinds = {r["kind"]: r for r in summary["results"]}
    assert kinds["reference"]["status"] == "passed"
    assert kinds["stub"]["status"] not in ("passed", "internal_error")
    assert Path(kinds["variant"]["file"]).parent.name == catalog.get("ridge-point").module
    assert summary["failures"] == []
    text = (out / "summary.txt").read_text()
    assert text.startswith("inferprep GPU check on cpu: OK")
    assert "reference: 1 ok of 1 run (1 planned)" in text


def test_a_missing_package_is_unpacked_from_its_wheel_into_a_venv_the_child_can_import(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "inferprep_probe_mod-1.0-py3-none-any.whl", "w") as z:
        z.writestr("inferprep_probe_mod/__init__.py", "VALUE = 42\n")
    venv = tmp_path / "venv"
    run = subprocess.run(["bash", str(SCRIPT), "--device", "cpu", "--prepare-only", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120,
                         env=_env(GPU_CHECK_WHEELS=str(wheels), GPU_CHECK_VENV=str(venv),
                                  GPU_CHECK_NEED="inferprep_probe_mod json"))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "missing here: inferprep_probe_mod;" in run.stdout  # json is present, so not listed
    assert "unpacked: inferprep_probe_mod-1.0-py3-none-any.whl" in run.stdout
    probe = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import inferprep_probe_mod as m; print(m.VALUE)"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "42", probe.stderr


def test_no_wheels_for_a_missing_package_is_a_clear_error(tmp_path):
    run = subprocess.run(["bash", str(SCRIPT), "--device", "cpu", "--prepare-only", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=60,
                         env=_env(GPU_CHECK_WHEELS=str(tmp_path / "none"), GPU_CHECK_NEED="inferprep_probe_absent"))
    assert run.returncode == 2
    assert "has no wheels; run scripts/fetch_gpu_wheels.sh" in run.stderr


@pytest.mark.parametrize("args,message", [(["--device", "tpu"], "--device must be cuda or cpu"),
                                          (["--frobnicate"], "unknown argument --frobnicate")])
def test_bad_arguments_exit_2(tmp_path, args, message):
    run = subprocess.run(["bash", str(SCRIPT), *args, "--out", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, env=_env())
    assert run.returncode == 2 and message in run.stderr


def test_the_driver_refuses_an_unknown_slug(tmp_path, capsys):
    assert _driver().main(["--device", "cpu", "--out", str(tmp_path), "--only", "no-such-exercise"]) == 2
    assert "unknown exercise(s): no-such-exercise" in capsys.readouterr().err


def test_the_plan_puts_references_first_keeps_the_memory_variants_and_skips_cpu_only_on_cuda():
    d = _driver()
    fa = catalog.get("flash-attention-forward")
    cpu_only = next(e for e in catalog.all_exercises() if e.meta.devices == ["cpu"])
    jobs, skipped = d.plan([cpu_only, fa], "cuda", variants=1, seed=3)
    assert skipped == [{"slug": cpu_only.slug, "why": "graded on cpu only"}]
    assert [j["kind"] for j in jobs] == ["reference", "stub", "variant", "variant", "variant"]
    memory = [Path(j["file"]).stem for j in jobs if j["expect"] == "memory_limit"]
    assert memory == ["materialize_scores", "rowblock_softmax"]   # one kept as a patch, one whole
    patched = next(j for j in jobs if j["file"].endswith(".patch"))
    assert "def " in d._variant(patched).source()                # graded as the patched reference
    again, _ = d.plan([cpu_only, fa], "cuda", variants=1, seed=3)
    assert again == jobs  # the same draw on every machine
    jobs_cpu, skipped_cpu = d.plan([cpu_only], "cpu", variants=0, seed=3)
    assert skipped_cpu == [] and [j["kind"] for j in jobs_cpu] == ["reference", "stub"]


@pytest.mark.parametrize("expect,status,target_failed,ok", [
    ("passed", "passed", False, True), ("passed", "wrong_answer", True, False),
    ("fails", "wrong_answer", True, True), ("fails", "passed", False, False),
    ("fails", "internal_error", True, False), ("fails", "skipped", False, False),
    ("fails", "runtime_error", False, False),  # an input-check variant that failed no input check
    ("memory_limit", "memory_limit", True, True), ("memory_limit", "wrong_answer", True, False)])
def test_expectations(expect, status, target_failed, ok):
    assert _driver().met(expect, status, target_failed) is ok
