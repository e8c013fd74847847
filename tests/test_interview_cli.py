"""A whole 30-minute mock interview on the command line, through typer's CliRunner with the clock
advanced (no waiting): ``inferprep interview start`` writes the drawn stub and statement, a hint
is taken, ``inferprep grade`` grades the stub's public examples and then the reference solution
for real (one quick calculate exercise) and both count toward the session, the time runs out,
``interview finish`` prints the report with its score and rule, ``interview history`` lists it."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from inferprep import catalog, cli_interview, db, followups, interview, paths
from inferprep.cli import app
from inferprep.models import LOCAL_USER_ID
from inferprep.settings import get_settings

T0 = datetime(2030, 5, 6, 14, 0, tzinfo=timezone.utc)


@pytest.fixture
def local(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERPREP_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("INFERPREP_DATABASE_URL", raising=False)
    monkeypatch.delenv("INFERPREP_COHORT_MODE", raising=False)
    get_settings.cache_clear()
    monkeypatch.setattr(cli_interview.console, "width", 200)
    clock = {"t": T0}
    interview.set_clock(lambda: clock["t"])
    yield clock
    interview.set_clock(None)
    get_settings.cache_clear()


def calculate_seed() -> tuple[int, catalog.Exercise]:
    """A seed whose 30-minute draw from the roofline track is a calculate exercise (fast to grade)
    with hints and follow-up questions."""
    pool = interview.candidates("track", "roofline")
    for seed in range(200):
        (slug, role), = interview.draw(pool, 30, seed, set())
        ex = catalog.get(slug)
        if ex.meta.kind == catalog.Kind.CALCULATE and ex.meta.hints and followups.load(ex.folder):
            return seed, ex
    raise AssertionError("no seed draws a calculate exercise with hints and follow-ups")


def a_right_answer(ex: catalog.Exercise) -> tuple[str, str]:
    """(question id, the right answer as ``inferprep followups --answer`` takes it) of the first
    single-choice or number question of ``ex``."""
    for q in followups.load(ex.folder):
        if isinstance(q, followups.SingleChoice):
            return q.id, str(q.answer)
        if isinstance(q, followups.NumberAnswer):
            return q.id, repr(q.answer)
    raise AssertionError(f"{ex.slug} has no single-choice or number follow-up")


def test_a_whole_30_minute_interview_on_the_command_line(local, tmp_path):
    run = CliRunner().invoke
    seed, ex = calculate_seed()
    folder = tmp_path / "iv"
    r = run(app, ["interview", "start", "--track", "roofline", "--minutes", "30", "--seed", str(seed), str(folder)])
    assert r.exit_code == 0, r.output
    stub, statement = folder / f"{ex.module}.py", folder / f"{ex.module}.statement.md"
    assert stub.read_text() == ex.stub and statement.read_text() == ex.statement
    assert str(statement) in r.output and "ends at 2030-05-06 14:30 UTC" in r.output
    assert "10%" in r.output
    # a second start is refused while this one runs, and nothing is overwritten
    r = run(app, ["interview", "start", "--collection", "Jane Street", "--minutes", "30", str(tmp_path / "b")])
    assert r.exit_code == 2 and "under way" in r.output and not (tmp_path / "b").exists()

    r = run(app, ["interview", "status"])
    assert r.exit_code == 0 and "30:00 left" in r.output and ex.slug in r.output, r.output

    local["t"] = T0 + timedelta(minutes=2)
    r = run(app, ["hint", ex.slug, "--yes"])
    assert r.exit_code == 0 and "costs 10%" in r.output and "hint 1/" in r.output, r.output

    local["t"] = T0 + timedelta(minutes=3)
    r = run(app, ["grade", ex.slug, str(stub), "--public"])          # the stub fails its examples
    assert r.exit_code == 1, r.output
    local["t"] = T0 + timedelta(minutes=8)
    ref = (paths.reference_dir() / f"{ex.module}.py").read_text()
    stub.write_text(ref)
    r = run(app, ["grade", ex.slug, str(stub)])                       # a real grading of the reference
    assert r.exit_code == 0, r.output

    local["t"] = T0 + timedelta(minutes=10)                           # the interviewer's follow-up
    qid, right = a_right_answer(ex)
    r = run(app, ["followups", ex.slug, "--answer", qid, right])
    assert r.exit_code == 0 and "this mock interview" in r.output, r.output
    assert "recorded" in r.output and "right" not in r.output and "Sources" not in r.output   # held back

    local["t"] = T0 + timedelta(minutes=12)
    r = run(app, ["interview", "status"])
    assert "18:00 left" in r.output and re.search(rf"{ex.slug}\W+calculate\W+yes\W+2\W+1\W", r.output), r.output

    local["t"] = T0 + timedelta(minutes=31)                           # the time ran out
    r = run(app, ["interview", "finish"])
    assert r.exit_code == 0, r.output
    assert "time ran out" in r.output and "8.0 min" in r.output
    # the score the report prints: one hint, a pass, one of the follow-ups answered right
    n = len(followups.load(ex.folder))
    expected = 100 * (1 - interview.HINT_PENALTY) * (interview.PASS_BASE + (1 - interview.PASS_BASE) / n)
    assert f"score {expected:.1f} / 100" in r.output and interview.SCORE_RULE[:40] in r.output, r.output
    with db.session_scope(get_settings().db_url) as s:
        (sess,) = interview.history(s, LOCAL_USER_ID)
        rep = interview.report(s, sess)
        assert rep.items[0].attempts == 2 and rep.items[0].submits == 1 and rep.score == pytest.approx(expected)
        assert [f.question_id for f in rep.items[0].followups if f.answered and f.correct] == [qid]

    r = run(app, ["interview", "history"])
    assert r.exit_code == 0, r.output
    assert re.search(rf"\b{sess.id}\b.*30.*1/1.*{expected:.1f}", r.output), r.output
    r = run(app, ["interview", "status"])
    assert "no mock interview under way" in r.output
    r = run(app, ["interview", "report", str(sess.id)])
    assert r.exit_code == 0 and f"score {expected:.1f}" in r.output
    r = run(app, ["interview", "report", "999"])
    assert r.exit_code == 2 and "no mock interview 999" in r.output


def test_start_refuses_bad_input_before_writing_anything(local, tmp_path):
    run = CliRunner().invoke
    folder = tmp_path / "x"
    r = run(app, ["interview", "start", str(folder)])
    assert r.exit_code == 2 and "--collection" in r.output
    r = run(app, ["interview", "start", "--collection", "Acme", str(folder)])
    assert r.exit_code == 2 and "unknown scope" in r.output
    r = run(app, ["interview", "start", "--track", "roofline", "--minutes", "45", str(folder)])
    assert r.exit_code == 2 and "45-minute" in r.output
    r = run(app, ["interview", "start", "--track", "serving", "--minutes", "20", str(folder)])
    assert r.exit_code == 2 and "30, 45, 60, 90" in r.output
    assert not folder.exists()
    r = run(app, ["interview", "finish"])
    assert r.exit_code == 2 and "no mock interview to finish" in r.output


def test_a_hint_in_a_session_asks_first_and_grade_withholds_counterexamples(local, tmp_path):
    run = CliRunner().invoke
    seed, ex = calculate_seed()
    r = run(app, ["interview", "start", "--track", "roofline", "--minutes", "30", "--seed", str(seed), str(tmp_path / "iv")])
    assert r.exit_code == 0, r.output
    assert cli_interview.withhold_counterexample(ex.slug) and not cli_interview.withhold_counterexample("sampling-order")
    r = run(app, ["hint", ex.slug], input="n\n")
    assert r.exit_code == 1 and "costs 10%" in r.output and "hint 1/" not in r.output
    with db.session_scope(get_settings().db_url) as s:
        sess = interview.active_session(s, LOCAL_USER_ID)
        assert interview.session_items(s, sess)[0].hints_used == 0
    r = run(app, ["hint", ex.slug], input="y\n")
    assert r.exit_code == 0 and "hint 1/" in r.output
    r = run(app, ["hint", "sampling-order", "--yes"])                  # outside the session: no cost, no question
    assert r.exit_code == 0 and "costs" not in r.output and "hint 1/" in r.output
    with db.session_scope(get_settings().db_url) as s:
        assert interview.session_items(s, sess)[0].hints_used == 1
    local["t"] = T0 + timedelta(minutes=30)
    assert not cli_interview.withhold_counterexample(ex.slug)         # the session is over
