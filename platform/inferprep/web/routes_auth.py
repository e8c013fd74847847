"""Sign-in, sign-up with a join code, sign-out, password change, API tokens (cohort mode).

Sign-in is throttled per account and per client address (``auth.authenticate``): a spent
budget answers 429 with ``Retry-After`` and a page that says when to try again. Sign-up answers
a new and a known email alike (303 to the sign-in page, no session), so it cannot be used to
find out who has an account."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from .. import auth
from ..auth import UserPublic
from ..cohorts import TooManyRequests
from ..services import ServiceError
from .accounts import PRE_COOKIE, SESSION_COOKIE, SignedIn, new_pre_token, safe_next
from .deps import RowId, SessionDep, SettingsDep
from .forms import FormDep
from .templating import templates

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["account"])


SIGNED_UP = ("Sign-up received: sign in below with your email and password. If that email already had an "
             "account, it keeps its password, and it joined the cohort only if you entered that password.")


def _page(request: Request, name: str, ctx: dict, status: int = 200, error: ServiceError | None = None):
    pre = request.cookies.get(PRE_COOKIE) or new_pre_token()
    resp = templates().TemplateResponse(request, name, {**ctx, "csrf": pre, "nav": "account"}, status_code=status)
    if request.cookies.get(PRE_COOKIE) != pre:
        resp.set_cookie(PRE_COOKIE, pre, httponly=True, samesite="lax", path="/",
                        secure=request.app.state.settings.cookie_secure)
    if isinstance(error, TooManyRequests):
        resp.headers["Retry-After"] = str(error.retry_after)
    return resp


def client_address(request: Request) -> str | None:
    """The address sign-in attempts are throttled by (behind a proxy: see ``auth``'s docstring)."""
    return request.client.host if request.client else None


def _pre_ok(request: Request, form: dict) -> bool:
    cookie, field = request.cookies.get(PRE_COOKIE, ""), str(form.get("csrf_token", ""))
    return bool(cookie) and hmac.compare_digest(cookie, field)


def _signed_in_response(request: Request, s, settings, user_id: int, target: str):
    token = auth.create_session(s, user_id, secret=settings.secret_key, hours=settings.session_hours)
    resp = RedirectResponse(safe_next(target), status_code=303)
    resp.set_cookie(SESSION_COOKIE, token, max_age=int(settings.session_hours * 3600), httponly=True,
                    samesite="lax", secure=settings.cookie_secure, path="/")
    return resp


@router.get("/login")
def login_page(request: Request, next: str = "/", signed_up: int = 0):
    return _page(request, "auth_login.html", {"next": safe_next(next), "error": None, "email": "",
                                              "notice": SIGNED_UP if signed_up else None})


@router.post("/login")
def login(request: Request, form: FormDep, s: SessionDep, settings: SettingsDep):
    target = safe_next(str(form.get("next", "/")))
    email = str(form.get("email", ""))
    if not _pre_ok(request, form):
        return _page(request, "auth_login.html", {"next": target, "email": email,
                                                  "error": "the form expired; try again"}, 403)
    try:
        user = auth.authenticate(s, email, str(form.get("password", "")), address=client_address(request))
    except ServiceError as e:
        return _page(request, "auth_login.html", {"next": target, "email": email, "error": str(e)},
                     e.http_status, error=e)
    return _signed_in_response(request, s, settings, user.id, target)


@router.get("/signup")
def signup_page(request: Request, code: str = ""):
    return _page(request, "auth_signup.html", {"code": code[:64], "error": None, "email": "", "name": ""})


@router.post("/signup")
def signup(request: Request, form: FormDep, s: SessionDep, settings: SettingsDep):
    fields = {k: str(form.get(k, "")) for k in ("code", "email", "name")}
    if not _pre_ok(request, form):
        return _page(request, "auth_signup.html", {**fields, "error": "the form expired; try again"}, 403)
    try:
        auth.sign_up(s, join_code=fields["code"], email=fields["email"], name=fields["name"],
                     password=str(form.get("password", "")))
    except ServiceError as e:
        return _page(request, "auth_signup.html", {**fields, "error": str(e)}, e.http_status)
    # the same answer whether the email was new or known (no session either way): no enumeration
    return RedirectResponse("/login?signed_up=1&next=/cohort", status_code=303)


@router.post("/logout")
def logout(request: Request, s: SessionDep, settings: SettingsDep, user: SignedIn):
    auth.end_session(s, request.cookies.get(SESSION_COOKIE, ""), secret=settings.secret_key)
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(SESSION_COOKIE, path="/")
    return resp


def _account(request: Request, s, user, status: int = 200, **extra):
    ctx = {"me": user, "tokens": auth.list_api_tokens(s, user.id), "new_token": None, "message": None,
           "error": None, "nav": "account", **extra}
    return templates().TemplateResponse(request, "auth_account.html", ctx, status_code=status)


@router.get("/account")
def account_page(request: Request, s: SessionDep, user: SignedIn):
    return _account(request, s, user)


@router.post("/account/password")
def change_password(request: Request, form: FormDep, s: SessionDep, settings: SettingsDep, user: SignedIn):
    if str(form.get("new", "")) != str(form.get("repeat", "")):
        return _account(request, s, user, error="the new passwords differ", status=422)
    try:
        auth.change_password(s, user, str(form.get("old", "")), str(form.get("new", "")),
                             secret=settings.secret_key, keep_token=request.cookies.get(SESSION_COOKIE),
                             address=client_address(request))
    except ServiceError as e:
        resp = _account(request, s, user, error=str(e), status=e.http_status)
        if isinstance(e, TooManyRequests):
            resp.headers["Retry-After"] = str(e.retry_after)
        return resp
    return _account(request, s, user, message="Password changed; your other sessions are signed out.")


@router.post("/account/tokens")
def create_token(request: Request, form: FormDep, s: SessionDep, settings: SettingsDep, user: SignedIn):
    _, token = auth.create_api_token(s, user.id, str(form.get("name", "")), secret=settings.secret_key)
    return _account(request, s, user, new_token=token)


@router.post("/account/tokens/{token_id}/delete")
def delete_token(token_id: RowId, s: SessionDep, user: SignedIn):
    auth.revoke_api_token(s, user.id, token_id)
    return RedirectResponse("/account", status_code=303)


@api_router.get("/me", response_model=UserPublic)
def me(user: SignedIn) -> UserPublic:
    """Who this token or session belongs to."""
    return UserPublic.of(user)
