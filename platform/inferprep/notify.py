"""Wake-ups: who hears, at once, that a job was queued, moved on, finished or was cancelled.

Three channels, each keyed by a submission id as text (``None``: "anything on this channel may
have changed", after a lost connection):

- ``JOBS``: a job was queued (or queued again). Grading workers wake and claim.
- ``SUBMISSION``: submission N changed (claimed, a case finished, done, cancelled). Its event
  streams (``GET /submissions/N/events``) read it again and push what is new to the page.
- ``CANCEL``: submission N was cancelled. The worker grading it kills the child.

In one process (local mode: SQLite, the embedded worker in the web process) a ``Hub`` carries
them: ``publish`` from any thread wakes the handlers registered with ``on`` (worker threads) and
the asyncio waiters of ``watch`` (the event streams). Across processes (cohort mode with
PostgreSQL and ``inferprep worker`` elsewhere) ``pg_notify`` sends them inside the transaction
that made the change, so PostgreSQL delivers them at its commit, never before the change is
visible; a ``PgListener`` thread per process LISTENs with its own connection and publishes what
arrives into that process's hub. After it (re)connects it publishes ``None`` on every channel:
whatever was sent while it was not listening is re-read.

A notification can still be missed (a listener that has not connected yet, a process pausing),
so every waiter keeps a slow safety poll (``SAFETY_POLL_S``) that bounds the damage; only a
separate worker over SQLite, which no notification reaches, polls fast (``SQLITE_POLL_S``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlmodel import Session

log = logging.getLogger("inferprep.notify")

JOBS = "inferprep_jobs"
SUBMISSION = "inferprep_submission"
CANCEL = "inferprep_cancel"
CHANNELS = (JOBS, SUBMISSION, CANCEL)

SAFETY_POLL_S = 30.0
"""Seconds between re-reads while waiting for a notification: the bound on a lost one."""
SQLITE_POLL_S = 2.0
"""Seconds between polls of a worker in another process than the web over SQLite (no notifications)."""

Handler = Callable[[str | None], None]


def is_postgres(db_url: str) -> bool:
    return make_url(db_url).get_backend_name() == "postgresql"


def poll_seconds(db_url: str, *, same_process: bool) -> float:
    """How often a waiter re-reads without a notification: ``SAFETY_POLL_S`` where notifications
    reach it (PostgreSQL, or everything in one process), else ``SQLITE_POLL_S``."""
    return SAFETY_POLL_S if same_process or is_postgres(db_url) else SQLITE_POLL_S


class _Waiter:
    __slots__ = ("loop", "event")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def set(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.event.set)
        except RuntimeError:   # the loop closed (server shutting down): nobody waits any more
            pass


class Hub:
    """In-process publish/subscribe of the channels above; thread-safe, asyncio-aware."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: dict[str, list[Handler]] = defaultdict(list)
        self._waiters: dict[tuple[str, str], set[_Waiter]] = defaultdict(set)

    def on(self, channel: str, handler: Handler) -> None:
        """Call ``handler(key)`` on every publish to ``channel`` (in the publishing thread: keep it short)."""
        with self._lock:
            self._handlers[channel].append(handler)

    def off(self, channel: str, handler: Handler) -> None:
        with self._lock:
            if handler in self._handlers[channel]:
                self._handlers[channel].remove(handler)

    def publish(self, channel: str, key: object = None) -> None:
        """Wake everyone waiting on ``(channel, key)``; ``key`` None wakes the whole channel."""
        key = None if key is None else str(key)
        with self._lock:
            handlers = list(self._handlers.get(channel, ()))
            if key is None:
                waiters = [w for (c, _), ws in self._waiters.items() if c == channel for w in ws]
            else:
                waiters = list(self._waiters.get((channel, key), ()))
        for w in waiters:
            w.set()
        for h in handlers:
            try:
                h(key)
            except Exception:  # noqa: BLE001 - one broken handler must not silence the others
                log.exception("handler of %s failed", channel)

    @contextmanager
    def watch(self, channel: str, key: object) -> Iterator[asyncio.Event]:
        """An ``asyncio.Event`` (of the running loop) set by every publish to ``(channel, key)``
        while the block runs. Register before reading the state it announces: a publish between
        the read and the wait then leaves the event set, and nothing is missed."""
        k = (channel, str(key))
        w = _Waiter()
        with self._lock:
            self._waiters[k].add(w)
        try:
            yield w.event
        finally:
            with self._lock:
                self._waiters[k].discard(w)
                if not self._waiters[k]:
                    del self._waiters[k]


def pg_notify(s: Session, channel: str, key: object = None) -> None:
    """``pg_notify(channel, key)`` in ``s``'s transaction on PostgreSQL (delivered at its commit);
    nothing on SQLite, where the in-process ``Hub`` is the only messenger."""
    if s.get_bind().dialect.name == "postgresql":
        s.exec(text("SELECT pg_notify(:c, :k)"), params={"c": channel, "k": "" if key is None else str(key)})


class PgListener:
    """A thread that LISTENs on ``channels`` with its own PostgreSQL connection and publishes each
    notification into ``hub``; reconnects (after ``retry_s``) when the connection drops, and then
    publishes ``None`` on every channel. ``ready`` is set while it listens."""

    def __init__(self, db_url: str, hub: Hub, channels: tuple[str, ...] = CHANNELS, *, retry_s: float = 1.0):
        u = make_url(db_url)
        self.conninfo = u.set(drivername="postgresql").render_as_string(hide_password=False)
        self.hub, self.channels, self.retry_s = hub, channels, retry_s
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="inferprep-listen")

    def start(self) -> PgListener:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        import psycopg
        from psycopg import sql
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10) as conn:
                    for ch in self.channels:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(ch)))
                    self.ready.set()
                    for ch in self.channels:       # whatever was sent while nobody listened
                        self.hub.publish(ch, None)
                    while not self._stop.is_set():
                        for n in conn.notifies(timeout=0.5):
                            self.hub.publish(n.channel, n.payload or None)
            except Exception as e:  # noqa: BLE001 - the database went away: retry, waiters poll meanwhile
                log.warning("LISTEN connection lost (%s: %s); reconnecting in %g s", type(e).__name__, e, self.retry_s)
            finally:
                self.ready.clear()
            self._stop.wait(self.retry_s)


def listen(db_url: str, hub: Hub, channels: tuple[str, ...] = CHANNELS) -> PgListener | None:
    """Start a ``PgListener`` when ``db_url`` is PostgreSQL; None on SQLite (one process: the hub suffices)."""
    return PgListener(db_url, hub, channels).start() if is_postgres(db_url) else None
