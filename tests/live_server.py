"""``live_server(app)``: a real uvicorn serving ``app`` on a free loopback port, in a thread,
for the tests that need a real HTTP server (a browser, the CLI's client)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def live_server(app, start_timeout_s: float = 30.0) -> Iterator[str]:
    """Yields the server's base URL (``http://127.0.0.1:PORT``); stops it on exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + start_timeout_s
    while not srv.started:
        if time.monotonic() > deadline or not t.is_alive():
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        t.join(10)
