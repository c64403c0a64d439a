"""Browser sessions of the agent-tools page: an HttpOnly cookie plus a CSRF token (not to
be confused with daemon sessions, `runtime/sessions/`).

Only a hash of the cookie is stored, so a leaked database does not leak live
sessions; sessions live in the store and survive an API restart.

A row is minted only for a caller without a live cookie, and never for a cross-site
request (`Sec-Fetch-Site: cross-site`, which a browser sets and a page cannot forge: the
route answers 403 `cross_site_refused`). The table is a bounded retention window like
the gateway's results and events: each mint purges the expired rows and keeps the newest
`max_sessions`, by creation time (the table has no last-use column, and adding one needs
a migration), so a page that loops `GET .../session` without the cookie evicts only the
oldest sessions; the agent-tools page opens a fresh one on `session_required`.

The checks' other refusals are defined here too and raised by api/security/browser.py:
`BrowserCheckFailed` (403: no session, a mutation without our Origin or the CSRF token)
and `MutationRateLimited` (429).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import delete, select
from sqlmodel import Session

from runtime.agent_tools.models import AgentToolsBrowserSession
from runtime.failures import WireError
from runtime.store import Store
from runtime.timestamps import aware_utc

COOKIE_NAME = "agentrt_session"
BROWSER_SESSION_TTL = timedelta(hours=12)
DEFAULT_MAX_BROWSER_SESSIONS = 64
_SESSIONS = AgentToolsBrowserSession.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class BrowserSession:
    cookie: str
    csrf_token: str
    expires_at: datetime


def _hash(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


class CrossSiteRefused(WireError):
    """`GET /api/v1/agent-tools/session` from another site without a live session: 403,
    in the gateway's shape for a refused Origin."""

    kind: Literal["cross_site_refused"] = "cross_site_refused"

    @property
    def http_status(self) -> int:
        return 403

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "A local session cannot be opened from another site",
            "code": self.kind_name,
        }


BrowserCheck = Literal["session_required", "origin_required", "origin_mismatch", "csrf_invalid"]

_CHECK_MESSAGES: dict[str, str] = {
    "session_required": "A local session is required: GET /api/v1/agent-tools/session first",
    "origin_required": "Mutations must carry the Origin header",
    "origin_mismatch": "Origin does not match this server's origin",
    "csrf_invalid": "Missing or invalid X-CSRF-Token header",
}


class BrowserCheckFailed(WireError):
    """An agent-tools request failing the page's browser checks (api/security/browser.py):
    no live session cookie, or a mutation without our Origin or the session's CSRF token:
    403, the failed `check` as the code."""

    kind: Literal["browser_check_failed"] = "browser_check_failed"
    check: BrowserCheck

    @property
    def http_status(self) -> int:
        return 403

    def response_body(self) -> dict[str, Any]:
        return {"error": _CHECK_MESSAGES[self.check], "code": self.check}


class MutationRateLimited(WireError):
    """A browser session's mutation over its `limit` per minute: the rate limiter's 429
    shape (api/security/ratelimit.py), tier `mutation`; `retry_after` in seconds."""

    kind: Literal["mutation_rate_limited"] = "mutation_rate_limited"
    limit: int
    retry_after_ms: int
    retry_after: int

    @classmethod
    def after(cls, wait: float, limit: int) -> MutationRateLimited:
        """Refused for `wait` more seconds (the limiter's answer)."""
        return cls(limit=limit, retry_after_ms=math.ceil(wait * 1000), retry_after=math.ceil(wait))

    @property
    def http_status(self) -> int:
        return 429

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "Rate limit exceeded for agent-tools mutations",
            "code": "rate_limit_exceeded",
            "tier": "mutation",
            "limit": self.limit,
            "retryAfterMs": self.retry_after_ms,
        }

    def response_headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class MintRefused(Exception):
    """No live session, and the caller may not be given a new one (a cross-site request)."""


def open_browser_session(
    store: Store,
    cookie: str | None,
    *,
    max_sessions: int = DEFAULT_MAX_BROWSER_SESSIONS,
    may_mint: bool = True,
) -> BrowserSession:
    """The caller's live session (nothing written), or a new one within the window;
    `MintRefused` when there is none and `may_mint` is false."""
    if cookie:
        existing = find_browser_session(store, cookie)
        if existing is not None:
            return existing
    if not may_mint:
        raise MintRefused
    cookie = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    row = AgentToolsBrowserSession(
        session_hash=_hash(cookie),
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        expires_at=now + BROWSER_SESSION_TTL,
    )
    with store.transaction() as session:
        session.add(row)
        session.flush()
        _retain(session, now, max_sessions)
    return BrowserSession(cookie=cookie, csrf_token=row.csrf_token, expires_at=row.expires_at)


def _retain(session: Session, now: datetime, keep: int) -> None:
    """Purge the expired sessions, then all but the newest `keep` (by creation: there is
    no last-use column to order by)."""
    rows = _SESSIONS.c
    session.execute(delete(_SESSIONS).where(rows.expires_at <= now))
    older = select(rows.session_hash).order_by(rows.created_at.desc()).offset(keep)
    evicted = [key for (key,) in session.execute(older).all()]
    if evicted:
        session.execute(delete(_SESSIONS).where(rows.session_hash.in_(evicted)))


def find_browser_session(store: Store, cookie: str) -> BrowserSession | None:
    with store.session() as session:
        row = session.get(AgentToolsBrowserSession, _hash(cookie))
    if row is None or aware_utc(row.expires_at) <= datetime.now(UTC):
        return None
    return BrowserSession(cookie=cookie, csrf_token=row.csrf_token, expires_at=row.expires_at)


def csrf_matches(session: BrowserSession, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(
        session.csrf_token.encode(), (presented or "").encode()
    )
