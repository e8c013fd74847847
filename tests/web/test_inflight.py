"""``InFlightLimit`` admits at most N requests at once and queues the rest (none is dropped);
static files and event streams pass by it."""

from __future__ import annotations

import asyncio

import pytest

from inferprep.web.inflight import InFlightLimit


def run(limit: int, paths: list[str], headers=(), streaming: bool = False) -> tuple[int, int]:
    """(the most requests inside the app at once before their response started, how many
    finished). ``streaming``: each request checks a while, starts its response, then streams a
    while; the result's first figure then counts the most streaming at once instead."""
    inside = most = done = 0

    async def app(scope, receive, send):
        nonlocal inside, most, done
        if streaming:
            await asyncio.sleep(0.01)   # sign-in, ownership: uses the database
            await send({"type": "http.response.start", "status": 200, "headers": []})
        inside += 1
        most = max(most, inside)
        await asyncio.sleep(0.1 if streaming else 0.01)
        inside -= 1
        done += 1

    async def sink(message):
        pass

    async def main():
        mw = InFlightLimit(app, limit)
        await asyncio.gather(*[mw({"type": "http", "path": p, "headers": list(headers)}, None, sink) for p in paths])

    asyncio.run(main())
    return most, done


def test_at_most_limit_requests_at_once_and_all_finish():
    assert run(3, ["/exercises"] * 20) == (3, 20)


def test_static_files_are_not_limited():
    assert run(1, ["/static/app.css"] * 5) == (5, 5)


def test_an_event_stream_gives_its_place_back_once_it_streams():
    """Five streams under a limit of one stream at once: none waits for another to end."""
    assert run(1, ["/submissions/1/events"] * 5, streaming=True) == (5, 5)
    assert run(1, ["/api/scratch/1/events"] * 5, streaming=True) == (5, 5)     # a scratch run's stream too
    assert run(1, ["/exercises"] * 5, streaming=True) == (1, 5)   # an ordinary response holds its place


def test_an_event_stream_accept_header_does_not_lift_the_limit():
    """Red team: ``Accept: text/event-stream`` on an ordinary route (a page, a submission) passed by
    the limit, so a student could send every request past it and run the pool dry."""
    sse = [(b"accept", b"text/event-stream")]
    assert run(2, ["/exercises"] * 10, headers=sse) == (2, 10)
    assert run(2, ["/api/exercises/softmax/submissions"] * 10, headers=sse) == (2, 10)


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="positive"):
        InFlightLimit(lambda *a: None, 0)
