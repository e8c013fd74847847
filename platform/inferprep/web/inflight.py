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

Not limited: static files and event streams (``Accept: text/event-stream``), which hold no
database session while they run.
"""

from __future__ import annotations

import asyncio
import weakref


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
        if scope["type"] != "http" or scope["path"].startswith("/static/") or _event_stream(scope):
            return await self.app(scope, receive, send)
        async with self._gate():
            await self.app(scope, receive, send)


def _event_stream(scope) -> bool:
    return any(k == b"accept" and b"text/event-stream" in v for k, v in scope.get("headers", ()))
