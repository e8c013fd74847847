"""A fresh PostgreSQL database per test module (the ``pg_url`` fixture), or a skip that says why.

Tries ``INFERPREP_TEST_PG_URL``, then postgres@127.0.0.1:5432 (databases ``test`` and
``postgres``; trust auth, as CI's ``.ci/run`` sets up). The database is migrated with the
Alembic scripts, holds the synced catalog and the local user, and is dropped afterwards.
Without a server the tests skip, saying why; with ``INFERPREP_REQUIRE_POSTGRES=1`` they fail.
"""

from __future__ import annotations

import os
import uuid

import pytest

from inferprep import db

CANDIDATES = [os.environ.get("INFERPREP_TEST_PG_URL"), "postgresql+psycopg://postgres@127.0.0.1:5432/test",
              "postgresql+psycopg://postgres@127.0.0.1:5432/postgres", "postgresql+psycopg://127.0.0.1:5432/test"]


def _admin_url() -> str | None:
    from sqlalchemy import create_engine, text
    errors = []
    for url in filter(None, CANDIDATES):
        try:
            eng = create_engine(url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
            with eng.connect() as c:
                c.execute(text("select 1"))
            eng.dispose()
            return url
        except Exception as e:  # noqa: BLE001
            first = (str(getattr(e, "orig", None) or e).strip().splitlines() or [""])[0][:160]
            errors.append(f"{url.split('@')[-1]}: {type(e).__name__}: {first}")
    why = "no usable PostgreSQL (tried " + "; ".join(errors) + "); CI's .ci/run starts one"
    if os.environ.get("INFERPREP_REQUIRE_POSTGRES"):
        pytest.fail(why + " and INFERPREP_REQUIRE_POSTGRES is set")
    pytest.skip(why)


@pytest.fixture(scope="module")
def pg_url():
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    admin = _admin_url()
    name = f"inferprep_t_{uuid.uuid4().hex[:10]}"
    eng = create_engine(admin, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    db.upgrade(url)
    with db.session_scope(url) as s:
        db.ensure_local_user(s)
        db.sync_exercises(s)
    yield url
    db.engine_for(url).dispose()
    with eng.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    eng.dispose()


