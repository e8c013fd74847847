"""The FastAPI application: ``create_app(settings)``.

On start (lifespan): apply the migrations, create the local user, sync the catalog, end as
internal errors the jobs a previous embedded worker left running, start the embedded grading
worker and, on PostgreSQL, a ``notify.PgListener`` that relays other processes' notifications
(jobs queued, progress, verdicts, cancels) into ``app.state.hub``, the process's wake-ups.
``grade`` replaces the judge and ``scratch`` the scratch runner (tests inject fakes).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import db, notify, queue
from ..services import ServiceError
from ..settings import Settings, get_settings
from ..worker import GradeFn, ScratchFn, Worker, embedded_prefix, embedded_worker_alive
from .api import exercises as api_exercises
from .api import followups as api_followups
from .api import progress as api_progress
from .api import scratch as api_scratch
from .api import submissions as api_submissions
from .bodycap import BodyCheck
from .inflight import InFlightLimit
from .pages import dashboard, events, exercises, leaderboard, progress, submissions
from .responses import error_response, wants_json  # noqa: F401 - app's names too
from .pages import interview as interview_pages
from .pages import followups as followups_pages

log = logging.getLogger("inferprep.web")
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"


def available_devices() -> tuple[str, ...]:
    import torch
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


def create_app(settings: Settings | None = None, *, grade: GradeFn | None = None,
               devices: tuple[str, ...] | None = None, scratch: ScratchFn | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        db.prepare(settings.db_url)
        with db.session_scope(settings.db_url) as s:
            n = queue.fail_orphans(s, embedded_prefix(), alive=embedded_worker_alive)
        if n:
            log.warning("%d submission(s) were being graded when the server last stopped; marked retryable", n)
        worker = Worker(settings.db_url, threads=settings.grading_threads, devices=app.state.devices,
                        lease_s=settings.lease_seconds, max_attempts=settings.max_attempts, grade=grade,
                        scratch=scratch, hub=app.state.hub)
        app.state.worker = worker
        if settings.grading_threads:
            worker.start()
        listener = notify.listen(settings.db_url, app.state.hub)
        try:
            yield
        finally:
            if listener is not None:
                listener.stop()
            worker.stop()

    app = FastAPI(title="inferprep", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Graded practice for LLM inference-engineering interviews. "
                              "The pages and this API share one service layer.")
    app.state.settings = settings
    app.state.devices = devices or available_devices()
    app.state.worker = None
    app.state.hub = notify.Hub()
    # event streams re-read at least this often (a lost notification; a worker over SQLite in
    # another process, which no notification reaches, when this process grades nothing itself)
    app.state.stream_poll_s = notify.poll_seconds(settings.db_url, same_process=settings.grading_threads > 0)
    app.state.stream_slots = events.StreamSlots()
    app.state.cohort_mode = False
    app.state.sign_in = None    # who is asking (deps.account), and what a new grading must pass
    app.state.admit = None      # (deps.admission): nobody and nothing in local mode; cohort mode sets both
    if settings.cohort_mode:   # accounts, roles, CSRF, instructors (issue 5)
        from .cohort_mode import install
        install(app, settings)

    # refuse oversized bodies before reading them (the precise cap is checked on the decoded code)
    # and JSON that is not UTF-8
    app.add_middleware(BodyCheck, max_bytes=3 * settings.max_code_bytes + 65536,
                       what=f"code is limited to {settings.max_code_bytes // 1024} KiB")

    # no more requests at once than database connections, less the embedded grading threads'
    app.add_middleware(InFlightLimit, limit=max(4, db.pool_capacity(settings.db_url) - settings.grading_threads - 2))

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError):
        return error_response(request, exc.http_status, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return error_response(request, exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        if errors and all(e.get("loc", ("",))[0] == "path" for e in errors):
            # /submissions/abc: no resource has that id, whatever its type; a 404 as for any other
            return error_response(request, 404, f"no page at {request.url.path}")
        if wants_json(request):
            return JSONResponse({"detail": jsonable_errors(exc)}, status_code=422)
        return error_response(request, 422, "; ".join(e.get("msg", "") for e in exc.errors()))

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for r in (api_exercises.router, api_submissions.router, api_progress.router, api_scratch.router,
              api_followups.router):
        app.include_router(r, prefix="/api")
    for r in (dashboard.router, exercises.router, submissions.router, events.router, progress.router,
              followups_pages.router, leaderboard.router):
        app.include_router(r)
    interview_pages.install(app)   # mock interviews (issue 18): routes and the countdown's template globals

    @app.get("/docs", include_in_schema=False)
    def docs():
        # Swagger UI from the vendored copy: the platform serves without network access.
        swagger = "/static/vendor/swagger-ui-dist-5.18.2"
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="inferprep API",
                                   swagger_js_url=f"{swagger}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{swagger}/swagger-ui.css",
                                   swagger_favicon_url="/static/favicon.svg")

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    return app


def jsonable_errors(exc: RequestValidationError) -> list[dict]:
    return [{k: (v if isinstance(v, (str, int, float, list, type(None))) else str(v)) for k, v in e.items()
             if k in ("loc", "msg", "type")} for e in exc.errors()]


def create_from_env() -> FastAPI:
    """``uvicorn --factory inferprep.web.app:create_from_env``: a cohort-mode app, settings from
    INFERPREP_* (cohort mode whatever INFERPREP_COHORT_MODE says)."""
    settings = Settings()
    if not settings.cohort_mode:
        settings = Settings(cohort_mode=True)
    return create_app(settings)
