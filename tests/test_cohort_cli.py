"""The hosting CLI end to end: ``inferprep admin create-instructor``, ``cohort create | invite |
assign | policy | export`` on the database, and ``inferprep submit`` against a real uvicorn on
loopback with an API token (a fake judge grades: the wire is under test)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from inferprep import auth, cohorts, db
from inferprep.cli import app as cli
from inferprep.settings import Settings
from inferprep.web import create_app

import cohort_fakes
from live_server import live_server

SECRET = "k" * 40
SLUG = "sampling-order"


@pytest.fixture
def server(tmp_path):
    settings = Settings(data_dir=tmp_path, cohort_mode=True, secret_key=SECRET, grading_threads=2,
                        allow_unsandboxed=True, lease_seconds=10)
    with live_server(create_app(settings, grade=cohort_fakes.grade, devices=("cpu",))) as base:
        yield settings, base


def test_admin_cohort_and_submit_commands(server, tmp_path, monkeypatch):
    settings, base = server
    url = settings.db_url
    run = CliRunner().invoke
    monkeypatch.setenv("INFERPREP_PASSWORD", "instructor-pw")
    r = run(cli, ["admin", "create-instructor", "ina@x.org", "--name", "Ina", "--database-url", url])
    assert r.exit_code == 0, r.output
    r = run(cli, ["cohort", "create", "Spring", "--instructor", "ina@x.org", "--database-url", url])
    assert r.exit_code == 0 and "join code" in r.output, r.output
    code = r.output.split("join code")[-1].strip()
    with db.session_scope(url) as s:
        student = auth.sign_up(s, join_code=code, email="stu@x.org", name="Stu", password="student-pw")
        _, token = auth.create_api_token(s, student.id, "editor", secret=SECRET)
        other = auth.create_user(s, "late@x.org", "Late", "late-pw-123")
    r = run(cli, ["cohort", "invite", "Spring", "late@x.org", "--server", base, "--database-url", url])
    assert r.exit_code == 0 and f"{base}/signup?code={code}" in r.output, r.output
    r = run(cli, ["cohort", "assign", "Spring", SLUG, "--deadline", "2099-01-01T00:00", "--database-url", url])
    assert r.exit_code == 0, r.output
    r = run(cli, ["cohort", "policy", "Spring", "--unlock", "after_deadline", "--per-hour", "30", "--database-url", url])
    assert r.exit_code == 0 and "after_deadline" in r.output, r.output
    with db.session_scope(url) as s:
        assert cohorts.role_in(s, other.id, 1) == "student"

    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("# good\n")
    bad.write_text("# bad FAIL\n")
    r = run(cli, ["submit", SLUG, str(good), "--server", base, "--token", token])
    assert r.exit_code == 0, r.output
    r = run(cli, ["submit", SLUG, str(bad), "--server", base, "--token", token, "--json"])
    assert r.exit_code == 1 and '"wrong_answer"' in r.output, r.output
    r = run(cli, ["submit", SLUG, str(good), "--server", base, "--token", "ipt_wrong"])
    assert r.exit_code == 2 and "401" in r.output
    r = run(cli, ["cohort", "export", "Spring", "--database-url", url])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0] == f"email,name,{SLUG},solved" and "stu@x.org,Stu,1.0000,1" in lines, lines


def test_submit_waits_out_a_429(server, tmp_path):
    settings, base = server
    with db.session_scope(settings.db_url) as s:
        c = cohorts.create_cohort(s, "Tight")
        cohorts.set_policy(s, c.id, submissions_per_hour=1)
        u = auth.sign_up(s, join_code=c.join_code, email="t@x.org", name="T", password="password-1")
        _, token = auth.create_api_token(s, u.id, "t", secret=SECRET)
    f = tmp_path / "a.py"
    f.write_text("# a\n")
    run = CliRunner().invoke
    assert run(cli, ["submit", SLUG, str(f), "--server", base, "--token", token]).exit_code == 0
    r = run(cli, ["submit", SLUG, str(f), "--server", base, "--token", token, "--timeout", "5"])
    assert r.exit_code == 3 and "gradings an hour" in r.output, r.output


def test_worker_refuses_without_bubblewrap_or_cuda(tmp_path, monkeypatch):
    from inferprep.runner import sandbox
    url = f"sqlite:///{tmp_path}/w.db"
    monkeypatch.setattr(sandbox, "sandbox_mode", lambda requested=None: "none")
    r = CliRunner().invoke(cli, ["worker", "--database-url", url])
    assert r.exit_code == 2 and "bubblewrap" in r.output, r.output
    r = CliRunner().invoke(cli, ["worker", "--device", "gpu", "--database-url", url])
    assert r.exit_code == 2 and "--device" in r.output
    import torch
    if not torch.cuda.is_available():
        r = CliRunner().invoke(cli, ["worker", "--device", "cuda", "--database-url", url])
        assert r.exit_code == 2 and "CUDA" in r.output, r.output
