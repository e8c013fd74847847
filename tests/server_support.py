"""A real uvicorn serving an app object on a free loopback port, in a thread (browser tests that
need a fake judge inside the server, so they cannot start ``inferprep serve``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serving(app, start_timeout_s: float = 30.0) -> Iterator[str]:
    """Serve ``app``; yields its base URL (``http://127.0.0.1:PORT``); stops it on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + start_timeout_s
    while not srv.started:
        if not t.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        t.join(10)
