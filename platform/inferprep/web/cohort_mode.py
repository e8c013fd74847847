"""Cohort mode on top of the local-mode app: ``install(app, settings)``.

What it changes, without touching the pages and API of local mode:

- ``deps.account`` (and so ``deps.current_user``) becomes the signed-in user (an API token in
  ``Authorization: Bearer``, else the session cookie); anyone else gets 401 on ``/api``, from an
  htmx request or when asking for JSON, and a redirect to ``/login`` on a page. Every service
  call of local mode is already scoped by that user id, so a student sees only their own
  drafts, submissions and progress. These are hooks in ``app.state`` (``sign_in``, ``admit``),
  not ``dependency_overrides``, which FastAPI would analyse again on every request.
- ``deps.assignments`` gives the exercises assigned to the student's cohorts, with their
  deadlines (the "Assigned to me" filter, the badge on an exercise's page).
- ``deps.admission`` applies backpressure: a new grading (a submission, or a retry the student
  asks for) while the queue is full or the student's hourly limit is spent answers 429 with
  ``Retry-After``. The check runs in the transaction that inserts the submission, under the
  submission gate (``queue.take_gate``), so concurrent requests cannot overshoot the limits.
- CSRF: every POST/PUT/PATCH/DELETE that carries the session cookie must carry the session's
  CSRF token (``X-CSRF-Token`` header or a ``csrf_token`` form field); ``static/cohort.js``
  adds it to forms, htmx and fetch. Requests authenticated by a bearer token carry no ambient
  credential and need none. Sign-in and sign-up use a double-submit cookie instead.
- The sign-in, account, cohort and instructor routers, and ``cohort(request)`` for templates.
- Grading untrusted code without bubblewrap is refused unless ``allow_unsandboxed`` is set.

Who is asking (``signed_in``, ``SignedIn``, the cookies) is in ``accounts``, below this module and
the routers it installs: a router imports from there, never from here, or the imports would run
in a circle. The app factory for ``uvicorn --factory --workers N`` is ``app.create_from_env``.
"""

from __future__ import annotations

from functools import partial
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from starlette.datastructures import Headers
from starlette.requests import cookie_parser

from .. import auth, cohorts
from ..cohorts import TooManyRequests
from ..settings import Settings
from .accounts import (PRE_COOKIE, SESSION_COOKIE, LoginRequired, SignedIn, csrf_for,  # noqa: F401 - also
                       new_pre_token, safe_next, signed_in, signed_in_user)         # cohort_mode's names

UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
MAX_FORM_BYTES = 4 * 1024 * 1024
OWN_TOKEN_PATHS = {"/login", "/signup"}


class UnsandboxedRefused(RuntimeError):
    pass


def template_context(request: Request) -> dict | None:
    """``cohort(request)`` in templates: None in local mode."""
    if not getattr(request.app.state, "cohort_mode", False):
        return None
    user = getattr(request.state, "user", None)
    return {"user": user, "csrf": csrf_for(request),
            "teaches": bool(user and (user.is_instructor or user.is_admin))}


# -- CSRF -----------------------------------------------------------------------------------------
class CSRFMiddleware:
    """Pure ASGI (it buffers and replays a form body to read its ``csrf_token`` field)."""

    def __init__(self, app, secret: str):
        self.app, self.secret = app, secret

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in UNSAFE:
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        cookies = cookie_parser(headers.get("cookie", ""))
        session = cookies.get(SESSION_COOKIE)
        if headers.get("authorization") or not session or scope["path"] in OWN_TOKEN_PATHS:
            # a bearer token, no session, or sign-in and sign-up (they check their own token)
            return await self.app(scope, receive, send)
        presented = headers.get("x-csrf-token")
        body = b""
        if not presented and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            more = True
            while more:
                msg = await receive()
                body += msg.get("body", b"")
                more = msg.get("more_body", False)
                if len(body) > MAX_FORM_BYTES:
                    return await PlainTextResponse("form too large", status_code=413)(scope, receive, send)
            presented = (parse_qs(body.decode("latin-1")).get("csrf_token") or [""])[0]
        if not auth.csrf_ok(self.secret, session, presented):
            msg = "missing or stale CSRF token: reload the page and try again"
            if scope["path"].startswith("/api/"):
                return await JSONResponse({"detail": msg}, status_code=403)(scope, receive, send)
            return await PlainTextResponse(msg, status_code=403)(scope, receive, send)
        if body:
            sent = False

            async def replay():
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()
            return await self.app(scope, replay, send)
        return await self.app(scope, receive, send)


# -- installation ---------------------------------------------------------------------------------
def refuse_unsandboxed(settings: Settings) -> str:
    from ..runner.sandbox import sandbox_mode
    mode = sandbox_mode()
    if mode != "bwrap" and not settings.allow_unsandboxed:
        raise UnsandboxedRefused(
            "cohort mode grades other people's code and bubblewrap is not available here (install the "
            "`bubblewrap` package, or run grading with `inferprep worker` on a machine that has it and "
            "serve with --grading-threads 0); --allow-unsandboxed / INFERPREP_ALLOW_UNSANDBOXED=1 "
            "grades without isolation anyway")
    return mode


def install(app: FastAPI, settings: Settings) -> None:
    from .responses import error_response, wants_json
    from .templating import templates
    from . import routes_auth, routes_cohort, routes_cohort_interviews, routes_instructor
    if settings.grading_threads:
        refuse_unsandboxed(settings)
    app.state.cohort_mode = True
    if settings.worker_devices:   # the workers run elsewhere: GPU jobs even from a CPU-only web host
        app.state.devices = tuple(settings.worker_devices.split(","))
    app.state.sign_in = signed_in          # deps.account: who is asking
    app.state.admit = partial(cohorts.admit, queue_limit=settings.queue_limit)
    app.add_middleware(CSRFMiddleware, secret=settings.secret_key)

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired):
        if wants_json(request):
            return JSONResponse({"detail": "sign in, or send an API token as `Authorization: Bearer ipt_...`"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        if request.headers.get("hx-request") == "true":
            # htmx would follow a redirect and swap the sign-in page into the page: say it instead
            return PlainTextResponse("signed out: sign in again", status_code=401)
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)

    @app.exception_handler(TooManyRequests)
    async def too_many(request: Request, exc: TooManyRequests):
        resp = error_response(request, 429, str(exc))
        resp.headers["Retry-After"] = str(exc.retry_after)
        return resp

    for r in (routes_auth.router, routes_auth.api_router, routes_cohort.router, routes_instructor.router,
              routes_instructor.api_router):
        app.include_router(r)
    templates().env.globals["cohort"] = template_context
    routes_cohort_interviews.install(app)      # scheduled mock interviews (issue 18)
