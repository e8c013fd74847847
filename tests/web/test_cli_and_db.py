"""The CLI side: `inferprep grade` records into the same database (unless --no-record),
`inferprep list` shows the status, `inferprep db upgrade`; settings from the environment; the
migrations match the models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferprep import catalog, db, progress, services
from inferprep.cli import app
from inferprep.models import LOCAL_USER_ID
from inferprep.settings import Settings, get_settings
from inferprep.verdict import Status, Verdict


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERPREP_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("INFERPREP_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "d"
    get_settings.cache_clear()


def test_settings_read_the_environment(data_dir, monkeypatch):
    s = Settings()
    assert s.data_dir == data_dir and s.db_url == f"sqlite:///{data_dir / 'inferprep.db'}"
    monkeypatch.setenv("INFERPREP_PORT", "9001")
    assert Settings().port == 9001


def test_cli_grades_are_recorded_and_listed(data_dir):
    ex = catalog.get("sampling-order")
    assert progress.local_status()["sampling-order"] == "untouched"
    v = Verdict(slug=ex.slug, status=Status.WRONG_ANSWER, passed=0, total=1, device="cpu")
    progress.record_cli_grade(ex, "x = 1\n", v)
    assert progress.local_status()["sampling-order"] == "attempted"
    progress.record_cli_grade(ex, "x = 2\n", Verdict(slug=ex.slug, status=Status.PASSED, score=1.0, passed=1, total=1))
    assert progress.local_status()["sampling-order"] == "solved"
    out = CliRunner().invoke(app, ["list", "--json"])
    assert out.exit_code == 0
    assert {e["slug"]: e["status"] for e in json.loads(out.stdout)}["sampling-order"] == "solved"
    with db.session_scope(Settings().db_url) as s:
        subs = services.list_submissions(s, LOCAL_USER_ID, "sampling-order")
        assert [x.source for x in subs] == ["cli", "cli"] and subs[0].code == "x = 2\n"


def test_grade_no_record_leaves_the_database_alone(data_dir, tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("syntax error here\n")
    r = CliRunner().invoke(app, ["grade", "sampling-order", str(f), "--public", "--no-record", "--sandbox", "none"])
    assert r.exit_code == 1
    assert progress.local_status()["sampling-order"] == "untouched"
    r = CliRunner().invoke(app, ["grade", "sampling-order", str(f), "--public", "--sandbox", "none"])
    assert r.exit_code == 1
    assert progress.local_status()["sampling-order"] == "attempted"


def test_db_upgrade_command(data_dir):
    r = CliRunner().invoke(app, ["db", "upgrade"])
    assert r.exit_code == 0, r.output
    assert (data_dir / "inferprep.db").is_file()


def test_migrations_match_the_models(tmp_path):
    """Autogenerate against a freshly migrated database finds nothing to do."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel

    url = f"sqlite:///{tmp_path / 'm.db'}"
    db.upgrade(url)
    with db.engine_for(url).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == []


def test_run_scratch_prints_the_snippets_output_and_records_nothing(data_dir, tmp_path, fixture_content):
    sol, snippet = tmp_path / "add_vectors.py", tmp_path / "try.py"
    sol.write_text("def add(x, y):\n    return x + y\n")
    snippet.write_text("import torch\nprint('sum', solution.add(torch.ones(2), torch.ones(2)).tolist())\n")
    r = CliRunner().invoke(app, ["run", "add-vectors", str(sol), "--scratch", str(snippet), "--device", "cpu"])
    assert r.exit_code == 0, r.output
    assert "sum [2.0, 2.0]" in r.stdout and "not graded" in r.output
    snippet.write_text("solution.add([1], None)\n")
    r = CliRunner().invoke(app, ["run", "add-vectors", str(sol), "--scratch", str(snippet), "--json"])
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["status"] == "runtime_error" and 'File "solution.py", line 2, in add' in out["traceback"]
    assert progress.local_status()["add-vectors"] == "untouched"      # a scratch run is not recorded
    r = CliRunner().invoke(app, ["run", "add-vectors", str(sol), "--scratch", str(tmp_path / "nope.py")])
    assert r.exit_code == 2 and "no such file" in r.output
    r = CliRunner().invoke(app, ["run", "add-vector", str(sol), "--scratch", str(snippet)])
    assert r.exit_code == 2 and "did you mean add-vectors" in r.output
    (tmp_path / "latin1.py").write_bytes(b"print('\xe9')\n")
    r = CliRunner().invoke(app, ["run", "add-vectors", str(sol), "--scratch", str(tmp_path / "latin1.py")])
    assert r.exit_code == 2 and "is not UTF-8 text" in r.output
