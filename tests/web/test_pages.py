"""Every HTML page: dashboard, list with filters, exercise page, hints, draft, verdict, history,
solution unlock, submission page, progress, 404."""

from __future__ import annotations

import re

import pytest
from webutil import wait_done

from inferprep import catalog, paths

HX = {"HX-Request": "true"}


def test_dashboard_lists_tracks_collections_and_next(client):
    r = client.get("/")
    assert r.status_code == 200
    html = r.text
    assert "Dashboard" in html and "By track" in html and "By collection" in html
    assert "Jane Street" in html and "Google DeepMind" in html
    assert html.count('class="bar"') >= 5 + 2            # one chart per track and per collection
    assert 'role="img"' in html and "What to do next" in html


def test_exercise_list_shows_every_exercise(client):
    r = client.get("/exercises")
    assert r.status_code == 200
    for ex in catalog.all_exercises():
        assert f'href="/exercises/{ex.slug}"' in r.text


def test_exercise_list_filters_and_search(client):
    exs = catalog.all_exercises()
    decoding = [e for e in exs if e.meta.track.value == "decoding"]
    html = client.get("/exercises", params={"track": "decoding"}).text
    assert len(re.findall(r'<a href="/exercises/[a-z0-9-]+">', html)) == len(decoding)
    html = client.get("/exercises", params={"q": "top-p"}).text      # a tag
    assert 'href="/exercises/sampling-order"' in html
    html = client.get("/exercises", params={"q": "Temperature, TOP-K"}).text  # the title, any case
    assert 'href="/exercises/sampling-order"' in html
    html = client.get("/exercises", params={"collection": "Jane Street", "difficulty": "hard", "kind": "implement"}).text
    for e in exs:
        shown = f'href="/exercises/{e.slug}"' in html
        m = e.meta
        assert shown == (catalog.Collection.JANE_STREET in m.collections and m.difficulty.value == "hard"
                         and m.kind.value == "implement")
    html = client.get("/exercises", params={"status": "solved"}).text
    assert "No exercise matches" in html
    html = client.get("/exercises", params={"q": "zzz-nothing"}).text
    assert "No exercise matches" in html


def test_exercise_page_renders_statement_math_code_and_editor(client):
    ex = catalog.get("sampling-order")
    r = client.get("/exercises/sampling-order")
    assert r.status_code == 200
    html = r.text
    assert ex.meta.title.replace(",", "") in html.replace(",", "")
    assert 'class="math inline"' in html                 # math left for KaTeX
    assert '<table' in html                               # markdown tables
    assert 'class="highlight"' in html                    # Pygments-highlighted code
    assert '<textarea id="code" name="code"' in html and '<label for="code">' in html
    assert "def sampling_probs" in html                   # the stub in the editor
    assert "codemirror-5.65.18/lib/codemirror.js" in html and "katex.min.js" in html and "htmx.min.js" in html
    assert "Show hint 1 of" in html
    assert "Locked" in html


def test_vendored_assets_and_licenses_are_served(client):
    html = client.get("/exercises/sampling-order").text
    for src in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
        assert client.get(src).status_code == 200, src
    for lic in ("vendor/codemirror-5.65.18/LICENSE", "vendor/katex-0.16.22/LICENSE", "vendor/htmx-org-2.0.4/LICENSE"):
        assert client.get(f"/static/{lic}").status_code == 200
    assert client.get("/static/vendor/katex-0.16.22/dist/fonts/KaTeX_Main-Regular.woff2").status_code == 200


def test_unknown_exercise_is_a_404_page(client):
    for slug in ("no-such-exercise", "Bad_Slug", "..%2f..%2fgraders"):
        r = client.get(f"/exercises/{slug}")
        assert r.status_code == 404
        assert "text/html" in r.headers["content-type"] and "Not found" in r.text
    assert "did you mean sampling-order" in client.get("/exercises/sampling-ordr").text


def test_hints_one_at_a_time(client):
    ex = catalog.get("sampling-order")
    r = client.post("/exercises/sampling-order/hints", headers=HX)
    assert r.status_code == 200
    assert "Show hint 2 of 3" in r.text and "Keep one row state" in r.text and "strictly more probable" not in r.text
    client.post("/exercises/sampling-order/hints", headers=HX)
    r = client.post("/exercises/sampling-order/hints", headers=HX)
    assert "That was the last hint" in r.text
    r = client.post("/exercises/sampling-order/hints", follow_redirects=False)   # without htmx: redirect
    assert r.status_code == 303
    assert client.get("/exercises/sampling-order").text.count("<li class=\"md\">") == len(ex.meta.hints)


def test_draft_autosave_round_trip(client):
    r = client.post("/exercises/sampling-order/draft", data={"code": "x = 1  # my draft\n"}, headers=HX)
    assert r.status_code == 200 and "Draft saved" in r.text
    assert "x = 1  # my draft" in client.get("/exercises/sampling-order").text
    assert client.post("/exercises/sampling-order/draft", data={"code": "y = 2\n"},
                       follow_redirects=False).status_code == 303
    r = client.post("/exercises/sampling-order/draft", data={"code": "z = 3\n"},   # the editor's autosave
                    headers={"Accept": "application/json"})
    assert r.status_code == 200 and r.json()["message"].startswith("Draft saved at ") and r.json()["saved_at"]
    r = client.post("/exercises/sampling-order/draft", data={"code": "#" * (256 * 1024 + 1)},
                    headers={"Accept": "application/json"})
    assert r.status_code == 413 and "the limit is 262144 bytes" in r.json()["detail"]


def test_submit_from_the_page_live_verdict_history_and_unlock(client, judge):
    ex = catalog.get("sampling-order")
    editorial_line = next(l for l in ex.editorial.splitlines() if len(l) > 40)
    assert editorial_line not in client.get("/exercises/sampling-order").text
    assert client.get("/exercises/sampling-order/solution").status_code == 403

    r = client.post("/exercises/sampling-order/submissions", data={"code": "# PASS\n", "kind": "submit"}, headers=HX)
    assert r.status_code == 200
    sub_id = int(re.search(r'id="verdict-(\d+)"', r.text).group(1))
    assert 'sse-connect="/submissions/%d/events"' % sub_id in r.text    # it follows its event stream
    assert "hx-trigger" not in r.text                                  # and never polls
    wait_done(client, sub_id)
    frag = client.get(f"/submissions/{sub_id}/verdict").text
    assert 'data-state="done"' in frag and "sse-connect" not in frag
    assert "Passed" in frag and "tie-case" in frag and "hello from stdout" in frag and " ms" in frag
    assert 'hx-swap-oob="true"' in frag                                # the history refreshes too
    page = client.get("/exercises/sampling-order").text
    assert "solved" in page and f"#{sub_id}" in page and "/exercises/sampling-order/solution" in page
    sol = client.get("/exercises/sampling-order/solution")
    assert sol.status_code == 200 and "Reference solution" in sol.text
    assert "sampling_probs" in sol.text and "<span" in sol.text
    grader_src = ex.grader_path.read_text()
    grader_line = next(l for l in grader_src.splitlines() if "Hidden grader" in l)
    for url in ("/exercises/sampling-order", "/exercises/sampling-order/solution", f"/submissions/{sub_id}",
                "/api/exercises/sampling-order", "/api/exercises/sampling-order/solution"):
        assert grader_line not in client.get(url).text


def test_failing_verdict_shows_the_failing_case(client):
    r = client.post("/exercises/sampling-order/submissions", data={"code": "wrong = True\n", "kind": "submit"},
                    follow_redirects=False)
    assert r.status_code == 303                                       # without htmx: the submission page
    sub_id = int(r.headers["location"].rsplit("/", 1)[1])
    wait_done(client, sub_id)
    page = client.get(f"/submissions/{sub_id}").text
    assert "Wrong answer" in page and "expected a tie group to be kept whole" in page
    assert "wrong" in page and "<pre" in page                         # the code, highlighted
    assert client.get("/exercises/sampling-order/solution").status_code == 403


def test_run_grades_public_examples_and_does_not_unlock(client, judge):
    r = client.post("/exercises/sampling-order/submissions", data={"code": "# PASS\n", "kind": "run"}, headers=HX)
    sub_id = int(re.search(r'id="verdict-(\d+)"', r.text).group(1))
    assert wait_done(client, sub_id)["passed"]
    assert ("sampling-order", True) in judge.calls
    assert client.get("/exercises/sampling-order/solution").status_code == 403
    assert "attempted" in client.get("/exercises/sampling-order").text


def test_progress_page(client):
    assert "No attempts yet" in client.get("/progress").text
    r = client.post("/exercises/sampling-order/submissions", data={"code": "# PASS\n", "kind": "submit"}, headers=HX)
    wait_done(client, int(re.search(r'id="verdict-(\d+)"', r.text).group(1)))
    html = client.get("/progress").text
    assert "Attempts over time" in html and "<polyline" in html and "Completion per track" in html
    assert "1</strong> of" in html
    assert html.count('href="/exercises/') >= len(catalog.all_exercises())


def test_submission_page_of_unknown_id_is_404(client):
    assert client.get("/submissions/999").status_code == 404
    assert client.get("/submissions/999/verdict").status_code == 404


def test_healthz_and_docs(client):
    assert client.get("/healthz").text == "ok"
    docs = client.get("/docs")
    assert docs.status_code == 200 and "cdn" not in docs.text          # Swagger UI served locally
    for src in re.findall(r"(?:url|href): ?'(/static/[^']+)'|\"(/static/[^\"]+)\"", docs.text):
        assert client.get(next(x for x in src if x)).status_code == 200
    spec = client.get("/openapi.json").json()
    assert "/api/exercises/{slug}/submissions" in spec["paths"] and "/api/progress" in spec["paths"]
    assert not any(p.startswith("/exercises") for p in spec["paths"])   # pages stay out of the API docs


def test_stored_code_and_output_are_escaped(client):
    payload = "<script>alert('x')</script>"
    r = client.post("/api/exercises/sampling-order/submissions", json={"code": f"# {payload}\n", "kind": "run"})
    wait_done(client, r.json()["id"])
    for url in (f"/submissions/{r.json()['id']}", "/exercises/sampling-order"):
        html = client.get(url).text
        assert payload not in html and "&lt;script&gt;" in html


def test_error_pages_speak_web_not_command_line(client):
    # /submissions/abc: no submission has that id; a 404 page, not raw validation text
    r = client.get("/submissions/abc")
    assert r.status_code == 404 and "text/html" in r.headers["content-type"] and "Not found" in r.text
    assert "int_parsing" not in r.text and "valid integer" not in r.text
    r = client.get("/api/submissions/abc")
    assert r.status_code == 404 and r.json()["detail"] == "no page at /api/submissions/abc"
    # the path is echoed into the page: escaped, never markup
    r = client.get("/submissions/%3Cimg%20src=x%20onerror=alert(1)%3E")
    assert r.status_code == 404 and "<img" not in r.text and "&lt;img src=x onerror=alert(1)&gt;" in r.text
    # an unknown slug with no close match points at the exercise list, not at a shell command
    r = client.get("/exercises/zzzz-nothing-like-it")
    assert r.status_code == 404 and "inferprep list" not in r.text and "the exercise list has them all" in r.text
    assert "inferprep list" not in client.get("/api/exercises/zzzz-nothing-like-it").json()["detail"]
    # a malformed query or body is still a 422: only a path id that cannot exist is a missing page
    assert client.get("/api/exercises?difficulty=impossible").status_code in (200, 422)


def test_cli_keeps_its_own_hint():
    with pytest.raises(catalog.UnknownExercise, match="inferprep list") as e:
        catalog.get("zzzz-nothing-like-it")
    assert e.value.close == []
    with pytest.raises(catalog.UnknownExercise, match="did you mean sampling-order") as e:
        catalog.get("sampling-ordr")
    assert "sampling-order" in e.value.close
