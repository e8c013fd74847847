"""The one settings class of the platform (pydantic-settings).

Every field reads an ``INFERPREP_*`` environment variable (``INFERPREP_DATA_DIR``,
``INFERPREP_DATABASE_URL``, ``INFERPREP_HOST``, ...); ``inferprep serve`` options override them.
Local mode keeps an SQLite file in the user's data directory (platformdirs); a hosted
deployment passes a PostgreSQL URL instead.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import platformdirs
from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MAX_CODE_BYTES = 256 * 1024


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("inferprep", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INFERPREP_", extra="ignore")

    host: str = Field("127.0.0.1", description="address `serve` binds")
    port: int = Field(8000, ge=1, le=65535, description="port `serve` binds")
    data_dir: Path = Field(default_factory=default_data_dir, description="where the SQLite database lives")
    database_url: str | None = Field(None, description="SQLAlchemy URL; default sqlite:///<data_dir>/inferprep.db")
    grading_threads: int = Field(2, ge=0, le=64, description="embedded worker threads (0: no embedded worker)")
    device: str = Field("auto", pattern="^(auto|cpu|cuda)$", description="device for gradings from the web")
    max_code_bytes: int = Field(MAX_CODE_BYTES, ge=1024, description="largest submission, bytes of UTF-8")
    lease_seconds: float = Field(120.0, gt=0, description="a claimed job's lease; heartbeats renew it")
    max_attempts: int = Field(2, ge=1, description="claims of one job before it ends as an internal error")
    # cohort mode (issue 5; see cohort_settings.py for what these mean and the checks on start)
    cohort_mode: bool = Field(False, description="accounts, roles and instructors instead of one local user")
    environment: str = Field("development", pattern="^(development|production)$")
    secret_key: str = Field("changethis", description="keys session and API-token digests and CSRF tokens")
    session_hours: float = Field(12.0, gt=0, description="a sign-in lasts this long")
    cookie_secure: bool = Field(False, description="send the session cookie over HTTPS only (set behind TLS)")
    queue_limit: int = Field(500, ge=1, description="queued jobs before new submissions get 429")
    allow_unsandboxed: bool = Field(False, description="cohort mode: grade without bubblewrap anyway")
    worker_devices: str = Field("", pattern="^(|cpu|cuda|cpu,cuda|cuda,cpu)$",
                                description="devices the grading workers offer (e.g. cuda,cpu); default: this machine's")

    @model_validator(mode="after")
    def _no_placeholder_secret(self):
        from .cohort_settings import check_secret
        check_secret(self)
        return self

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'inferprep.db'}"

    @property
    def is_sqlite(self) -> bool:
        return self.db_url.startswith("sqlite")


@lru_cache
def get_settings() -> Settings:
    return Settings()
