"""Scheduled mock interviews for a cohort (issue 18, "For a cohort"): scheduling and its checks,
the shared and per-student draws, the window (a late start ends when it closes), once per
student, review after the window, the pseudonymous leaderboard (off by default, opt-in, score
then time), and the interview columns of the grade CSV. SQLite and an injected clock; the
judge is not involved (graded submissions are written as the worker would leave them)."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta, timezone

import pytest
from sqlmodel import select

from inferprep import cohort_interviews as ci_mod
from inferprep import cohorts, db, grades_export, interview
from inferprep.interview_models import CohortInterview, InterviewSession
from inferprep.models import JobState, Submission, SubmissionKind, User
from inferprep.services import BadRequest, Locked, NotFound
from inferprep.settings import Settings

T0 = datetime(2030, 3, 2, 9, 0, tzinfo=timezone.utc)
JS = "Jane Street"


@pytest.fixture
def world(tmp_path):
    url = Settings(data_dir=tmp_path).db_url
    db.prepare(url)
    with db.session_scope(url) as s:
        users = {}
        for name in ("tina", "alice", "bob", "carol", "olga", "dave"):
            u = User(name=name.title(), email=f"{name}@x.org", is_instructor=name in ("tina", "olga"))
            s.add(u)
            s.commit()
            s.refresh(u)
            users[name] = u.id
        a = cohorts.create_cohort(s, "Cohort A", instructor_id=users["tina"])
        b = cohorts.create_cohort(s, "Cohort B", instructor_id=users["olga"])
        for name in ("alice", "bob", "carol"):
            cohorts.add_member(s, a.id, users[name], "student")
        cohorts.add_member(s, b.id, users["dave"], "student")
        yield s, users, a.id, b.id


def sched(s, cohort_id, **kw) -> CohortInterview:
    args = dict(title="Week 3 mock", scope_kind="collection", scope=JS, minutes=60, opens_at=T0,
                closes_at=T0 + timedelta(hours=3), draw="same", seed=1234, now=T0 - timedelta(days=1))
    args.update(kw)
    return ci_mod.schedule(s, cohort_id, **args)


def slugs(s, session) -> list[str]:
    return [it.slug for it in interview.session_items(s, session)]


def submit(s, user_id, slug, at, passed=True):
    sub = Submission(user_id=user_id, slug=slug, kind=SubmissionKind.SUBMIT.value, code="# x\n",
                     state=JobState.DONE.value, passed=passed, status="passed" if passed else "wrong_answer",
                     score=1.0 if passed else 0.0, created_at=at, finished_at=at)
    s.add(sub)
    s.commit()


def test_schedule_checks_its_input(world):
    s, users, a, _ = world
    for kw, words in [({"minutes": 50}, "30, 45, 60, 90"), ({"title": "  "}, "title"),
                      ({"closes_at": T0 + timedelta(minutes=59)}, "shorter than"),
                      ({"closes_at": T0 - timedelta(hours=1)}, "shorter than"),
                      ({"now": T0 + timedelta(hours=4)}, "has passed"),
                      ({"draw": "random"}, "same, per_student"),
                      ({"scope": "Acme"}, "no scope"), ({"scope_kind": "track", "scope": JS}, "no scope")]:
        with pytest.raises(BadRequest, match=words):
            sched(s, a, **kw)
    assert ci_mod.for_cohort(s, a) == []          # nothing half-made
    ci = sched(s, a, closes_at=T0 + timedelta(minutes=60))   # exactly the length: fine
    assert (ci.review_after, ci.leaderboard, ci.draw) == (True, False, "same")   # leaderboard off by default
    assert [x.id for x in ci_mod.for_cohort(s, a)] == [ci.id]


def test_same_draw_gives_everyone_the_same_set_even_a_recent_pass(world):
    s, users, a, _ = world
    ci = sched(s, a)
    first = ci_mod.start(s, users["alice"], ci.id, now=T0 + timedelta(minutes=5))
    drawn = slugs(s, first)
    # bob passed alice's first exercise yesterday: the shared draw ignores it
    submit(s, users["bob"], drawn[0], T0 - timedelta(days=1))
    second = ci_mod.start(s, users["bob"], ci.id, now=T0 + timedelta(minutes=6))
    assert slugs(s, second) == drawn and first.seed == second.seed == ci.seed
    assert first.cohort_interview_id == second.cohort_interview_id == ci.id
    assert len(drawn) == 2       # 60 minutes: an implement and a calculate


def test_per_student_draws_use_their_own_seed(world):
    s, users, a, _ = world
    ci = sched(s, a, draw="per_student", minutes=90, closes_at=T0 + timedelta(hours=2))
    seeds = {ci_mod.student_seed(ci, users[n]) for n in ("alice", "bob", "carol")}
    assert len(seeds) == 3 and ci.seed not in seeds
    assert ci_mod.student_seed(ci, users["alice"]) == ci_mod.student_seed(ci, users["alice"])   # replayable
    got = {n: ci_mod.start(s, users[n], ci.id, now=T0) for n in ("alice", "bob", "carol")}
    for n, sess in got.items():
        assert sess.seed == ci_mod.student_seed(ci, users[n])
    sets = {tuple(slugs(s, x)) for x in got.values()}
    assert len(sets) >= 2, "three per-student draws from 24 exercises all came out the same"


def test_the_window_once_per_student_and_only_members(world):
    s, users, a, b = world
    ci = sched(s, a)
    with pytest.raises(BadRequest, match="opens at"):
        ci_mod.start(s, users["alice"], ci.id, now=T0 - timedelta(seconds=1))
    with pytest.raises(BadRequest, match="closed at"):
        ci_mod.start(s, users["alice"], ci.id, now=T0 + timedelta(hours=3))
    for other in ("dave", "tina", "olga"):        # another cohort's student; instructors do not take it
        with pytest.raises(NotFound):
            ci_mod.start(s, users[other], ci.id, now=T0)
    with pytest.raises(NotFound):
        ci_mod.start(s, users["alice"], 99999, now=T0)
    sess = ci_mod.start(s, users["alice"], ci.id, now=T0 + timedelta(minutes=10))
    assert ci_mod.state(ci, sess, T0 + timedelta(minutes=11)) == "running"
    interview.finish_session(s, users["alice"], sess.id, now=T0 + timedelta(minutes=20))
    with pytest.raises(BadRequest, match="already started"):
        ci_mod.start(s, users["alice"], ci.id, now=T0 + timedelta(minutes=30))
    assert ci_mod.state(ci, sess, T0 + timedelta(minutes=30)) == "done"
    assert ci_mod.state(ci, None, T0 + timedelta(minutes=30)) == "open"
    assert ci_mod.state(ci, None, T0 - timedelta(minutes=1)) == "upcoming"
    assert ci_mod.state(ci, sess, T0 + timedelta(hours=3)) == "closed"


def test_a_late_start_ends_when_the_window_closes(world):
    s, users, a, _ = world
    ci = sched(s, a, minutes=60, closes_at=T0 + timedelta(minutes=90))
    early = ci_mod.start(s, users["alice"], ci.id, now=T0)
    late = ci_mod.start(s, users["bob"], ci.id, now=T0 + timedelta(minutes=70))
    assert cohorts.aware(early.ends_at) == T0 + timedelta(minutes=60)
    assert cohorts.aware(late.ends_at) == T0 + timedelta(minutes=90)
    assert interview.remaining_seconds(late, T0 + timedelta(minutes=70)) == 20 * 60


def test_review_only_after_the_window_and_when_allowed(world):
    s, users, a, _ = world
    ci = sched(s, a)
    sess = ci_mod.start(s, users["alice"], ci.id, now=T0)
    interview.finish_session(s, users["alice"], sess.id, now=T0 + timedelta(minutes=30))
    with pytest.raises(Locked, match="when the window closes"):
        ci_mod.student_report(s, users["alice"], ci.id, now=T0 + timedelta(minutes=31))
    after = T0 + timedelta(hours=3)
    assert ci_mod.student_report(s, users["alice"], ci.id, now=after).session_id == sess.id
    ci_mod.set_options(s, ci, review_after=False)
    with pytest.raises(Locked, match="keep the reports"):
        ci_mod.student_report(s, users["alice"], ci.id, now=after)
    with pytest.raises(NotFound):        # bob did not take it
        ci_mod.student_report(s, users["bob"], ci.id, now=after)
    with pytest.raises(NotFound):        # another cohort's student
        ci_mod.student_report(s, users["dave"], ci.id, now=after)


def _take(s, user_id, ci, start, passed_first: bool, finish_after_min: float):
    sess = ci_mod.start(s, user_id, ci.id, now=start)
    first = slugs(s, sess)[0]
    submit(s, user_id, first, start + timedelta(minutes=1), passed=passed_first)
    interview.finish_session(s, user_id, sess.id, now=start + timedelta(minutes=finish_after_min))
    return sess


def test_results_and_the_csv_columns(world):
    s, users, a, _ = world
    ci = sched(s, a, title="=HYPERLINK(\"x\")")         # an instructor's title reaches the CSV header
    sess = _take(s, users["alice"], ci, T0, True, 20)
    ci_mod.start(s, users["bob"], ci.id, now=T0 + timedelta(minutes=10))
    now = T0 + timedelta(minutes=30)
    res = ci_mod.results(s, ci, now)
    alice, bob, carol = (res.rows[users[n]] for n in ("alice", "bob", "carol"))
    first = slugs(s, sess)
    assert alice.status == "finished" and alice.seconds == 20 * 60
    assert alice.items == [(first[0], True), (first[1], False)]
    assert alice.score == interview.report(s, sess, now).score and alice.score > 0
    assert bob.status == "running" and bob.seconds is None and bob.score == 0
    assert carol.status == "not started" and carol.score is None and res.positions == 2

    interview.set_clock(lambda: now)
    try:
        text = grades_export.export_csv(s, s.get(cohorts.Cohort, a))
    finally:
        interview.set_clock(None)
    rows = list(csv.reader(io.StringIO(text)))
    head = rows[0]
    assert head[-4:] == ["'=HYPERLINK(\"x\"): score", "'=HYPERLINK(\"x\"): finished",
                         "'=HYPERLINK(\"x\"): exercise 1", "'=HYPERLINK(\"x\"): exercise 2"]
    by_email = {r[0]: r for r in rows[1:]}
    assert by_email["alice@x.org"][-4:] == [f"{alice.score:.1f}", "yes", f"{first[0]} passed", f"{first[1]} failed"]
    assert by_email["bob@x.org"][-4:-2] == ["0.0", "no"]
    assert by_email["carol@x.org"][-4:] == ["", "no", "", ""]


def test_leaderboard_is_opt_in_pseudonymous_and_ranked(world):
    s, users, a, _ = world
    ci = sched(s, a)
    with pytest.raises(BadRequest, match="off"):
        ci_mod.opt_in(s, users["alice"], ci.id)
    ci_mod.set_options(s, ci, leaderboard=True)
    _take(s, users["alice"], ci, T0, True, 40)            # passes, slower
    _take(s, users["bob"], ci, T0, True, 25)              # passes, faster
    _take(s, users["carol"], ci, T0, False, 10)           # fails, fastest
    now = T0 + timedelta(hours=1)
    assert ci_mod.leaderboard(s, ci, now=now) == []      # nobody opted in
    entries = {n: ci_mod.opt_in(s, users[n], ci.id) for n in ("alice", "bob", "carol")}
    assert ci_mod.opt_in(s, users["alice"], ci.id).alias == entries["alice"].alias     # idempotent
    for n, e in entries.items():
        assert e.board == f"interview:{ci.id}"
        assert n not in e.alias.casefold() and "@" not in e.alias
        color, animal, number = e.alias.split(" ")
        assert color in ci_mod.COLORS and animal in ci_mod.ANIMALS and 10 <= int(number) <= 99
    board = ci_mod.leaderboard(s, ci, viewer_id=users["bob"], now=now)
    assert [x.alias for x in board] == [entries[n].alias for n in ("bob", "alice", "carol")]
    assert [x.rank for x in board] == [1, 2, 3] and [x.mine for x in board] == [True, False, False]
    assert board[0].score == board[1].score > board[2].score and board[0].seconds < board[1].seconds
    ci_mod.opt_out(s, users["bob"], ci.id)
    assert [x.alias for x in ci_mod.leaderboard(s, ci, now=now)] == [entries["alice"].alias, entries["carol"].alias]
    with pytest.raises(NotFound):
        ci_mod.opt_in(s, users["dave"], ci.id)
    ci_mod.set_options(s, ci, leaderboard=False)
    assert ci_mod.leaderboard(s, ci, now=now) == []


def test_a_pseudonym_is_never_the_name(monkeypatch):
    picks = iter(["Blue", "Falcon", "Blue", "Falcon", "Red", "Owl"])
    monkeypatch.setattr(ci_mod.secrets, "choice", lambda seq: next(picks))
    monkeypatch.setattr(ci_mod.secrets, "randbelow", lambda n: 7)
    assert ci_mod.new_alias(set(), ("blue falcon 17", "b@x.org")) == "Red Owl 17"
    picks = iter(["Blue", "Falcon", "Red", "Owl"])
    assert ci_mod.new_alias({"Blue Falcon 17"}) == "Red Owl 17"


def test_student_views(world):
    s, users, a, b = world
    past = sched(s, a, title="Past", opens_at=T0 - timedelta(days=2), closes_at=T0 - timedelta(days=1),
                 now=T0 - timedelta(days=3))
    now_ci = sched(s, a, title="Now")
    sched(s, b, title="Other cohort")
    views = ci_mod.student_views(s, users["alice"], T0 + timedelta(minutes=1))
    assert [(v.ci.title, v.state) for v in views] == [("Past", "closed"), ("Now", "open")]
    assert [v.ci.id for v in ci_mod.student_views(s, users["alice"], T0, current_only=True)] == [now_ci.id]
    assert ci_mod.student_views(s, users["tina"], T0) == []
    assert past.id != now_ci.id
    assert s.exec(select(InterviewSession)).all() == []   # looking starts nothing


def test_cli_schedules_and_lists(tmp_path):
    from typer.testing import CliRunner
    from inferprep.cli import app as cli
    url = Settings(data_dir=tmp_path).db_url
    db.prepare(url)
    with db.session_scope(url) as s:
        cohorts.create_cohort(s, "Spring")
    run = CliRunner().invoke
    base = ["cohort", "interview", "schedule", "Spring", "--database-url", url, "--opens", "2099-01-01T10:00"]
    r = run(cli, [*base, "--closes", "2099-01-01T10:30", "--collection", JS, "--minutes", "45"])
    assert r.exit_code == 2 and "shorter than" in r.output, r.output
    r = run(cli, [*base, "--closes", "2099-01-01T12:00", "--collection", JS, "--track", "serving"])
    assert r.exit_code == 2 and "one of --collection or --track" in r.output, r.output
    r = run(cli, [*base, "--closes", "2099-01-01T12:00", "--track", "serving", "--minutes", "30", "--title", "Dry run",
                  "--draw", "per_student", "--leaderboard"])
    assert r.exit_code == 0 and "scheduled interview #1 'Dry run'" in r.output, r.output
    with db.session_scope(url) as s:
        (ci,) = ci_mod.for_cohort(s, 1)
        assert (ci.scope_kind, ci.scope, ci.minutes, ci.draw, ci.leaderboard, ci.review_after) == \
            ("track", "serving", 30, "per_student", True, True)
    r = run(cli, ["cohort", "interview", "list", "Spring", "--database-url", url])
    assert r.exit_code == 0 and "#1  Dry run  30 min  serving" in r.output and "0/0 finished" in r.output, r.output
