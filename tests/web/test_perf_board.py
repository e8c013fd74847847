"""The per-exercise performance leaderboard: perf_ratio from the verdict (never a flagged one), boards
per device kind, opt-in only, pseudonyms, and the page with its toggle."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from webutil import wait_done

from inferprep import db, perf_board, queue
from inferprep.models import LOCAL_USER_ID, Submission, User
from inferprep.verdict import CaseResult, PerfResult, Status, Verdict
from inferprep.web import create_app

H100 = "NVIDIA H100 80GB HBM3"


def perf(ratio: float | None, kind: str = "cpu", flagged: bool = False) -> PerfResult:
    return PerfResult(status="flagged" if flagged else "measured", ratio=ratio, device_kind=kind, median_s=1e-3,
                      spread_s=1e-5, n=10, converged=True, flagged=flagged, reason="under the floor" if flagged else "")


def verdict(p: PerfResult | None, slug: str = "rope") -> Verdict:
    return Verdict(slug=slug, status=Status.PASSED, score=1.0, passed=1, total=1, perf=p)


@pytest.fixture
def url(tmp_path) -> str:
    u = f"sqlite:///{tmp_path / 'b.db'}"
    db.prepare(u)
    return u


def graded(url: str, user: int, v: Verdict, slug: str = "rope") -> int:
    """A finished submission of ``user`` with verdict ``v``, recorded the way the worker does."""
    with db.session_scope(url) as s:
        sub = queue.enqueue(s, Submission(user_id=user, slug=slug, kind="submit", code="x", device="cpu"))
        sub_id = sub.id
        claimed = queue.claim(s, "w", lease_s=30, devices=("cpu",))
        assert claimed.id == sub_id
        assert queue.finish(s, sub_id, "w", v)
    return sub_id


def users(url: str, n: int) -> list[int]:
    with db.session_scope(url) as s:
        out = []
        for i in range(n):
            u = User(name=f"student {i}", email=f"s{i}@example.com")
            s.add(u)
            s.commit()
            out.append(u.id)
        return out


def test_perf_ratio_is_stored_unless_flagged_or_failed(url):
    ids = [graded(url, LOCAL_USER_ID, verdict(p)) for p in
           (perf(0.5), perf(0.01, H100, flagged=True), PerfResult(status="failed", message="wrong"), None)]
    with db.session_scope(url) as s:
        assert [s.get(Submission, i).perf_ratio for i in ids] == [0.5, None, None, None]


def test_boards_rank_best_ratio_per_kind_among_opted_in_only(url):
    a, b, c = users(url, 3)
    graded(url, a, verdict(perf(0.9)))
    graded(url, a, verdict(perf(0.6)))            # a's best on cpu
    graded(url, a, verdict(perf(0.3, H100)))
    graded(url, b, verdict(perf(0.7)))
    graded(url, c, verdict(perf(0.1)))            # fastest, but c never opts in
    graded(url, b, verdict(perf(0.05, H100, flagged=True)))   # flagged: never on a board
    with db.session_scope(url) as s:
        assert perf_board.device_kinds(s, "rope") == sorted(["cpu", H100])
        boards = perf_board.standings(s, "rope", viewer=a)
        assert boards == {"cpu": [], H100: []}     # off by default
        alias_a = perf_board.set_opt_in(s, a, "rope", "cpu", True).alias
        perf_board.set_opt_in(s, b, "rope", "cpu", True)
        perf_board.set_opt_in(s, a, "rope", H100, True)
        with pytest.raises(perf_board.BoardError):
            perf_board.set_opt_in(s, b, "rope", "NVIDIA B200", True)   # b has no ranked B200 time (nobody has)
        boards = perf_board.standings(s, "rope", viewer=a)
        assert [(r.rank, r.ratio, r.mine) for r in boards["cpu"]] == [(1, 0.6, True), (2, 0.7, False)]
        assert boards["cpu"][0].alias == alias_a and re.fullmatch(r"[a-z]+-[a-z]+-\d\d", alias_a)
        assert [(r.rank, r.ratio) for r in boards[H100]] == [(1, 0.3)]
        assert perf_board.set_opt_in(s, a, "rope", "cpu", True).alias == alias_a   # the alias is kept
        perf_board.set_opt_in(s, a, "rope", "cpu", False)
        assert [r.ratio for r in perf_board.standings(s, "rope")["cpu"]] == [0.7]
        with pytest.raises(perf_board.BoardError, match="no performance stage"):
            perf_board.standings(s, "sampling-order")


class PerfJudge:
    """A fake grade function whose verdict carries a perf result: ``RATIO=<x>`` in the code sets it."""

    def __call__(self, exercise, code, *, device, public, progress, salt=None):
        m = re.search(r"RATIO=([0-9.]+)", code)
        case = CaseResult(name="c", passed=True, status=Status.PASSED)
        progress(case)
        return Verdict.from_cases(exercise.slug, [case], public=public, device=device, sandbox="fake",
                                  perf=perf(float(m.group(1))) if m and not public else None)


@pytest.fixture
def perf_client(settings):
    app = create_app(settings, grade=PerfJudge(), devices=("cpu",))
    with TestClient(app) as c:
        yield c


def test_leaderboard_page_and_toggle(perf_client):
    c = perf_client
    assert "leaderboard-link" in c.get("/exercises/rope").text
    assert "leaderboard-link" not in c.get("/exercises/sampling-order").text
    assert c.get("/exercises/sampling-order/leaderboard").status_code == 404
    assert 'data-testid="no-boards"' in c.get("/exercises/rope/leaderboard").text
    for ratio in ("0.80", "0.40"):
        r = c.post("/exercises/rope/submissions", data={"code": f"# RATIO={ratio}\n", "kind": "submit"})
        sub_id = int(re.search(r"/submissions/(\d+)", r.url.path).group(1))
        wait_done(c, sub_id)
    frag = c.get(f"/submissions/{sub_id}/verdict").text
    assert "perf (cpu): 0.40x the reference&#39;s time" in frag and "/exercises/rope/leaderboard" in frag
    page = c.get("/exercises/rope/leaderboard").text
    assert 'data-kind="cpu"' in page and "Nobody has opted in" in page and "Show me on this board" in page
    r = c.post("/exercises/rope/leaderboard", data={"kind": "cpu", "on": "1"})
    assert r.status_code == 200 and "0.40x" in r.text and "(you)" in r.text and "Leave this board" in r.text
    assert "0.80x" not in r.text                   # the best ratio only
    assert c.post("/exercises/rope/leaderboard", data={"kind": "NVIDIA B200", "on": "1"}).status_code == 400
    r = c.post("/exercises/rope/leaderboard", data={"kind": "cpu", "on": "0"})
    assert "(you)" not in r.text and "Nobody has opted in" in r.text


def test_the_board_is_closed_during_a_mock_interview(perf_client):
    """Other users' results close while a mock interview runs (issue 18); the board opens again after."""
    c = perf_client
    assert c.get("/exercises/rope/leaderboard").status_code == 200
    r = c.post("/interview/start", data={"scope": "track:kernels", "minutes": "30"})
    assert r.status_code == 200, r.text
    sid = int(re.fullmatch(r"/interview/(\d+)", r.url.path).group(1))   # the session's page
    r = c.get("/exercises/rope/leaderboard")
    assert r.status_code == 403 and "during your mock interview" in r.text
    c.post(f"/interview/{sid}/finish", data={"confirm": "yes"})
    assert c.get("/exercises/rope/leaderboard").status_code == 200
