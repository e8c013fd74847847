"""Who is asking, in cohort mode: the signed-in user from an API token (``Authorization:
Bearer``) or the session cookie, and what the cohort routers depend on (``SignedIn``, the
cookies' names, the sign-in form's token, a safe place to go after signing in).

Below ``cohort_mode`` (which installs ``signed_in`` as ``app.state.sign_in`` and the routers)
and below every router, so a router imports from here, never from ``cohort_mode``;
``cohort_mode`` re-exports these names.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request

from .. import auth
from ..models import User
from . import deps

SESSION_COOKIE = "inferprep_session"
PRE_COOKIE = "inferprep_csrf"          # double-submit token for the sign-in and sign-up forms


class LoginRequired(Exception):
    """No valid session or token: 401 on the API, a redirect to /login on a page."""


# -- who is asking --------------------------------------------------------------------------------
def signed_in(request: Request, s: deps.SessionDep) -> User:
    secret = request.app.state.settings.secret_key
    header = request.headers.get("authorization")
    if header:
        scheme, _, token = header.partition(" ")
        user = auth.token_user(s, token.strip(), secret=secret) if scheme.lower() == "bearer" else None
    else:
        user = auth.session_user(s, request.cookies.get(SESSION_COOKIE, ""), secret=secret)
    if user is None:
        raise LoginRequired()
    request.state.user = user
    return user


def signed_in_user(user: deps.Account) -> User:
    """The signed-in user (``deps.account``: looked up once per request, shared with ``CurrentUser``)."""
    if user is None:        # only in local mode, which has none of the routes that ask for it
        raise LoginRequired()
    return user


SignedIn = Annotated[User, Depends(signed_in_user)]


def csrf_for(request: Request) -> str:
    secret = request.app.state.settings.secret_key
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        return auth.csrf_token(secret, token)
    return request.cookies.get(PRE_COOKIE, "")


def new_pre_token() -> str:
    return secrets.token_urlsafe(24)


def safe_next(target: str | None) -> str:
    """A local path to go to after sign-in (never another site)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"
