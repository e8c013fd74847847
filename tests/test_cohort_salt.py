"""Each grading's salt (issue 11): the worker draws one per grading, stores it on the submission
before grading and passes it to the grade function; no page, API response, schema, verdict or
export shows it; ``inferprep admin replay`` re-grades a stored submission with it and gets the
same cases (the real judge, on a fixture exercise whose grader draws its cases from the salt)."""

from __future__ import annotations

import json
import shutil
import time

from sqlmodel import select
from typer.testing import CliRunner

from inferprep import auth, catalog, cohorts, db, queue
from inferprep.cli import app as cli
from inferprep.models import LOCAL_USER_ID, Submission
from inferprep.runner import judge
from inferprep.verdict import Verdict
from inferprep.worker import Worker

from limits_support import SECRET, SLUG, world
from runner_support import FIXTURE_CONTENT


def _add(url: str, n: int, slug: str = SLUG, code: str = "# x") -> list[int]:
    with db.session_scope(url) as s:
        return [queue.enqueue(s, Submission(user_id=LOCAL_USER_ID, slug=slug, kind="run", code=f"{code} {i}")).id
                for i in range(n)]


def _salt(url: str, sub_id: int) -> int | None:
    with db.session_scope(url) as s:
        return s.get(Submission, sub_id, populate_existing=True).salt


def test_the_worker_stores_a_fresh_salt_before_grading_and_passes_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'salt.db'}"
    db.prepare(url)
    seen = []

    def grade(exercise, code, *, device, public, progress, salt):
        sub_id = int(code.split("#id=")[1])
        seen.append((salt, _salt(url, sub_id)))          # what the row holds while grading
        return Verdict(slug=exercise.slug, status="passed", score=1.0, passed=1, total=1)
    with db.session_scope(url) as s:
        ids = [queue.enqueue(s, Submission(user_id=LOCAL_USER_ID, slug=SLUG, kind="run", code="")).id for _ in range(2)]
        for i in ids:
            s.get(Submission, i).code = f"#id={i}"
        s.commit()
    w = Worker(url, threads=0, grade=grade, name="salty")
    assert w.run_once("salty:0") and w.run_once("salty:0")
    assert [stored for _, stored in seen] == [passed for passed, _ in seen] == [_salt(url, i) for i in ids]
    assert all(0 <= salt < 2 ** 63 for salt, _ in seen) and seen[0][0] != seen[1][0]

    def old_fake(exercise, code, *, device, public, progress):   # a fake from before salts: still works
        return Verdict(slug=exercise.slug, status="passed", score=1.0, passed=1, total=1)
    (jid,) = _add(url, 1)
    assert Worker(url, threads=0, grade=old_fake, name="old").run_once("old:0")
    with db.session_scope(url) as s:
        sub = s.get(Submission, jid)
        assert sub.status == "passed" and sub.salt is not None


def test_the_salt_is_in_no_page_response_schema_or_export(tmp_path):
    w = world({"data_dir": tmp_path}, ["sal@x.org"], per_hour=0, grading_threads=1)
    try:
        with db.session_scope(w.settings.db_url) as s:
            t = auth.create_user(s, "teach@x.org", "Teach", "a-long-password", is_instructor=True)
            cohorts.add_member(s, w.cohort_id, t.id, "instructor")
            cohorts.assign(s, w.cohort_id, SLUG)
            _, w.tokens["teach@x.org"] = auth.create_api_token(s, t.id, "t", secret=SECRET)
        sal, teach = w.as_("sal@x.org"), w.as_("teach@x.org")
        sid = sal.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# hi", "kind": "submit"}).json()["id"]
        for _ in range(400):
            if sal.get(f"/api/submissions/{sid}").json()["state"] == "done":
                break
            time.sleep(0.025)
        salt = _salt(w.settings.db_url, sid)
        assert salt is not None
        uid, cid = w.ids["sal@x.org"], w.cohort_id
        seen = {}
        for who, c, paths in (
                (sal, "student", [f"/api/submissions/{sid}", "/api/submissions", f"/submissions/{sid}",
                                  f"/submissions/{sid}/verdict", f"/exercises/{SLUG}", f"/api/exercises/{SLUG}",
                                  "/progress", "/api/progress", "/"]),
                (teach, "teacher", [f"/teach/submissions/{sid}", f"/api/teach/submissions/{sid}",
                                    f"/teach/cohorts/{cid}", f"/teach/cohorts/{cid}/students/{uid}",
                                    f"/teach/cohorts/{cid}/grades.csv", f"/api/teach/cohorts/{cid}/grades"])):
            for path in paths:
                r = who.get(path)
                assert r.status_code == 200, (path, r.status_code)
                seen[path] = r.text
        assert all(str(salt) not in text and '"salt"' not in text for text in seen.values())
        assert "salt" not in json.dumps(w.app.openapi())
        with db.session_scope(w.settings.db_url) as s:
            sub = s.get(Submission, sid)
            assert str(salt) not in (sub.verdict_json or "") + (sub.cases_json or "")
    finally:
        w.close()


SALTED_GRADER = '''
import random

import torch

from inferprep.grading import Grading, expect_tensor


def grade(g: Grading) -> None:
    """The case sizes (and names) come from the grading's salt: a replay must pass it."""
    ref = g.reference()
    rnd = random.Random(g.salt)
    for i in range(3):
        n = rnd.randint(2, 10 ** 6)
        with g.case(f"random-{n}"):
            x = torch.randn(n, generator=g.rng(i)).to(g.device)
            y = torch.randn(n, generator=g.rng(100 + i)).to(g.device)
            expect_tensor(g.call("add", x, y), ref.add(x, y), rtol=1e-6, atol=1e-7)
'''


def test_replay_regrades_with_the_stored_salt_and_gets_the_same_cases(tmp_path, monkeypatch):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    (root / "graders" / "add_vectors.py").write_text(SALTED_GRADER)
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    db.prepare(url)
    with db.session_scope(url) as s:
        sid = queue.enqueue(s, Submission(user_id=LOCAL_USER_ID, slug="add-vectors", kind="submit",
                                          code="def add(x, y):\n    return x + y\n")).id
    assert Worker(url, threads=0, name="real").run_once("real:0")          # the real judge
    with db.session_scope(url) as s:
        sub = s.get(Submission, sid)
        recorded = Verdict.model_validate_json(sub.verdict_json)
        salt, code = sub.salt, sub.code
    assert recorded.ok and str(salt) not in sub.verdict_json
    names = [c.name for c in recorded.cases]
    r = CliRunner().invoke(cli, ["admin", "replay", str(sid), "--json", "--database-url", url])
    assert r.exit_code == 0, r.output
    replayed = Verdict.model_validate_json(r.stdout[r.stdout.index("{"):])
    assert [c.name for c in replayed.cases] == names and replayed.ok
    assert "the same 3 cases" in r.stderr
    with db.session_scope(url) as s:
        assert len(s.exec(select(Submission)).all()) == 1     # the replay recorded nothing
    # without the salt the cases differ: the test would notice a replay that dropped it
    other = judge.grade(catalog.get("add-vectors"), code, salt=salt ^ 1)
    assert [c.name for c in other.cases] != names
    r = CliRunner().invoke(cli, ["admin", "replay", "999", "--database-url", url])
    assert r.exit_code == 2 and "no submission 999" in r.output
