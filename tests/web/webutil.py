"""Helpers the web tests import (kept out of conftest.py, which pytest imports by name)."""

from __future__ import annotations

import time


def wait_done(client, sub_id: int, timeout: float = 30.0, api: str = "/api/submissions") -> dict:
    """The job ``sub_id`` read from ``api`` (``/api/scratch`` for a scratch run) once it is done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = client.get(f"{api}/{sub_id}").json()
        if d["state"] == "done":
            return d
        time.sleep(0.05)
    raise AssertionError(f"submission {sub_id} not done after {timeout} s: {d}")
