"""``InFlightLimit`` admits at most N requests at once and queues the rest (none is dropped);
static files and event streams pass by it."""

from __future__ import annotations

import asyncio

import pytest

from inferprep.web.inflight import InFlightLimit


def run(limit: int, paths: list[str], headers=()) -> tuple[int, int]:
    """(the most requests inside the app at once, how many finished)."""
    inside = most = done = 0

    async def app(scope, receive, send):
        nonlocal inside, most, done
        inside += 1
        most = max(most, inside)
        await asyncio.sleep(0.01)
        inside -= 1
        done += 1

    async def main():
        mw = InFlightLimit(app, limit)
        await asyncio.gather(*[mw({"type": "http", "path": p, "headers": list(headers)}, None, None) for p in paths])

    asyncio.run(main())
    return most, done


def test_at_most_limit_requests_at_once_and_all_finish():
    assert run(3, ["/exercises"] * 20) == (3, 20)


def test_static_files_and_event_streams_are_not_limited():
    assert run(1, ["/static/app.css"] * 5) == (5, 5)
    assert run(1, ["/submissions/1/events"] * 5, headers=[(b"accept", b"text/event-stream")]) == (5, 5)


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="positive"):
        InFlightLimit(lambda *a: None, 0)
