"""Engine, sessions and migrations.

``engine_for(url)`` builds one engine per URL (SQLite gets WAL, a busy timeout and foreign keys;
PostgreSQL needs nothing special). ``upgrade(url)`` applies the Alembic migrations in
``inferprep/migrations`` (the same scripts for SQLite and PostgreSQL; SQLite alters tables in
batch mode). ``prepare(url)`` is what ``serve`` runs on start: upgrade, the local user, and the
exercise table synced from the catalog.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine, select

from . import catalog
from .models import LOCAL_USER_ID, Exercise, User, utcnow

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def engine_for(url: str) -> Engine:
    """One shared engine per URL; creates the SQLite file's folder."""
    with _lock:
        if url not in _engines:
            u = make_url(url)
            if u.get_backend_name() == "sqlite":
                if u.database and u.database != ":memory:":
                    Path(u.database).parent.mkdir(parents=True, exist_ok=True)
                eng = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
                event.listen(eng, "connect", _sqlite_pragmas)
            else:
                # up to 40 connections, one per thread of the web's thread pool (anyio's default
                # 40); the web admits no more requests at once than that (``web.inflight``)
                eng = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=30, pool_timeout=120)
            _engines[url] = eng
        return _engines[url]


def pool_capacity(url: str) -> int:
    """The most connections the engine of ``url`` holds at once (its pool's size plus overflow;
    40 for a pool without a bound, one connection per thread)."""
    pool = engine_for(url).pool
    overflow = getattr(pool, "_max_overflow", None)      # QueuePool's bound (no public accessor)
    return pool.size() + overflow if isinstance(overflow, int) and overflow >= 0 else 40


def insert_or_ignore(s: Session, model, **values) -> None:
    """``INSERT ... ON CONFLICT DO NOTHING`` (SQLite and PostgreSQL): the row, unless its key exists."""
    from sqlalchemy.dialects import postgresql, sqlite
    dialect = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    s.exec(dialect.insert(model).values(**values).on_conflict_do_nothing())


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    with Session(engine_for(url), expire_on_commit=False) as s:
        yield s


def alembic_config(url: str):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Apply the migrations up to ``revision`` (idempotent). For an SQLite file, a lock file
    beside it serializes concurrent upgrades (``serve`` starting while ``inferprep grade``
    records into a fresh database)."""
    from alembic import command
    engine_for(url)  # creates the SQLite folder
    u = make_url(url)
    if u.get_backend_name() == "sqlite" and u.database and u.database != ":memory:":
        import fcntl
        with open(f"{u.database}.migrate.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            command.upgrade(alembic_config(url), revision)
    else:
        command.upgrade(alembic_config(url), revision)


def ensure_local_user(s: Session) -> User:
    user = s.get(User, LOCAL_USER_ID)
    if user is None:
        user = User(id=LOCAL_USER_ID, name="you")
        s.add(user)
        s.commit()
        if s.get_bind().dialect.name == "postgresql":   # an explicit id does not move the sequence
            s.exec(text("SELECT setval(pg_get_serial_sequence('\"user\"', 'id'), "
                        "(SELECT MAX(id) FROM \"user\"))"))
            s.commit()
    return user


def sync_exercises(s: Session, exercises: list[catalog.Exercise] | None = None) -> int:
    """Copy the catalog's metadata into the exercise table; returns the number of exercises."""
    if exercises is None:
        exercises = catalog.well_formed_exercises()
    rows = {r.slug: r for r in s.exec(select(Exercise)).all()}
    for ex in exercises:
        row = rows.get(ex.slug) or Exercise(slug=ex.slug, title="", track="", difficulty="", kind="")
        row.title, row.track = ex.meta.title, ex.meta.track.value
        row.difficulty, row.kind, row.synced_at = ex.meta.difficulty.value, ex.meta.kind.value, utcnow()
        s.add(row)
    s.commit()
    return len(exercises)


def prepare(url: str) -> None:
    """Migrate, create the local user and sync the catalog: what local mode does on start."""
    upgrade(url)
    with session_scope(url) as s:
        ensure_local_user(s)
        sync_exercises(s)
