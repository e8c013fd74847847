"""Mock interviews (issue 18), the service layer: the draw rule for each length, the 14-day rule,
the widening, determinism and replay; a session's start, attempts, hints, follow-ups, report and
score; the time running out on an advanced clock (no waiting); a restart mid-session; the
editorial lock during a session and the opening after it; other users' sessions are not theirs
to read; the worker withholds the counterexample of a submission made within a session.
Gradings here are recorded verdicts (``services.record_finished``); the CLI test grades for real."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlmodel import select

from inferprep import catalog, db, followups, interview, services, unlock
from inferprep.catalog import Difficulty, Kind
from inferprep.interview_models import CohortInterview, InterviewSession
from inferprep.models import LOCAL_USER_ID, Cohort, JobState, Submission, User
from inferprep.verdict import INPUT_CHECKS, CaseResult, Status, Verdict
from inferprep.worker import Worker

T0 = datetime(2030, 3, 4, 9, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self, t: datetime):
        self.t = t

    def __call__(self) -> datetime:
        return self.t

    def advance(self, **kw) -> None:
        self.t += timedelta(**kw)


@pytest.fixture
def clock():
    c = Clock(T0)
    interview.set_clock(c)
    yield c
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


# -- the draw -------------------------------------------------------------------------------------
def fake(slug: str, kind: Kind, difficulty: Difficulty, requires=()) -> catalog.Exercise:
    meta = catalog.ExerciseMeta(slug=slug, title=f"Exercise {slug}", track="serving", difficulty=difficulty,
                                kind=kind, entrypoints=["f"], requires=list(requires))
    return catalog.Exercise(meta, Path("/nonexistent") / slug)


def pool() -> list[catalog.Exercise]:
    out = []
    for kind in Kind:
        for d in Difficulty:
            for i in range(3):
                out.append(fake(f"{kind.value}-{d.value}-{i}", kind, d))
    return out


def metas(drawn, exs):
    by = {e.slug: e.meta for e in exs}
    return [(role, by[slug].kind, by[slug].difficulty) for slug, role in drawn]


@pytest.mark.parametrize("seed", range(25))
def test_the_draw_follows_the_rule_of_each_length(seed):
    exs = pool()
    m30 = metas(interview.draw(exs, 30, seed, set()), exs)
    assert len(m30) == 1 and m30[0][2] == Difficulty.MEDIUM
    assert m30[0][0] == interview.ROLE_OF_KIND[m30[0][1]]
    m45 = metas(interview.draw(exs, 45, seed, set()), exs)
    assert [(r, k) for r, k, _ in m45] == [("implement", Kind.IMPLEMENT), ("calculate", Kind.CALCULATE)]
    assert m45[0][2] in (Difficulty.EASY, Difficulty.MEDIUM)
    m60 = metas(interview.draw(exs, 60, seed, set()), exs)
    assert [(r, k) for r, k, _ in m60] == [("implement", Kind.IMPLEMENT), ("calculate", Kind.CALCULATE)]
    assert m60[0][2] in (Difficulty.MEDIUM, Difficulty.HARD)
    d90 = interview.draw(exs, 90, seed, set())
    m90 = metas(d90, exs)
    assert [(r, k) for r, k, _ in m90] == [("implement", Kind.IMPLEMENT)] * 2 + [("calculate", Kind.CALCULATE)]
    assert m90[0][2] == Difficulty.HARD and len({slug for slug, _ in d90}) == 3


def test_the_draw_is_deterministic_and_seeded():
    exs = pool()
    shuffled = exs[:]
    random.Random(1).shuffle(shuffled)
    for m in interview.LENGTHS:
        assert interview.draw(exs, m, 42, {"implement-hard-0"}) == interview.draw(shuffled, m, 42, {"implement-hard-0"})
    assert len({tuple(interview.draw(exs, 90, seed, set())) for seed in range(20)}) > 5
    with pytest.raises(ValueError, match="not 50"):
        interview.draw(exs, 50, 1, set())


def test_recently_passed_exercises_are_drawn_only_when_nothing_else_fits():
    exs = [fake("calc-a", Kind.CALCULATE, Difficulty.MEDIUM), fake("calc-b", Kind.CALCULATE, Difficulty.MEDIUM),
           fake("impl-a", Kind.IMPLEMENT, Difficulty.EASY)]
    for seed in range(30):
        assert interview.draw(exs, 45, seed, {"calc-a"})[1] == ("calc-b", "calculate")
    # both calculate exercises passed lately: one of them is drawn all the same (rather than widening)
    drawn = {interview.draw(exs + [fake("sim-a", Kind.SIMULATE, Difficulty.MEDIUM)], 45, seed,
                            {"calc-a", "calc-b"})[1][0] for seed in range(30)}
    assert drawn <= {"calc-a", "calc-b"} and drawn


def test_a_slot_widens_kinds_first_then_difficulty_then_fails():
    impl_easy, debug_hard = fake("impl-easy", Kind.IMPLEMENT, Difficulty.EASY), fake("dbg-hard", Kind.DEBUG, Difficulty.HARD)
    sim = fake("sim-easy", Kind.SIMULATE, Difficulty.EASY)
    # 60: implement (medium|hard): no implement of those, a hard debug fits before an easy implement
    for seed in range(10):
        assert interview.draw([impl_easy, debug_hard, sim], 60, seed, set()) == [("dbg-hard", "implement"),
                                                                                ("sim-easy", "calculate")]
    assert interview.draw([impl_easy, sim], 60, 3, set()) == [("impl-easy", "implement"), ("sim-easy", "calculate")]
    with pytest.raises(ValueError, match="calculate slot of a 45-minute"):
        interview.draw([impl_easy], 45, 0, set())
    # 30: any kind, medium, then any difficulty
    assert interview.draw([impl_easy], 30, 0, set()) == [("impl-easy", "implement")]


def test_unavailable_exercises_are_never_drawn(monkeypatch):
    gone = fake("needs-triton", Kind.CALCULATE, Difficulty.MEDIUM, requires=["triton"])
    ok = fake("calc-ok", Kind.CALCULATE, Difficulty.EASY)
    monkeypatch.setattr(catalog, "missing_extras", lambda req: list(req))
    assert all(interview.draw([gone, ok], 30, seed, set()) == [("calc-ok", "calculate")] for seed in range(10))


def test_every_scope_of_the_catalog_fills_the_30_minute_rule():
    for kind, scope, _ in interview.scopes():
        lengths = interview.lengths_for(kind, scope)
        assert 30 in lengths, scope
    assert interview.lengths_for("collection", "Jane Street") == list(interview.LENGTHS)
    # the roofline track has no implement or debug exercise: only the 30-minute rule fits
    assert interview.lengths_for("track", "roofline") == [30]
    with pytest.raises(services.BadRequest, match="unknown scope"):
        interview.lengths_for("collection", "Acme")


# -- sessions -------------------------------------------------------------------------------------
def verdict(slug: str, *, core_ok: bool, checks_ok: bool = True, public: bool = False,
            failing: str = "attention-B2-H4-T8") -> Verdict:
    cases = [CaseResult(name="basic-1", passed=True, status=Status.PASSED),
             CaseResult(name=failing, passed=core_ok, status=Status.PASSED if core_ok else Status.WRONG_ANSWER),
             CaseResult(name="rejects-negative-t", group=INPUT_CHECKS, passed=checks_ok,
                        status=Status.PASSED if checks_ok else Status.WRONG_ANSWER)]
    return Verdict.from_cases(slug, cases, public=public, device="cpu")


def record(s, user_id, slug, at, **kw) -> Submission:
    return services.record_finished(s, user_id, catalog.get(slug), "code\n", verdict(slug, **kw), now=at)


def test_start_then_a_second_start_and_bad_input_are_refused(url, clock, bob):
    with db.session_scope(url) as s:
        with pytest.raises(services.BadRequest, match="minutes"):
            interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Jane Street", minutes=40)
        with pytest.raises(services.BadRequest, match="unknown scope"):
            interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Acme", minutes=30)
        with pytest.raises(services.BadRequest, match="roofline.*45-minute|45-minute"):
            interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="roofline", minutes=45)
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Jane Street", minutes=60, seed=5)
        assert interview.remaining_seconds(sess) == 3600 and sess.ends_at == T0 + timedelta(minutes=60)
        with pytest.raises(services.BadRequest, match="already have a mock interview"):
            interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="serving", minutes=30)
        items = interview.session_items(s, sess)
        assert [(i.slug, i.role) for i in items] == interview.replay(s, sess)
        assert [i.role for i in items] == ["implement", "calculate"]
        # another user: their own session is independent; ours is not theirs to read
        assert interview.active_session(s, bob) is None
        with pytest.raises(services.NotFound):
            interview.get_session(s, bob, sess.id)
        with pytest.raises(services.NotFound):
            interview.finish_session(s, bob, sess.id)
        assert interview.history(s, bob) == []
        assert interview.get_session(s, LOCAL_USER_ID, sess.id).id == sess.id


def test_the_14_day_rule_reads_the_users_passes(url, clock):
    with db.session_scope(url) as s:
        # every medium exercise of the serving track but one passed 3 days ago; one 20 days ago
        meds = [e.slug for e in interview.candidates("track", "serving") if e.meta.difficulty == Difficulty.MEDIUM]
        assert len(meds) >= 3
        for slug in meds[:-2]:
            record(s, LOCAL_USER_ID, slug, T0 - timedelta(days=3), core_ok=True)
        record(s, LOCAL_USER_ID, meds[-2], T0 - timedelta(days=20), core_ok=True)
        assert interview.recently_passed(s, LOCAL_USER_ID) == set(meds[:-2])
        drawn = set()
        for seed in range(12):
            sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="serving", minutes=30, seed=seed)
            drawn.add(interview.session_items(s, sess)[0].slug)
            assert [(i.slug, i.role) for i in interview.session_items(s, sess)] == interview.replay(s, sess)
            interview.finish_session(s, LOCAL_USER_ID, sess.id)
        assert drawn <= {meds[-2], meds[-1]} and len(drawn) == 2


def test_the_report_attempts_hints_followups_and_the_score(url, clock, monkeypatch):
    with db.session_scope(url) as s:
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Jane Street", minutes=90, seed=11)
        a, b, c = interview.session_items(s, sess)
        assert (a.role, b.role, c.role) == ("implement", "implement", "calculate")
        assert catalog.get(a.slug).meta.difficulty == Difficulty.HARD and a.points == interview.POINTS[Difficulty.HARD]
        # three follow-ups on the calculate exercise (none on the others): one right, one wrong, one unanswered
        qs = [followups.SingleChoice(id=f"q{i}", type="single", prompt=f"Question number {i}?",
                                     explanation="Because it is so.", sources=["https://example.org"],
                                     choices=["yes", "no"], answer=0) for i in range(3)]
        # only c has follow-ups here (whatever the shipped exercises carry), so the score below is exact
        monkeypatch.setattr(followups, "load", lambda d: qs if Path(d).name == c.slug else [])
        ctx = followups.interview_context(sess.id)
        ex_c = catalog.get(c.slug)
        followups.record_answer(s, LOCAL_USER_ID, c.slug, ex_c.folder, "q0", 0, context=ctx)
        followups.record_answer(s, LOCAL_USER_ID, c.slug, ex_c.folder, "q1", 1, context=ctx)
        followups.record_answer(s, LOCAL_USER_ID, c.slug, ex_c.folder, "q2", 0, context="practice")   # not this session's

        record(s, LOCAL_USER_ID, a.slug, T0 - timedelta(minutes=1), core_ok=True)           # before the start
        record(s, LOCAL_USER_ID, a.slug, T0 + timedelta(minutes=2), core_ok=False, public=True)
        # core cases pass, an input check fails: a pass
        record(s, LOCAL_USER_ID, a.slug, T0 + timedelta(minutes=10), core_ok=True, checks_ok=False)
        ex_a = catalog.get(a.slug)
        assert ex_a.meta.hints
        clock.advance(minutes=4)
        assert interview.use_hint(s, LOCAL_USER_ID, ex_a) == 1
        # b: one failing submit, and a cancelled one that counts as no attempt
        record(s, LOCAL_USER_ID, b.slug, T0 + timedelta(minutes=30), core_ok=False, failing="shard positions: N=4, p=2")
        gone = record(s, LOCAL_USER_ID, b.slug, T0 + timedelta(minutes=31), core_ok=True)
        gone.state = JobState.CANCELLED.value
        s.add(gone)
        s.commit()
        # c: a failing submit, a pass at 20 minutes, then a failing run: the last attempt's categories
        record(s, LOCAL_USER_ID, c.slug, T0 + timedelta(minutes=5), core_ok=False)
        record(s, LOCAL_USER_ID, c.slug, T0 + timedelta(minutes=20), core_ok=True)
        record(s, LOCAL_USER_ID, c.slug, T0 + timedelta(minutes=25), core_ok=False, public=True, failing="kv-bytes-fp8")

        clock.advance(minutes=40)                                           # 44 minutes in
        rep = interview.finish_session(s, LOCAL_USER_ID, sess.id)
        record(s, LOCAL_USER_ID, b.slug, T0 + timedelta(minutes=50), core_ok=True)   # after the end: no count
        assert rep.finished_by == "user" and rep.ended_at == T0 + timedelta(minutes=44)
        ra, rb, rc = rep.items
        assert (ra.passed, ra.attempts, ra.submits, ra.hints_used, ra.minutes_to_first_pass) == (True, 2, 1, 1, 10.0)
        assert ra.failing_categories == [] and ra.followups == [] and ra.followups_fraction == 1.0
        assert (rb.passed, rb.attempts, rb.earned, rb.minutes_to_first_pass) == (False, 1, 0.0, None)
        assert rb.failing_categories == ["shard positions (wrong answer)"]
        assert (rc.passed, rc.attempts, rc.submits, rc.minutes_to_first_pass) == (True, 3, 2, 20.0)
        assert rc.failing_categories == ["kv-bytes (wrong answer)"]
        assert [(f.question_id, f.answered, f.correct) for f in rc.followups] == [
            ("q0", True, True), ("q1", True, False), ("q2", False, False)]
        assert ra.earned == pytest.approx(a.points * 0.9 * 1.0)
        assert rc.earned == pytest.approx(c.points * (0.8 + 0.2 / 3))
        assert rep.score == pytest.approx(100 * (ra.earned + rc.earned) / (a.points + b.points + c.points))
        assert rep.rule == interview.SCORE_RULE and "10%" in rep.rule
        # frozen: the late pass of b changes nothing; finishing again returns the same report
        again = interview.finish_session(s, LOCAL_USER_ID, sess.id)
        assert again == rep
        row = s.get(InterviewSession, sess.id, populate_existing=True)
        assert row.score == pytest.approx(rep.score) and row.report_json
        assert [h.id for h in interview.history(s, LOCAL_USER_ID)] == [sess.id]


def test_a_hint_outside_a_session_costs_nothing(url, clock):
    with db.session_scope(url) as s:
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Jane Street", minutes=30, seed=2)
        item = interview.session_items(s, sess)[0]
        other = next(e for e in interview.candidates("track", "kernels") if e.meta.hints and e.slug != item.slug)
        interview.use_hint(s, LOCAL_USER_ID, other)
        s.refresh(item)
        assert item.hints_used == 0
        assert services.hints_shown(s, LOCAL_USER_ID, other.slug) == 1


def test_the_time_runs_out_on_the_clock(url, clock):
    with db.session_scope(url) as s:
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="serving", minutes=30, seed=3)
        slug = interview.session_items(s, sess)[0].slug
        clock.advance(minutes=29, seconds=30)
        assert interview.remaining_seconds(sess) == 30
        record(s, LOCAL_USER_ID, slug, clock.t, core_ok=True)
        clock.advance(seconds=31)
        assert interview.active_session(s, LOCAL_USER_ID) is None     # ended here, lazily
        row = s.get(InterviewSession, sess.id, populate_existing=True)
        assert row.finished_at is not None and interview._aware(row.finished_at) == T0 + timedelta(minutes=30)
        rep = interview.report(s, row)
        assert rep.finished_by == "time" and rep.items[0].passed and rep.items[0].minutes_to_first_pass == 29.5
        assert interview.remaining_seconds(row) == 0
        # a new session may start now
        interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="serving", minutes=30, seed=4)


def test_a_restart_mid_session_loses_nothing(url, clock):
    with db.session_scope(url) as s:
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Google DeepMind",
                                       minutes=45, seed=9)
        items = [(i.slug, i.role, i.points) for i in interview.session_items(s, sess)]
        ex = catalog.get(items[0][0])
        clock.advance(minutes=7)
        interview.use_hint(s, LOCAL_USER_ID, ex)
        record(s, LOCAL_USER_ID, ex.slug, clock.t, core_ok=True)
    db._engines.pop(url).dispose()            # the server stops; a new process opens the same file
    clock.advance(minutes=1)
    with db.session_scope(url) as s:
        again = interview.active_session(s, LOCAL_USER_ID)
        assert again is not None and again.id == sess.id
        assert interview.remaining_seconds(again) == (45 - 8) * 60
        assert [(i.slug, i.role, i.points) for i in interview.session_items(s, again)] == items
        rep = interview.report(s, again)
        assert rep.items[0].passed and rep.items[0].hints_used == 1 and rep.items[0].minutes_to_first_pass == 7.0


def test_editorials_close_during_a_session_and_open_after(url, clock, bob):
    with db.session_scope(url) as s:
        solved = next(e.slug for e in interview.candidates("track", "kernels"))
        record(s, LOCAL_USER_ID, solved, T0 - timedelta(days=30), core_ok=True)
        unlock.check_unlocked(s, LOCAL_USER_ID, solved)       # open: passed long ago
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="serving", minutes=30, seed=1)
        drawn = interview.session_items(s, sess)[0].slug
        for slug in (solved, drawn):
            with pytest.raises(services.Locked, match="during your mock interview"):
                unlock.check_unlocked(s, LOCAL_USER_ID, slug)
        assert interview.lock_reason(s, bob, solved) is None      # nobody else's
        undrawn = next(e.slug for e in interview.candidates("track", "serving") if e.slug != drawn)
        interview.finish_session(s, LOCAL_USER_ID, sess.id)
        unlock.check_unlocked(s, LOCAL_USER_ID, solved)
        unlock.check_unlocked(s, LOCAL_USER_ID, drawn)          # not passed, open after the session
        with pytest.raises(services.Locked, match="after your code passes"):
            unlock.check_unlocked(s, LOCAL_USER_ID, undrawn)
        with pytest.raises(services.Locked):
            unlock.check_unlocked(s, bob, drawn)                # not bob's session


@pytest.mark.parametrize("review_after", [True, False])
def test_a_cohort_interview_opens_editorials_after_it_closes_if_review_is_allowed(url, clock, review_after):
    with db.session_scope(url) as s:
        cohort = Cohort(name="Spring", join_code="spring-code-1")
        s.add(cohort)
        s.commit()
        ci = CohortInterview(cohort_id=cohort.id, title="Week 3", scope_kind="track", scope="serving", minutes=30,
                             opens_at=T0, closes_at=T0 + timedelta(hours=2), seed=77, review_after=review_after)
        s.add(ci)
        s.commit()
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="track", scope="serving", minutes=30,
                                       cohort_interview=ci)
        assert sess.seed == 77 and sess.cohort_interview_id == ci.id
        slug = interview.session_items(s, sess)[0].slug
        clock.advance(minutes=10)
        interview.finish_session(s, LOCAL_USER_ID, sess.id)
        with pytest.raises(services.Locked, match="when the interview closes"):
            unlock.check_unlocked(s, LOCAL_USER_ID, slug)
        clock.advance(hours=2)
        if review_after:
            unlock.check_unlocked(s, LOCAL_USER_ID, slug)
        else:
            with pytest.raises(services.Locked, match="after your code passes"):
                unlock.check_unlocked(s, LOCAL_USER_ID, slug)


def test_the_worker_withholds_the_counterexample_within_a_session(url):
    seen: list[bool] = []

    def grade(exercise, code, *, device, public, progress, counterexample=True):
        seen.append(counterexample)
        return verdict(exercise.slug, core_ok=True, public=public)

    interview.set_clock(None)   # the queue stamps submissions with the real time
    with db.session_scope(url) as s:
        before = services.create_submission(s, LOCAL_USER_ID, "sampling-order", "x = 1\n", "submit",
                                            device="cpu", max_bytes=10_000)
        sess = interview.start_session(s, LOCAL_USER_ID, scope_kind="collection", scope="Jane Street", minutes=30,
                                       seed=0)
        drawn = interview.session_items(s, sess)[0].slug
        assert drawn != "sampling-order"
        during = services.create_submission(s, LOCAL_USER_ID, drawn, "x = 2\n", "submit", device="cpu",
                                            max_bytes=10_000)
        other = services.create_submission(s, LOCAL_USER_ID, "sampling-order", "x = 3\n", "run", device="cpu",
                                           max_bytes=10_000)
    w = Worker(url, grade=grade, devices=("cpu",))
    while w.run_once("test:0"):
        pass
    assert before.id < during.id < other.id and seen == [True, False, True]   # graded in their order
    with db.session_scope(url) as s:
        assert all(x.state == JobState.DONE.value for x in s.exec(select(Submission)).all())


@pytest.mark.parametrize("name, category", [
    ("attention-B2-H4-T8-S16", "attention"), ("shard positions: N=4, p=2", "shard positions"),
    ("rejects-negative-t", "rejects-negative-t"), ("quant-ties-int8", "quant-ties"), ("T4", "T4")])
def test_case_categories(name, category):
    assert interview.case_category(name) == category
