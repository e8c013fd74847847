"""Follow-up questions in the browser's HTML and the JSON API (issue 18): closed before a pass,
the panel in the exercise page's Result drawer after it, answers by htmx and by plain forms, the
first answer counts, bad answers refused with a message, the API never shows an answer early."""

from __future__ import annotations

import json

from sqlmodel import select

from inferprep import catalog, db, followups
from inferprep.interview_models import FollowupAnswer
from webutil import wait_done

SLUG = "sampling-order"
HX = {"HX-Request": "true"}


def pass_it(client):
    r = client.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# PASS\n", "kind": "submit"})
    assert r.status_code == 202, r.text
    assert wait_done(client, r.json()["id"])["passed"]


def test_closed_before_a_pass(client):
    assert client.get(f"/exercises/{SLUG}/followups").status_code == 403
    assert client.get(f"/api/exercises/{SLUG}/followups").status_code == 403
    assert client.post(f"/exercises/{SLUG}/followups/vllm-order", data={"answer": "1"}).status_code == 403
    assert client.post(f"/api/exercises/{SLUG}/followups/vllm-order", json={"answer": 1}).status_code == 403
    page = client.get(f"/exercises/{SLUG}").text
    assert 'data-testid="followups"' not in page
    # a failing submission opens nothing
    r = client.post(f"/api/exercises/{SLUG}/submissions", json={"code": "# nope\n", "kind": "submit"})
    assert not wait_done(client, r.json()["id"])["passed"]
    assert client.get(f"/exercises/{SLUG}/followups").status_code == 403


def test_panel_answers_and_first_answer_counts(client, settings):
    pass_it(client)
    page = client.get(f"/exercises/{SLUG}").text
    assert 'data-testid="followups"' in page and "Follow-up questions" in page
    assert "first answer to each question counts" in page
    qs = followups.load(catalog.get(SLUG).folder)
    for q in qs:
        assert f'id="fu-{q.id}"' in page
        assert q.explanation[:40] not in page            # no explanation before answering
    # a wrong answer by htmx: the verdict, the explanation and the sources come back
    r = client.post(f"/exercises/{SLUG}/followups/vllm-order", data={"answer": "0"}, headers=HX)
    assert r.status_code == 200
    assert 'data-testid="followup-verdict"' in r.text and "Wrong" in r.text
    assert "argmax-invariant" in r.text and "vllm/v1/sample/sampler.py" in r.text
    # the right answer afterwards changes nothing: the first one counts
    r = client.post(f"/exercises/{SLUG}/followups/vllm-order", data={"answer": "1"}, headers=HX)
    assert "Wrong" in r.text
    # the order question without JavaScript: the shown labels in a text field, a redirect back
    order_q = next(q for q in qs if q.id == "hf-warper-order")
    shown = followups.display_order(1, SLUG, order_q)
    labels = ",".join(str(shown.index(i) + 1) for i in order_q.answer)
    r = client.post(f"/exercises/{SLUG}/followups/hf-warper-order", data={"answer": labels}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith("#fu-hf-warper-order")
    full = client.get(r.headers["location"].split("#")[0]).text
    assert "Right" in full and "_get_logits_processor" in full
    # a number with its unit typed in
    r = client.post(f"/exercises/{SLUG}/followups/temperature-before-top-p", data={"answer": "0.42"}, headers=HX)
    assert "Right" in r.text
    with db.session_scope(settings.db_url) as s:
        rows = {a.question_id: a for a in s.exec(select(FollowupAnswer).where(FollowupAnswer.slug == SLUG))}
    assert set(rows) == {"vllm-order", "hf-warper-order", "temperature-before-top-p"}
    assert rows["vllm-order"].context == followups.PRACTICE and not rows["vllm-order"].correct
    assert json.loads(rows["hf-warper-order"].answer_json) == order_q.answer and rows["hf-warper-order"].correct


def test_bad_answers_get_a_message_and_record_nothing(client, settings):
    pass_it(client)
    for qid, data in [("vllm-order", {"answer": "7"}), ("vllm-order", {"answer": "x"}),
                      ("which-pairs-commute", {"choice_9": "1"}), ("temperature-before-top-p", {"answer": "lots"}),
                      ("hf-warper-order", {"answer": "1,1,2,3"}), ("hf-warper-order", {"answer": "1,2"})]:
        r = client.post(f"/exercises/{SLUG}/followups/{qid}", data=data, headers=HX)
        assert r.status_code == 200 and 'data-testid="followup-error"' in r.text, (qid, data)
        r = client.post(f"/exercises/{SLUG}/followups/{qid}", data=data, follow_redirects=False)
        assert r.status_code == 422, (qid, data)
    assert client.post(f"/exercises/{SLUG}/followups/no-such-question", data={"answer": "1"}).status_code == 404
    assert client.get("/exercises/batch1-gap/followups").status_code in (403, 404)
    with db.session_scope(settings.db_url) as s:
        assert s.exec(select(FollowupAnswer)).first() is None


def test_the_passed_verdict_links_and_loads_the_panel(client):
    r = client.post(f"/exercises/{SLUG}/submissions", data={"code": "# PASS\n", "kind": "submit"}, headers=HX)
    sub = wait_done(client, int(r.text.split('id="verdict-')[1].split('"')[0]))
    verdict = client.get(f"/submissions/{sub['id']}/verdict").text
    assert 'data-testid="followups-link"' in verdict
    assert f'hx-get="/exercises/{SLUG}/followups"' in verdict and 'hx-target="#followups"' in verdict
    fragment = client.get(f"/exercises/{SLUG}/followups", headers=HX).text
    assert fragment.lstrip().startswith("<section") and "<html" not in fragment


def test_api_hides_answers_until_answered(client):
    pass_it(client)
    d = client.get(f"/api/exercises/{SLUG}/followups").json()
    assert d["context"] == "practice" and d["first_answer_counts"]
    assert len(d["questions"]) == 4
    for q in d["questions"]:
        assert not q["answered"] and q["explanation"] is None and q["right_answer"] is None and q["sources"] is None
        assert "answer" not in q and "reference_expr" not in q
    order = next(q for q in d["questions"] if q["type"] == "order")
    oq = next(q for q in followups.load(catalog.get(SLUG).folder)
              if q.id == order["id"])
    assert sorted(order["items"]) == sorted(oq.items) and order["items"] != [oq.items[i] for i in oq.answer]
    positions = [order["items"].index(oq.items[i]) for i in oq.answer]
    r = client.post(f"/api/exercises/{SLUG}/followups/{order['id']}", json={"answer": positions})
    assert r.status_code == 200 and r.json()["correct"] and r.json()["recorded"] and r.json()["sources"]
    r = client.post(f"/api/exercises/{SLUG}/followups/{order['id']}", json={"answer": list(reversed(positions))})
    assert r.status_code == 200 and r.json()["correct"] and not r.json()["recorded"]
    r = client.post(f"/api/exercises/{SLUG}/followups/temperature-before-top-p", json={"answer": 0.5635})
    assert r.status_code == 200 and not r.json()["correct"] and "0.41545" in r.json()["right_answer"]
    assert client.post(f"/api/exercises/{SLUG}/followups/vllm-order", json={"answer": 9}).status_code == 422
    assert client.post(f"/api/exercises/{SLUG}/followups/vllm-order", json={"answer": "one"}).status_code == 422
    assert client.post(f"/api/exercises/{SLUG}/followups/nope", json={"answer": 1}).status_code == 404


def test_in_a_mock_interview_verdicts_wait_for_the_last_answer(client, monkeypatch):
    """Within a session an explanation could hint at the next question, and each first answer
    counts toward the score: answers are "recorded" (page, htmx, API) and every verdict, right
    answer and explanation shows once all of the exercise's questions are answered."""
    import types
    from datetime import timedelta

    from inferprep import interview
    from inferprep.models import utcnow
    session = types.SimpleNamespace(id=77, started_at=utcnow() - timedelta(minutes=1))
    pass_it(client)                                       # a pass inside the session
    monkeypatch.setattr(interview, "item_in_active_session",
                        lambda s, user_id, slug, now=None: (session, None) if slug == SLUG else None)
    qs = followups.load(catalog.get(SLUG).folder)
    assert len(qs) >= 3
    first, *middle, last = qs

    def answer(q):
        if isinstance(q, followups.SingleChoice):
            return {"answer": "0"}, 0
        if isinstance(q, followups.MultipleChoice):
            return {"choice_0": "1"}, [0]
        if isinstance(q, followups.NumberAnswer):
            return {"answer": "1"}, 1.0
        shown = followups.display_order(1, SLUG, q)
        return {"answer": ",".join(str(i + 1) for i in range(len(shown)))}, list(range(len(shown)))

    r = client.post(f"/exercises/{SLUG}/followups/{first.id}", data=answer(first)[0], headers=HX)
    assert r.status_code == 200 and 'data-testid="followup-recorded"' in r.text
    assert 'data-testid="followup-verdict"' not in r.text and first.explanation[:40] not in r.text
    assert r.headers["HX-Retarget"] == "#followups"          # the whole panel comes back
    api = client.get(f"/api/exercises/{SLUG}/followups").json()
    assert api["context"] == "interview:77"
    got = {q["id"]: q for q in api["questions"]}
    assert got[first.id]["answered"] and got[first.id]["correct"] is None and got[first.id]["explanation"] is None
    for q in middle:
        r = client.post(f"/api/exercises/{SLUG}/followups/{q.id}", json={"answer": answer(q)[1]})
        assert r.status_code == 200 and r.json()["correct"] is None and r.json()["explanation"] is None
    r = client.post(f"/exercises/{SLUG}/followups/{last.id}", data=answer(last)[0], headers=HX)
    assert r.status_code == 200
    assert r.text.count('data-testid="followup-verdict"') == len(qs)    # the last answer reveals all
    assert r.text.count('data-testid="followup-explanation"') == len(qs)
    api = client.get(f"/api/exercises/{SLUG}/followups").json()
    assert all(q["correct"] is not None and q["explanation"] for q in api["questions"])
