"""The error answer of every route: JSON on the API (or when the client asks for JSON), else the
error page. Below ``app`` and the routers alike (``app`` re-exports both names)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse

from .templating import templates


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", "")


def error_response(request: Request, status: int, message: str):
    if wants_json(request):
        return JSONResponse({"detail": message}, status_code=status)
    titles = {404: "Not found", 413: "Too large", 422: "Not accepted", 403: "Locked"}
    return templates().TemplateResponse(request, "error.html", {"status": status, "message": message,
                                        "title": titles.get(status, "Error")}, status_code=status)
