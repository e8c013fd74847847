"""A hostile user against mock interviews and follow-ups at the service layer (issue 18, red team):
two sessions started at once, a chosen seed against the 14-day rule, cancelled and scratch jobs,
finishing twice, follow-ups before a pass / with a pass made before the session / twice, an order
question whose shown order would give its answer away, and CLI flags out of the database's range.
Gradings are recorded rows (as the worker leaves them); the clock is injected."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlmodel import select
from typer.testing import CliRunner

from inferprep import catalog, db, followups, interview, services
from inferprep.interview_models import InterviewSession
from inferprep.models import LOCAL_USER_ID, JobState, Submission, SubmissionKind, User

T0 = datetime(2030, 3, 4, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    box = {"t": T0}
    interview.set_clock(lambda: box["t"])
    yield box
    interview.set_clock(None)


@pytest.fixture
def url(tmp_path):
    u = f"sqlite:///{tmp_path / 'iv.db'}"
    db.prepare(u)
    yield u
    eng = db._engines.pop(u, None)
    if eng is not None:
        eng.dispose()


@pytest.fixture
def bob(url) -> int:
    with db.session_scope(url) as s:
        u = User(name="bob")
        s.add(u)
        s.commit()
        return u.id


def graded(s, user: int, slug: str, at: datetime, *, kind=SubmissionKind.SUBMIT.value, passed=True,
           state=JobState.DONE.value) -> Submission:
    sub = Submission(user_id=user, slug=slug, kind=kind, code="# x\n", state=state, passed=passed,
                     status="passed" if passed else "wrong_answer", score=1.0 if passed else 0.0, created_at=at)
    s.add(sub)
    s.commit()
    return sub


def with_followups() -> catalog.Exercise:
    """A medium exercise (a 30-minute draw can give it) whose first follow-up is single choice."""
    return next(ex for ex in services.catalog_exercises()
                if not ex.unavailable and ex.meta.difficulty == catalog.Difficulty.MEDIUM and followups.load(ex.folder)
                and isinstance(followups.load(ex.folder)[0], followups.SingleChoice))


def test_two_sessions_started_at_once_leave_one_active(url, bob, clock, monkeypatch):
    """Both requests pass the 'no active session' check before either inserts (the draw waits for
    the other thread): only one session may result."""
    barrier = threading.Barrier(2)
    real_draw = interview.draw

    def slow_draw(*a, **kw):
        try:
            barrier.wait(timeout=3)    # without serialization both threads meet here
        except threading.BrokenBarrierError:
            pass
        return real_draw(*a, **kw)

    monkeypatch.setattr(interview, "draw", slow_draw)
    results: list = []

    def go():
        with db.session_scope(url) as s:
            try:
                results.append(interview.start_session(s, bob, scope_kind="track", scope="decoding", minutes=30,
                                                       seed=1, now=T0).id)
            except services.BadRequest as e:
                results.append(e)

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 2
    assert sum(isinstance(r, int) for r in results) == 1, results
    assert any(isinstance(r, services.BadRequest) and "already" in str(r) for r in results)
    with db.session_scope(url) as s:
        rows = s.exec(select(InterviewSession).where(InterviewSession.user_id == bob)).all()
    assert len(rows) == 1


def test_a_chosen_seed_still_avoids_an_exercise_passed_in_the_last_14_days(url, bob, clock):
    """Replaying a seed that drew an exercise the user has since passed draws another one."""
    with db.session_scope(url) as s:
        first = interview.start_session(s, bob, scope_kind="track", scope="decoding", minutes=30, seed=5, now=T0)
        (slug,) = [i.slug for i in interview.session_items(s, first)]
        graded(s, bob, slug, T0 + timedelta(minutes=3))
        interview.finish_session(s, bob, first.id, now=T0 + timedelta(minutes=4))
        again = interview.start_session(s, bob, scope_kind="track", scope="decoding", minutes=30, seed=5,
                                        now=T0 + timedelta(days=1))
        assert [i.slug for i in interview.session_items(s, again)] != [slug]
        interview.finish_session(s, bob, again.id, now=T0 + timedelta(days=1, minutes=1))
        later = interview.start_session(s, bob, scope_kind="track", scope="decoding", minutes=30, seed=5,
                                        now=T0 + timedelta(days=15))
        assert [i.slug for i in interview.session_items(s, later)] == [slug]   # 14 days on: allowed again


def test_cancelled_scratch_late_and_failed_jobs_do_not_count_and_finishing_twice_changes_nothing(url, bob, clock):
    with db.session_scope(url) as s:
        sess = interview.start_session(s, bob, scope_kind="track", scope="decoding", minutes=30, seed=3, now=T0)
        (slug,) = [i.slug for i in interview.session_items(s, sess)]
        graded(s, bob, slug, T0 + timedelta(minutes=1), state=JobState.CANCELLED.value)
        graded(s, bob, slug, T0 + timedelta(minutes=2), kind=SubmissionKind.SCRATCH.value)
        graded(s, bob, slug, T0 + timedelta(minutes=3), passed=False)
        graded(s, bob, slug, T0 - timedelta(minutes=1))                   # before the start
        graded(s, bob, slug, T0 + timedelta(minutes=5), state=JobState.QUEUED.value)
        rep = interview.finish_session(s, bob, sess.id, now=T0 + timedelta(minutes=10))
        assert rep.score == 0 and not rep.items[0].passed and rep.items[0].attempts == 1
        graded(s, bob, slug, T0 + timedelta(minutes=11))                  # after the end
        again = interview.finish_session(s, bob, sess.id, now=T0 + timedelta(minutes=20))
        assert again == rep
        s.refresh(sess)
        assert interview._aware(sess.finished_at) == T0 + timedelta(minutes=10)


def test_follow_ups_need_a_pass_made_in_the_session_and_the_first_answer_stands(url, bob, clock):
    ex = with_followups()
    q = followups.load(ex.folder)[0]
    with db.session_scope(url) as s:
        services.ensure_exercise_row(s, ex)
        s.commit()
        with pytest.raises(services.Locked):
            interview.followup_context(s, bob, ex.slug, now=T0)            # no pass at all
        graded(s, bob, ex.slug, T0 - timedelta(days=20))                   # passed long before
        assert interview.followup_context(s, bob, ex.slug, now=T0) == followups.PRACTICE
        # a session that drew it: the old pass does not open its questions in the session
        sess = None
        for seed in range(400):
            cand = interview.draw(interview.candidates("track", ex.meta.track.value), 30, seed, set())
            if cand[0][0] == ex.slug:
                sess = interview.start_session(s, bob, scope_kind="track", scope=ex.meta.track.value, minutes=30,
                                               seed=seed, avoid_recent=False, now=T0)
                break
        assert sess is not None, "no seed below 400 draws it"
        with pytest.raises(services.Locked):
            interview.followup_context(s, bob, ex.slug, now=T0 + timedelta(minutes=1))
        graded(s, bob, ex.slug, T0 + timedelta(minutes=2))
        ctx = interview.followup_context(s, bob, ex.slug, now=T0 + timedelta(minutes=3))
        assert ctx == followups.interview_context(sess.id)
        wrong = (q.answer + 1) % len(q.choices)
        first = followups.record_answer(s, bob, ex.slug, ex.folder, q.id, wrong, context=ctx)
        second = followups.record_answer(s, bob, ex.slug, ex.folder, q.id, q.answer, context=ctx)
        assert second.id == first.id and not second.correct


def test_an_order_question_has_at_least_three_items(tmp_path):
    """With two items the shown order (never the answer) would be the reverse of the answer."""
    q = {"id": "knobs", "type": "order", "prompt": "Order these two knobs please.", "items": ["a", "b"],
         "answer": [1, 0], "explanation": "Because it is so.", "sources": ["https://docs.vllm.ai/en/latest/"]}
    three = {**q, "items": ["a", "b", "c"], "answer": [2, 0, 1]}
    single = {"id": "s", "type": "single", "prompt": "Which one is it?", "choices": ["x", "y"], "answer": 0,
              "explanation": "Because it is so.", "sources": ["https://docs.vllm.ai/en/latest/"]}
    with pytest.raises(Exception):
        followups.FollowupFile.model_validate({"question": [q, {**single, "id": "s1"}, {**single, "id": "s2"}]})
    followups.FollowupFile.model_validate({"question": [three, {**single, "id": "s1"}, {**single, "id": "s2"}]})
    for user in range(50):
        assert followups.display_order(user, "x", followups.Ordering.model_validate(three)) != three["answer"]


@pytest.mark.parametrize("args", [["--seed", str(10**30)], ["--seed", str(-(10**30))], ["--minutes", "abc"],
                                  ["--minutes", str(10**30)], ["--track", "nope"]])
def test_cli_start_refuses_out_of_range_flags_with_exit_2(tmp_path, monkeypatch, args):
    from inferprep.cli import app
    monkeypatch.setenv("INFERPREP_DATA_DIR", str(tmp_path / "data"))
    if "--track" not in args:
        args = ["--track", "decoding", *args]
    r = CliRunner().invoke(app, ["interview", "start", *args, str(tmp_path / "dir")])
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output


@pytest.mark.parametrize("cmd", [["interview", "report", str(10**30)], ["interview", "report", "-1"],
                                 ["interview", "report", "x"]])
def test_cli_report_of_an_impossible_id_exits_2(tmp_path, monkeypatch, cmd):
    from inferprep.cli import app
    monkeypatch.setenv("INFERPREP_DATA_DIR", str(tmp_path / "data"))
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)


def test_a_chosen_seed_is_marked_as_a_replay(url, bob, clock):
    """A user may replay a draw by its seed (on purpose), but such a session is not a fresh
    interview: the session, its report and the history say so; a drawn seed is not a replay."""
    with db.session_scope(url) as s:
        fresh = interview.start_session(s, bob, scope_kind="track", scope="serving", minutes=30)
        interview.finish_session(s, bob, fresh.id)
        again = interview.start_session(s, bob, scope_kind="track", scope="serving", minutes=30,
                                        seed=fresh.seed, replay=True)
        rep = interview.finish_session(s, bob, again.id)
        assert not fresh.replay and again.replay and rep.replay and rep.seed == fresh.seed
        assert [i.slug for i in rep.items] == [i.slug for i in interview.report(s, fresh).items]
