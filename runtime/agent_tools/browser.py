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
"""

from __future__ import annotations

import hashlib
import hmac
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
    with store.session() as session:
        session.add(row)
        session.flush()
        _retain(session, now, max_sessions)
        session.commit()
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
