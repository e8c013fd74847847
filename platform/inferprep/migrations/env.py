"""Alembic environment: one for SQLite (batch mode) and PostgreSQL. Configured in code by db.py."""

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

from inferprep import models  # noqa: F401 - registers the tables on SQLModel.metadata
from inferprep import cohort_models  # noqa: F401 - and the cohort-mode tables
from inferprep import interview_models  # noqa: F401 - and the interview tables (c004)

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_offline() -> None:
    url = config.get_main_option("sqlalchemy.url")
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = engine_from_config(config.get_section(config.config_ini_section, {}),
                                     prefix="sqlalchemy.", poolclass=pool.NullPool)
    with connectable.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
