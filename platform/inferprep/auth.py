"""Accounts for cohort mode: passwords, sign-in sessions, CSRF tokens and API tokens.

Passwords are argon2id hashes (pwdlib) with OWASP's minimum parameters for argon2id
(19 MiB, 2 passes, 1 lane: the OWASP Password Storage Cheat Sheet), about 0.2 s of CPU here.
Signing in with an unknown email verifies the password against a dummy hash, so the answer
takes as long as for a real account and timing does not reveal which emails exist.

Sign-in is throttled per account and per client address (``SignInThrottle`` rows, shared by
every web process): at most ``ACCOUNT_FAILURES`` failed sign-ins per account and
``ADDRESS_FAILURES`` per address in a window of ``THROTTLE_WINDOW_S``; then every attempt, with
the right password too, answers ``SignInThrottled`` (429, ``retry_after``) until the window
ends. An attempt is counted *before* its password is checked (a conditional increment, atomic
on SQLite and PostgreSQL), so parallel guesses cannot outrun the count; a successful sign-in
clears its account's count and takes back its own count from the address. Unknown emails are
throttled the same way, so a lockout reveals nothing either. Behind a reverse proxy, the client
address is the proxy's unless uvicorn trusts it (``--forwarded-allow-ips``).

Sign-up answers the same for a new and a known email (``sign_up``: no account enumeration).

Sessions are server-side rows (``AuthSession``): the cookie holds a random token, the table
its HMAC-SHA256 under ``settings.secret_key``; sign-out deletes the row, a password change
deletes every other session of the user. API tokens (``ipt_...``) are stored the same way and
shown once. The CSRF token of a session is an HMAC of its cookie token, so nothing more is
stored and it changes with every sign-in.

Errors are ``services.ServiceError`` subclasses (the web layer turns them into statuses)::

    ServiceError
     ├── BadRequest     422  an invalid email, name, password or join code
     ├── AuthFailed     401  wrong email or password, an expired session or token
     ├── Conflict       409  the email is taken (``create_user``: admin commands; never sign-up)
     └── SignInThrottled 429  too many failed sign-ins (``retry_after`` seconds)
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from pydantic import BaseModel
from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from .cohort_models import AuthSession, SignInThrottle
from .cohorts import TooManyRequests
from .db import insert_or_ignore
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


class SignInThrottled(TooManyRequests):
    """429: too many failed sign-ins for this account or from this address."""


ACCOUNT_FAILURES = 5          # failed sign-ins per account per window
ADDRESS_FAILURES = 30         # per client address (a classroom behind one NAT shares one)
THROTTLE_WINDOW_S = 15 * 60


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
    try:
        s.commit()
    except IntegrityError:      # the same email from two requests at once
        s.rollback()
        raise Conflict(f"an account for {email} exists; sign in instead") from None
    s.refresh(user)
    return user


# -- sign-in throttling ---------------------------------------------------------------------------
def throttle_key(kind: str, value: str) -> str:
    """The ``SignInThrottle`` key of an account (``kind="account"``, the email as typed, normalised
    when it is one) or a client address (``kind="address"``)."""
    return hashlib.sha256(f"{kind}:{value}".encode("utf-8", "replace")).hexdigest()


def _count_attempt(s: Session, key: str, limit: int) -> int | None:
    """Count one sign-in attempt against ``key``: None if under ``limit``, else the seconds until
    its window ends (nothing counted). Commits. Each statement is atomic on both databases (the
    increment is conditional on the count), so concurrent attempts never exceed the limit."""
    now = utcnow()
    insert_or_ignore(s, SignInThrottle, key=key, failures=0, window_start=now)
    s.exec(update(SignInThrottle)     # a new window once the old one is over
           .where(SignInThrottle.key == key,
                  SignInThrottle.window_start <= now - timedelta(seconds=THROTTLE_WINDOW_S))
           .values(failures=0, window_start=now))
    res = s.exec(update(SignInThrottle).where(SignInThrottle.key == key, SignInThrottle.failures < limit)
                 .values(failures=SignInThrottle.failures + 1))
    if res.rowcount == 1:
        s.commit()
        return None
    start = s.exec(select(SignInThrottle.window_start).where(SignInThrottle.key == key)).one()
    s.commit()
    return max(1, int((_aware(start) + timedelta(seconds=THROTTLE_WINDOW_S) - now).total_seconds()) + 1)


def _uncount(s: Session, key: str) -> None:
    s.exec(update(SignInThrottle).where(SignInThrottle.key == key, SignInThrottle.failures > 0)
           .values(failures=SignInThrottle.failures - 1))
    s.commit()


def _throttled(what: str, wait: int) -> SignInThrottled:
    until = utcnow() + timedelta(seconds=wait)
    minutes = (wait + 59) // 60
    return SignInThrottled(f"too many failed sign-ins {what}; try again in {minutes} minute"
                           f"{'s' if minutes != 1 else ''} (after {until:%H:%M} UTC)", wait)


def _begin_attempt(s: Session, account: str, address: str | None) -> list[str]:
    """Count an attempt for the address (if known) and the account; ``SignInThrottled`` if
    either is spent (after taking back what was counted). Returns the keys counted."""
    counted: list[str] = []
    checks = [(throttle_key("address", address), ADDRESS_FAILURES, "from your network address")] if address else []
    checks.append((throttle_key("account", account), ACCOUNT_FAILURES, "for this account"))
    for key, limit, what in checks:
        wait = _count_attempt(s, key, limit)
        if wait is not None:
            for k in counted:
                _uncount(s, k)
            raise _throttled(what, wait)
        counted.append(key)
    return counted


def _signed_in(s: Session, account: str, address: str | None) -> None:
    """A successful sign-in: clear the account's count, take back this attempt from the address's,
    and drop the rows of windows long over."""
    s.exec(delete(SignInThrottle).where(SignInThrottle.key == throttle_key("account", account)))
    if address:
        _uncount(s, throttle_key("address", address))
    s.exec(delete(SignInThrottle).where(
        SignInThrottle.window_start < utcnow() - timedelta(seconds=2 * THROTTLE_WINDOW_S)))
    s.commit()


def authenticate(s: Session, email: str, password: str, *, address: str | None = None) -> User:
    """The user with this email and password; ``AuthFailed`` otherwise, in the same time;
    ``SignInThrottled`` (before any password check) once the account or the client ``address``
    has spent its failed attempts (see the module's docstring)."""
    typed = (email or "").strip().lower()[:400]
    try:
        email = normal_email(email)
    except BadRequest:
        email = ""
    _begin_attempt(s, email or typed, address)
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
    _signed_in(s, email, address)
    return user


def sign_up(s: Session, *, join_code: str, email: str, name: str, password: str) -> User | None:
    """Join the cohort whose join code this is, answering the same whether or not ``email`` has an
    account, so sign-up cannot tell which emails exist: a new email gets a new student account;
    a known email joins the cohort (as a student, unless it is a member already) only when
    ``password`` is that account's password; otherwise nothing changes. Either way one argon2
    computation (a hash or a verification), so the time does not tell either. Returns the user
    now in the cohort, or None. Invalid input (join code, email, name, password length) raises
    ``BadRequest`` before any lookup."""
    cohort = s.exec(select(Cohort).where(Cohort.join_code == (join_code or "").strip())).first()
    if cohort is None:
        raise BadRequest("unknown join code; ask your instructor for the cohort's code")
    email, name = normal_email(email), check_name(name)
    check_password(password)
    existing = s.exec(select(User).where(User.email == email)).first()
    s.commit()   # no database connection held through the hashing
    if existing is None:
        try:
            user = create_user(s, email, name, password)
        except Conflict:           # signed up a moment ago by a concurrent request
            return None
    elif existing.password_hash and hasher().verify(password, existing.password_hash):
        user = existing
    else:
        if not existing.password_hash:
            hasher().verify(password, dummy_hash())
        return None
    if s.exec(select(Membership.id).where(Membership.user_id == user.id,
                                          Membership.cohort_id == cohort.id)).first() is None:
        s.add(Membership(user_id=user.id, cohort_id=cohort.id, role=Role.STUDENT.value))
        try:
            s.commit()
        except IntegrityError:     # the same sign-up twice at once
            s.rollback()
    return user


def change_password(s: Session, user: User, old: str, new: str, *, secret: str, keep_token: str | None,
                    address: str | None = None) -> None:
    """Change the password and end every other session of the user. Guesses of the current
    password count against the account's sign-in throttle (a stolen session cannot try more)."""
    check_password(new)
    _begin_attempt(s, user.email or f"user:{user.id}", address)
    if not user.password_hash or not hasher().verify(old, user.password_hash):
        raise AuthFailed("the current password is wrong")
    _signed_in(s, user.email or f"user:{user.id}", address)
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
