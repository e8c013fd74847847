"""Migrations c001 (cohort mode) and c002 (limits, sign-in throttle, salts) on SQLite: one head (a
new migration must revise the latest), an upgrade over a database that already holds local-mode
data, and a clean downgrade."""

from __future__ import annotations

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import text

from inferprep import db


def test_one_head(tmp_path):
    heads = ScriptDirectory.from_config(db.alembic_config(f"sqlite:///{tmp_path}/x.db")).get_heads()
    assert len(heads) == 1, f"several migration heads {heads}: revise the latest one"


def test_upgrade_over_local_data_then_down_and_up(tmp_path):
    url = f"sqlite:///{tmp_path}/local.db"
    db.upgrade(url, "0001")
    with db.engine_for(url).begin() as c:
        c.execute(text("INSERT INTO user (id, name, is_admin, created_at) VALUES (1, 'you', 0, '2026-01-01')"))
    db.upgrade(url)
    with db.engine_for(url).connect() as c:
        assert c.execute(text("SELECT is_instructor FROM user WHERE id = 1")).scalar() == 0
        tables = {r[0] for r in c.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))}
    assert {"authsession", "cohortpolicy", "assignment"} <= tables
    command.downgrade(db.alembic_config(url), "0001")
    with db.engine_for(url).connect() as c:
        tables = {r[0] for r in c.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))}
        assert c.execute(text("SELECT name FROM user WHERE id = 1")).scalar() == "you"
    assert not {"authsession", "cohortpolicy", "assignment"} & tables
    db.upgrade(url)


def test_c002_adds_the_gate_row_the_throttle_table_and_the_salt_column(tmp_path):
    url = f"sqlite:///{tmp_path}/c002.db"
    db.upgrade(url, "c001")
    with db.engine_for(url).begin() as c:
        c.execute(text("INSERT INTO user (id, name, is_admin, is_instructor, created_at) "
                       "VALUES (1, 'you', 0, 0, '2026-01-01')"))
        c.execute(text("INSERT INTO exercise (slug, title, track, difficulty, kind, synced_at) "
                       "VALUES ('x', 'X', 'serving', 'easy', 'implement', '2026-01-01')"))
        c.execute(text("INSERT INTO submission (user_id, slug, kind, source, code, device, state, attempt, passed, "
                       "created_at) VALUES (1, 'x', 'run', 'web', 'pass', 'cpu', 'done', 1, 1, '2026-01-01')"))
    db.upgrade(url)
    with db.engine_for(url).connect() as c:
        assert c.execute(text("SELECT name, taken FROM submissiongate")).all() == [("submissions", 0)]
        assert c.execute(text("SELECT salt FROM submission")).scalar() is None     # graded before salts
        assert c.execute(text("SELECT count(*) FROM signinthrottle")).scalar() == 0
    command.downgrade(db.alembic_config(url), "c001")
    with db.engine_for(url).connect() as c:
        tables = {r[0] for r in c.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))}
        cols = {r[1] for r in c.execute(text("PRAGMA table_info(submission)"))}
        assert c.execute(text("SELECT code FROM submission")).scalar() == "pass"
    assert not {"submissiongate", "signinthrottle"} & tables and "salt" not in cols
    db.upgrade(url)
