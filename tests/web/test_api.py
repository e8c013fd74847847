"""The JSON API: exercises (public files only), drafts, hints, submissions, retry, progress."""

from __future__ import annotations

from webutil import wait_done

from inferprep import catalog


def test_list_and_filter(client):
    all_ = client.get("/api/exercises").json()
    assert {e["slug"] for e in all_} == {e.slug for e in catalog.all_exercises()}
    assert all(e["status"] == "untouched" for e in all_)
    dec = client.get("/api/exercises", params={"track": "decoding", "q": "min-p"}).json()
    assert [e["slug"] for e in dec] == ["sampling-order"]


def test_read_exercise_public_files_only(client):
    ex = catalog.get("sampling-order")
    d = client.get("/api/exercises/sampling-order").json()
    assert set(d["files"]) == {"statement.md", "stub.py", "examples.py"}
    assert d["code"] == ex.stub and d["hints"] == [] and d["hints_total"] == len(ex.meta.hints)
    assert d["unlocked"] is False
    text = str(d)
    assert ex.editorial[:200] not in text and ex.grader_path.read_text()[:200] not in text
    assert client.get("/api/exercises/nope").status_code == 404
    assert client.get("/api/exercises/nope").json()["detail"].startswith("no exercise")


def test_draft_and_hints(client):
    assert client.put("/api/exercises/sampling-order/draft", json={"code": "z = 3\n"}).status_code == 204
    assert client.get("/api/exercises/sampling-order").json()["code"] == "z = 3\n"
    h = client.post("/api/exercises/sampling-order/hints").json()
    assert len(h) == 1
    assert client.get("/api/exercises/sampling-order").json()["hints"] == h


def test_submission_lifecycle_and_progress(client):
    r = client.post("/api/exercises/sampling-order/submissions", json={"code": "# PASS\n", "kind": "submit"})
    assert r.status_code == 202
    body = r.json()
    assert body["state"] in ("queued", "running", "done") and body["code"] == "# PASS\n"
    d = wait_done(client, body["id"])
    assert d["passed"] and d["status"] == "passed" and d["verdict"]["total"] == 2
    assert [c["name"] for c in d["cases"]] == ["first-case", "tie-case"]
    listed = client.get("/api/submissions", params={"slug": "sampling-order"}).json()
    assert [x["id"] for x in listed] == [body["id"]] and listed[0]["code"] is None
    sol = client.get("/api/exercises/sampling-order/solution").json()
    assert sol["editorial"] == catalog.get("sampling-order").editorial and "def sample" in sol["reference"]
    p = client.get("/api/progress").json()
    assert p["exercises"]["sampling-order"] == "solved" and p["overall"]["solved"] == 1
    assert sum(t["solved"] for t in p["by_track"]) == 1 and p["timeline"][-1][2] == 1
    assert client.get("/api/exercises").json()[0]["status"] in ("solved", "untouched")


def test_solution_locked_before_a_pass(client):
    r = client.get("/api/exercises/sampling-order/solution")
    assert r.status_code == 403 and "unlock" in r.json()["detail"]


def test_idempotency_key_gives_one_submission(client):
    body = {"code": "# PASS\n", "kind": "run", "idempotency_key": "k-1"}
    a = client.post("/api/exercises/sampling-order/submissions", json=body).json()
    b = client.post("/api/exercises/sampling-order/submissions", json=body).json()
    assert a["id"] == b["id"]
    assert len(client.get("/api/submissions").json()) == 1


def test_bad_kind_and_unknown_submission(client):
    r = client.post("/api/exercises/sampling-order/submissions", json={"code": "x", "kind": "hack"})
    assert r.status_code == 422
    assert client.get("/api/submissions/12345").status_code == 404
    assert client.post("/api/submissions/12345/retry").status_code == 404
