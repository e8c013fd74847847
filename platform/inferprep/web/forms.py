"""Strict form parsing: the code a user posts must be UTF-8 (422 otherwise), never silently
"repaired" with replacement characters as a lenient parser would.

``FormDep`` reads the form as a dependency, on the event loop, so that a handler taking it can be
a plain ``def``: FastAPI runs those in its thread pool, where their database calls and password
hashing do not stall every other request of the process (an ``async def`` handler runs on the
event loop itself)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import Depends, Request

from ..services import BadRequest, NotUTF8


async def read_form(request: Request) -> dict[str, str | bytes]:
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("application/x-www-form-urlencoded"):
        body = await request.body()
        try:
            return dict(parse_qsl(body.decode("ascii"), keep_blank_values=True, encoding="utf-8", errors="strict"))
        except UnicodeDecodeError:
            raise NotUTF8("the form is not UTF-8 text") from None
    if ctype.startswith("multipart/form-data"):
        form = await request.form()
        out: dict[str, str | bytes] = {}
        for k, v in form.multi_items():
            out[k] = await v.read() if hasattr(v, "read") else v
        return out
    raise BadRequest("expected a form (application/x-www-form-urlencoded or multipart/form-data)")


FormDep = Annotated[dict[str, str | bytes], Depends(read_form)]
