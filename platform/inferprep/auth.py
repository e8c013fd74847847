"""Accounts for cohort mode: passwords, sign-in sessions, CSRF tokens and API tokens.

Passwords are argon2id hashes (pwdlib) with OWASP's minimum parameters for argon2id
(19 MiB, 2 passes, 1 lane: the OWASP Password Storage Cheat Sheet), about 0.2 s of CPU here.
Signing in with an unknown email verifies the password against a dummy hash, so the answer
takes as long as for a real account and timing does not reveal which emails exist.

Sessions are server-side rows (``AuthSession``): the cookie holds a random token, the table
its HMAC-SHA256 under ``settings.secret_key``; sign-out deletes the row, a password change
deletes every other session of the user. API tokens (``ipt_...``) are stored the same way and
shown once. The CSRF token of a session is an HMAC of its cookie token, so nothing more is
stored and it changes with every sign-in.

Errors are ``services.ServiceError`` subclasses (the web layer turns them into statuses)::

    ServiceError
     ├── BadRequest     422  an invalid email, name, password or join code
     ├── AuthFailed     401  wrong email or password, an expired session or token
     └── Conflict       409  the email is taken
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from pydantic import BaseModel
from sqlalchemy import delete
from sqlmodel import Session, select

from .cohort_models import AuthSession
from .models import ApiToken, Cohort, Membership, Role, User, utcnow
from .services import BadRequest, ServiceError

EMAIL_RE = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 256          # argon2 hashes anything, but a megabyte "password" is a DoS
API_TOKEN_PREFIX = "ipt_"


class AuthFailed(ServiceError):
    http_status = 401


class Conflict(ServiceError):
    http_status = 409


class UserPublic(BaseModel):
    """What a response may say about a user (never the password hash)."""
    id: int
    name: str
    email: str | None
    is_instructor: bool
    is_admin: bool

    @classmethod
    def of(cls, u: User) -> "UserPublic":
        return cls(id=u.id, name=u.name, email=u.email, is_instructor=u.is_instructor, is_admin=u.is_admin)


# -- passwords ------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def hasher():
    from pwdlib import PasswordHash
    from pwdlib.hashers.argon2 import Argon2Hasher
    return PasswordHash((Argon2Hasher(time_cost=2, memory_cost=19456, parallelism=1),))


@lru_cache(maxsize=1)
def dummy_hash() -> str:
    return hasher().hash(secrets.token_urlsafe(16))


def hash_password(password: str) -> str:
    check_password(password)
    return hasher().hash(password)


def check_password(password: str) -> None:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise BadRequest(f"a password has {MIN_PASSWORD} to {MAX_PASSWORD} characters")


def normal_email(email: str) -> str:
    email = (email or "").strip().lower()
    if not EMAIL_RE.match(email):
        raise BadRequest("enter an email address like name@example.org")
    return email


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not 1 <= len(name) <= 200 or any(ord(c) < 32 for c in name):
        raise BadRequest("a display name has 1 to 200 printable characters")
    return name


def create_user(s: Session, email: str, name: str, password: str, *, is_instructor: bool = False,
                is_admin: bool = False) -> User:
    email, name = normal_email(email), check_name(name)
    password_hash = hash_password(password)      # before the query: no connection held while hashing
    if s.exec(select(User.id).where(User.email == email)).first() is not None:
        raise Conflict(f"an account for {email} exists; sign in instead")
    user = User(email=email, name=name, password_hash=password_hash,
                is_instructor=is_instructor, is_admin=is_admin)
    s.add(user)
    s.commit()
    s.refresh(user)
    return user


def authenticate(s: Session, email: str, password: str) -> User:
    """The user with this email and password; ``AuthFailed`` otherwise, in the same time."""
    try:
        email = normal_email(email)
    except BadRequest:
        email = ""
    user = s.exec(select(User).where(User.email == email)).first() if email else None
    s.commit()   # back to the pool: no database connection is held through the hashing
    if len(password) > MAX_PASSWORD:
        password = password[:MAX_PASSWORD + 1]   # still verified (and wrong), in bounded time
    if user is None or not user.password_hash:
        hasher().verify(password, dummy_hash())
        raise AuthFailed("wrong email or password")
    ok, new_hash = hasher().verify_and_update(password, user.password_hash)
    if not ok:
        raise AuthFailed("wrong email or password")
    if new_hash:                       # parameters changed since it was hashed
        user.password_hash = new_hash
        s.add(user)
        s.commit()
    return user


def sign_up(s: Session, *, join_code: str, email: str, name: str, password: str) -> User:
    """A new student account in the cohort whose join code this is."""
    cohort = s.exec(select(Cohort).where(Cohort.join_code == (join_code or "").strip())).first()
    if cohort is None:
        raise BadRequest("unknown join code; ask your instructor for the cohort's code")
    user = create_user(s, email, name, password)
    s.add(Membership(user_id=user.id, cohort_id=cohort.id, role=Role.STUDENT.value))
    s.commit()
    return user


def change_password(s: Session, user: User, old: str, new: str, *, secret: str, keep_token: str | None) -> None:
    """Change the password and end every other session of the user."""
    if not user.password_hash or not hasher().verify(old, user.password_hash):
        raise AuthFailed("the current password is wrong")
    user.password_hash = hash_password(new)
    s.add(user)
    q = delete(AuthSession).where(AuthSession.user_id == user.id)
    if keep_token:
        q = q.where(AuthSession.id != digest(secret, keep_token))
    s.exec(q)
    s.commit()


# -- sessions and CSRF ----------------------------------------------------------------------------
def digest(secret: str, token: str) -> str:
    return hmac.new(secret.encode(), token.encode(), hashlib.sha256).hexdigest()


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def create_session(s: Session, user_id: int, *, secret: str, hours: float) -> str:
    """Start a session; returns the cookie token (shown nowhere else)."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    s.exec(delete(AuthSession).where(AuthSession.user_id == user_id, AuthSession.expires_at < now))
    s.add(AuthSession(id=digest(secret, token), user_id=user_id, expires_at=now + timedelta(hours=hours)))
    s.commit()
    return token


def session_user(s: Session, token: str, *, secret: str) -> User | None:
    if not token or len(token) > 100:
        return None
    row = s.get(AuthSession, digest(secret, token))
    if row is None:
        return None
    if _aware(row.expires_at) <= utcnow():
        s.delete(row)
        s.commit()
        return None
    return s.get(User, row.user_id)


def end_session(s: Session, token: str, *, secret: str) -> None:
    s.exec(delete(AuthSession).where(AuthSession.id == digest(secret, token)))
    s.commit()


def csrf_token(secret: str, session_token: str) -> str:
    return digest(secret, "csrf:" + session_token)


def csrf_ok(secret: str, session_token: str, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(csrf_token(secret, session_token), presented)


# -- API tokens -----------------------------------------------------------------------------------
def create_api_token(s: Session, user_id: int, name: str, *, secret: str) -> tuple[ApiToken, str]:
    """A new API token; returns its row and the token itself (shown once)."""
    name = (name or "").strip()[:200] or "token"
    token = API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken(user_id=user_id, name=name, token_hash=digest(secret, token))
    s.add(row)
    s.commit()
    s.refresh(row)
    return row, token


def token_user(s: Session, token: str, *, secret: str) -> User | None:
    if not token.startswith(API_TOKEN_PREFIX) or len(token) > 100:
        return None
    row = s.exec(select(ApiToken).where(ApiToken.token_hash == digest(secret, token))).first()
    if row is None:
        return None
    now = utcnow()
    if row.last_used_at is None or (now - _aware(row.last_used_at)).total_seconds() > 60:
        row.last_used_at = now      # at most one write a minute per token
        s.add(row)
        s.commit()
    return s.get(User, row.user_id)


def list_api_tokens(s: Session, user_id: int) -> list[ApiToken]:
    return list(s.exec(select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)).all())


def revoke_api_token(s: Session, user_id: int, token_id: int) -> None:
    s.exec(delete(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user_id))
    s.commit()
