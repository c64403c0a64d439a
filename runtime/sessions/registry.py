"""The session registry in the store: create or attach, look up, list, close, revive."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from runtime.sessions.models import (
    DaemonSession,
    SessionClient,
    SessionPermissionRequest,
    SingleSessionSlot,
)
from runtime.sessions.streams import session_event
from runtime.store import Store
from runtime.store.atomic import serialize
from runtime.store.journal import EventJournal, JournalEntry
from runtime.streams import session_stream
from runtime.timestamps import aware_utc, iso_ms

Scope = Literal["single", "thread"]


# The advisory lock (runtime.store.atomic.serialize) of every write that counts live
# sessions against the cap before making one live.
SESSION_CAP = "session-cap"


class SessionLimitReached(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"Session limit reached ({limit})")
        self.limit = limit


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    workspace_cwd: str
    scope: str
    display_name: str | None
    created_at: datetime
    closed_at: datetime | None

    @property
    def live(self) -> bool:
        return self.closed_at is None

    @property
    def created_at_iso(self) -> str:
        return iso_ms(self.created_at)


def _record(row: DaemonSession) -> SessionRecord:
    return SessionRecord(
        session_id=row.session_id,
        workspace_cwd=row.workspace_cwd,
        scope=row.scope,
        display_name=row.display_name,
        created_at=aware_utc(row.created_at),
        closed_at=aware_utc(row.closed_at) if row.closed_at else None,
    )


_SESSIONS = DaemonSession.__table__  # type: ignore[attr-defined]


def get_session(store: Store, session_id: str) -> SessionRecord | None:
    """The session, live or closed; None when it never existed."""
    with store.session() as db:
        row = db.get(DaemonSession, session_id)
        return None if row is None else _record(row)


def get_live_session(store: Store, session_id: str) -> SessionRecord | None:
    record = get_session(store, session_id)
    return record if record is not None and record.live else None


_COUNT_LIVE = select(func.count()).select_from(_SESSIONS).where(_SESSIONS.c.closed_at.is_(None))


def count_live(store: Store) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(_COUNT_LIVE).scalar_one())


def admit(db: Session, max_sessions: int) -> None:
    """Inside the caller's write transaction, before it makes a session live (a new row,
    a revived one): raise SessionLimitReached when `max_sessions` are live already.

    Check and insert are atomic: the transaction first takes the session cap's lock
    (`serialize`), so concurrent admissions run one after the other and each counts the
    sessions the one before committed (without it, PostgreSQL's READ COMMITTED let N
    concurrent creates all count the same number and all insert). The lock ends with
    the caller's transaction: commit the new session in it. A caller that must read
    something under the lock before counting takes it first itself (taking it again is
    a no-op).
    """
    serialize(db, SESSION_CAP)
    if int(db.execute(_COUNT_LIVE).scalar_one()) >= max_sessions:
        raise SessionLimitReached(max_sessions)


def list_live(store: Store, workspace_cwd: str) -> list[SessionRecord]:
    with store.session() as db:
        rows = db.execute(
            select(DaemonSession)
            .where(_SESSIONS.c.workspace_cwd == workspace_cwd, _SESSIONS.c.closed_at.is_(None))
            .order_by(_SESSIONS.c.created_at)
        ).scalars()
        return [_record(row) for row in rows]


def journal_to_live_sessions(
    store: Store,
    journal: EventJournal,
    workspace_cwd: str,
    event_type: str,
    data: dict[str, Any],
    *,
    retention: int | None,
    originator: str | None = None,
) -> None:
    """A workspace-scoped event (a tool toggled, an MCP server restarted, a budget
    reached): every live session of the workspace gets it in its stream, where its SSE
    clients read it.

    Args:
        workspace_cwd: the workspace whose live sessions get it.
        event_type, data: the session envelope's `type` and `data`.
        retention: each stream keeps its last `retention` events (the event ring).
        originator: the client id that caused it (`originatorClientId`), if any.
    """
    for record in list_live(store, workspace_cwd):
        journal.append_many(
            session_stream(record.session_id),
            [session_event(event_type, data, originator=originator)],
            retention=retention,
        )


def create_or_attach(
    store: Store, workspace_cwd: str, scope: Scope, max_sessions: int
) -> tuple[SessionRecord, bool]:
    """A new session, or (for `single`) the workspace's live one; returns (record, attached).

    The `single` slot is a primary key: of two concurrent creates exactly one
    inserts it (attached=False); the other loses the race on the key, runs again
    (`Store.run_transaction`) and attaches to the winner's session. Attaches never
    count against `max_sessions`: a `single` create takes the cap's lock before it reads
    the slot, so a create that waited behind the winner reads the winner's slot and
    attaches, instead of counting the winner's session and being refused at the cap.
    """
    now = datetime.now(UTC)

    def write(db: Session) -> tuple[SessionRecord, bool]:
        if scope == "single":
            serialize(db, SESSION_CAP)  # admit() takes it again below: a no-op
            slot = db.get(SingleSessionSlot, workspace_cwd)
            if slot is not None:
                existing = db.get(DaemonSession, slot.session_id)
                if existing is not None and existing.closed_at is None:
                    return _record(existing), True
                db.delete(slot)
                db.flush()
        admit(db, max_sessions)
        row = DaemonSession(
            session_id=str(uuid.uuid4()),
            workspace_cwd=workspace_cwd,
            scope=scope,
            created_at=now,
        )
        db.add(row)
        if scope == "single":
            db.add(SingleSessionSlot(workspace_cwd=workspace_cwd, session_id=row.session_id))
        db.flush()
        return _record(row), False

    return store.run_transaction(write)


def close_session(store: Store, session_id: str) -> SessionRecord | None:
    """Mark closed; None when not live. The single slot is freed."""
    with store.transaction() as db:
        row = db.get(DaemonSession, session_id)
        if row is None or row.closed_at is not None:
            return None
        row.closed_at = datetime.now(UTC)
        slot = db.get(SingleSessionSlot, row.workspace_cwd)
        if slot is not None and slot.session_id == session_id:
            db.delete(slot)
        return _record(row)


def revive_session(store: Store, session_id: str, max_sessions: int) -> tuple[SessionRecord, bool]:
    """Make a persisted session live again (load/resume); returns (record, attached)."""
    with store.transaction() as db:
        row = db.get(DaemonSession, session_id)
        if row is None:
            raise LookupError(session_id)
        if row.closed_at is None:
            return _record(row), True
        admit(db, max_sessions)
        db.refresh(row)  # read again under the cap's lock: a concurrent revive of this one
        if row.closed_at is None:
            return _record(row), True
        row.closed_at = None
        return _record(row), False


def rename_session(store: Store, session_id: str, display_name: str) -> SessionRecord | None:
    with store.transaction() as db:
        row = db.get(DaemonSession, session_id)
        if row is None or row.closed_at is not None:
            return None
        row.display_name = display_name
        return _record(row)


_CLIENTS = SessionClient.__table__  # type: ignore[attr-defined]


def register_client(store: Store, session_id: str, client_id: str, now_ms: int) -> None:
    """Attach a client to a session (idempotent); its first heartbeat is now. A
    concurrent registration of the same client that wins the key stands (the write runs
    again and finds it)."""

    def write(db: Session) -> None:
        if db.get(SessionClient, (session_id, client_id)) is None:
            db.add(SessionClient(session_id=session_id, client_id=client_id, last_seen_ms=now_ms))
            db.flush()

    store.run_transaction(write)


def heartbeat_client(store: Store, session_id: str, client_id: str, now_ms: int) -> bool:
    """Refresh a registered client's last-seen time; False when it is not registered."""
    with store.transaction() as db:
        row = db.get(SessionClient, (session_id, client_id))
        if row is None:
            return False
        row.last_seen_ms = now_ms
        return True


def client_count(store: Store, session_id: str) -> int:
    with store.engine.connect() as connection:
        return int(
            connection.execute(
                select(func.count())
                .select_from(_CLIENTS)
                .where(_CLIENTS.c.session_id == session_id)
            ).scalar_one()
        )


_PERMISSION_REQUESTS = SessionPermissionRequest.__table__  # type: ignore[attr-defined]
_SESSION_PREFIX = "session/"


def index_permission_requests(
    connection: Connection, stream: str, entries: Sequence[JournalEntry]
) -> None:
    """Which session raised each permission request of a batch of a session stream's
    events: a journal projection (runtime/journal_projections.py), so the row commits
    with its `permission_request` event. A request id raised again (it is a uuid: never
    in practice) names the latest session, as the journal did."""
    if not stream.startswith(_SESSION_PREFIX):
        return
    session_id = stream.removeprefix(_SESSION_PREFIX)
    for entry in entries:
        data = entry.data.get("data") if entry.type == "permission_request" else None
        request_id = data.get("requestId") if isinstance(data, dict) else None
        if not isinstance(request_id, str) or not 0 < len(request_id) <= 64:
            continue
        values = {"request_id": request_id, "session_id": session_id}
        insert: Any = (
            postgresql.insert(_PERMISSION_REQUESTS)
            if connection.dialect.name == "postgresql"
            else sqlite.insert(_PERMISSION_REQUESTS)
        )
        statement = insert.values(values)
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["request_id"], set_={"session_id": statement.excluded.session_id}
            )
        )


def find_permission_session(store: Store, request_id: str) -> str | None:
    """Which session raised permission request `request_id` (one indexed read: a vote
    for an unknown id costs no scan of the journal)."""
    query = select(_PERMISSION_REQUESTS.c.session_id).where(
        _PERMISSION_REQUESTS.c.request_id == request_id
    )
    with store.engine.connect() as connection:
        session_id = connection.execute(query).scalar_one_or_none()
    return None if session_id is None else str(session_id)


def find_permission_outcome(
    store: Store, session_id: str, request_id: str
) -> dict[str, Any] | None:
    """The outcome a resolved permission request was given, from its journal event."""
    from runtime.store.models import JournalEvent

    events = JournalEvent.__table__  # type: ignore[attr-defined]
    query = (
        select(events.c.data)
        .where(
            events.c.stream == session_stream(session_id),
            events.c.type == "permission_resolved",
            events.c.data["data"]["requestId"].as_string() == request_id,
        )
        .limit(1)
    )
    with store.read_engine.connect() as connection:
        data = connection.execute(query).scalar_one_or_none()
    if not isinstance(data, dict):
        return None
    outcome = data.get("data", {}).get("outcome")
    return outcome if isinstance(outcome, dict) else None
