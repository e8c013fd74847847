"""``InFlightLimit``: at most N requests of one process past this point at once, so that the
database pool cannot run dry.

Why: a request takes its database connection in one hop through FastAPI's thread pool (the
sign-in dependency's session lookup) and gives it back several hops later (the handler, then the
session's clean-up), waiting for a free thread in between. With more requests in flight than
connections, every thread can end up blocked waiting for a connection that is held by a request
waiting for a thread: nothing moves until the pool's timeout (measured: the cohort bench at 200
students stalled for minutes). Admitting at most as many requests as the pool has connections
(less what the embedded grading threads use) rules that out; the others wait on the event loop,
holding neither a thread nor a connection.

Not limited: static files, and an event stream (``GET /submissions/N/events``,
``GET /api/scratch/N/events``) once its response
has started: it holds no database session while it streams, so it gives its place back then (its
sign-in and ownership check before that use the database like any request). Which requests are
streams is read from the path, never from a header the client chooses (``Accept:
text/event-stream`` on any route would otherwise pass by the limit).
"""

from __future__ import annotations

import asyncio
import re
import weakref

EVENT_STREAM = re.compile(r"/submissions/[0-9]+/events|/api/scratch/[0-9]+/events")
"""The paths of event streams (``web.pages.events.job_stream``: a verdict's and a scratch run's)."""


class InFlightLimit:
    """Pure ASGI middleware: ``limit`` HTTP requests at once (per event loop), the rest queue."""

    def __init__(self, app, limit: int):
        if limit < 1:
            raise ValueError(f"the in-flight limit is a positive number of requests, not {limit}")
        self.app, self.limit = app, limit
        # one semaphore per event loop (tests run one app under several loops)
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = \
            weakref.WeakKeyDictionary()

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.limit)
        return gate

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/static/"):
            return await self.app(scope, receive, send)
        gate = self._gate()
        await gate.acquire()
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                gate.release()

        if EVENT_STREAM.fullmatch(scope["path"]):
            inner = send

            async def send(message):   # noqa: F811 - the stream's place is free once it streams
                if message["type"] == "http.response.start":
                    release()
                await inner(message)
        try:
            await self.app(scope, receive, send)
        finally:
            release()
