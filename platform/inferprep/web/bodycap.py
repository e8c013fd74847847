"""``BodyCheck``: refuse an oversized request body before reading it, and a JSON body that is not
UTF-8 with a clear message (422), before any handler runs.

Pure ASGI (a ``BaseHTTPMiddleware`` runs every request, pages included, through an extra task and
a stream of its response). Only a POST, PUT or PATCH with a JSON content type is read here: its
body is buffered (at most ``max_bytes``), checked, and handed on as one message.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

WITH_BODY = {"POST", "PUT", "PATCH"}


class BodyCheck:
    """Pure ASGI middleware. ``max_bytes``: the largest body accepted (bytes); a larger one is
    answered 413 (by its ``Content-Length`` before reading, or once the buffered JSON exceeds it).
    ``what``: how the limit reads in that message."""

    def __init__(self, app, max_bytes: int, what: str):
        self.app, self.max_bytes, self.what = app, max_bytes, what

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > self.max_bytes:
            return await self._too_large(length)(scope, receive, send)
        if scope["method"] not in WITH_BODY or "json" not in headers.get("content-type", ""):
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
            if len(body) > self.max_bytes:
                return await self._too_large(f"over {self.max_bytes}")(scope, receive, send)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as e:
            msg = f"the request body is not UTF-8 text ({e.reason} at byte {e.start})"
            return await JSONResponse({"detail": msg}, status_code=422)(scope, receive, send)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self, length: str) -> JSONResponse:
        return JSONResponse({"detail": f"the request is {length} bytes; {self.what}"}, status_code=413)
