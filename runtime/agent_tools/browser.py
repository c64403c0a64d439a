"""Browser sessions of the agent-tools page: an HttpOnly cookie plus a CSRF token (not to
be confused with daemon sessions, `runtime/sessions/`).

Only a hash of the cookie is stored, so a leaked database does not leak live
sessions; sessions live in the store and survive an API restart.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from runtime.agent_tools.models import AgentToolsBrowserSession
from runtime.store import Store
from runtime.timestamps import aware_utc

COOKIE_NAME = "agentrt_session"
BROWSER_SESSION_TTL = timedelta(hours=12)


@dataclass(frozen=True)
class BrowserSession:
    cookie: str
    csrf_token: str
    expires_at: datetime


def _hash(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def open_browser_session(store: Store, cookie: str | None) -> BrowserSession:
    """The caller's live session, or a new one."""
    if cookie:
        existing = find_browser_session(store, cookie)
        if existing is not None:
            return existing
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
        session.commit()
    return BrowserSession(cookie=cookie, csrf_token=row.csrf_token, expires_at=row.expires_at)


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
