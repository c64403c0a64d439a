"""The outbox: an event a receiver wants is a delivery row, written in the transaction of
what it reports (an approval opened or ended, a coding task settled), so it is owed
exactly when that happened, and once (its id derives from the event and the endpoint).

`NotificationEndpointWorkflow` (workflows/notifications/delivery.py) delivers an endpoint's rows in
order; `wake` tells it at once that rows were written (through the waker the worker and
the API install), and its own timer catches up on anything a lost wake missed.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Literal, get_args

from sqlalchemy import Connection, Table, and_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from runtime.notifications.models import NotificationDelivery, NotificationEndpoint
from runtime.timestamps import aware_utc, iso_ms

ENDPOINTS: Final[Table] = NotificationEndpoint.__table__  # type: ignore[attr-defined]
DELIVERIES: Final[Table] = NotificationDelivery.__table__  # type: ignore[attr-defined]

# The event types an endpoint may take (issue 22).
EventType = Literal[
    "approval.requested",
    "approval.expiring",
    "approval.resolved",
    "agent.stuck",
    "agent.budget_reached",
    "coding_task.settled",
    "session.turn_failed",
    "device_flow.login_required",
]
EVENT_TYPES: Final[tuple[str, ...]] = get_args(EventType)
PENDING: Final = "pending"
DELIVERED: Final = "delivered"
DEAD: Final = "dead"
ENDPOINT_PREFIX: Final = "ep_"
SECRET_PREFIX: Final = "whsec_"


def new_endpoint_id() -> str:
    return ENDPOINT_PREFIX + secrets.token_hex(8)


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes, base64 (an outbound
    endpoint's, and an inbound standing-agent webhook's)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def delivery_id(endpoint_id: str, event_type: str, key: str) -> str:
    """The `webhook-id` of one event for one endpoint (the same event: the same id)."""
    digest = hashlib.sha256(f"{endpoint_id}\0{event_type}\0{key}".encode()).hexdigest()
    return f"msg_{digest[:40]}"


# -- waking the deliverers ---------------------------------------------------------------------

Waker = Callable[[Sequence[str]], None]
_waker: list[Waker] = []
_lock = threading.Lock()


def install_waker(waker: Waker | None) -> Waker | None:
    """The process's way to tell endpoints' workflows that deliveries were written (the
    worker and the API install one while they run, and put back the one they replaced,
    which this returns). Thread-safe to call."""
    with _lock:
        previous = _waker[0] if _waker else None
        _waker[:] = [] if waker is None else [waker]
    return previous


def wake(endpoint_ids: Sequence[str]) -> None:
    with _lock:
        waker = _waker[0] if _waker else None
    if waker is not None and endpoint_ids:
        waker(list(dict.fromkeys(endpoint_ids)))


# -- writing ---------------------------------------------------------------------------------

# Events owed at one instant (one transaction's `now`) go out in the order they were owed:
# `created_at`, then this process's count (a transaction is one process's).
_ordinals = itertools.count(1)


def enqueue(
    connection: Connection,
    event_type: str,
    *,
    key: str,
    subject: str,
    tenant: str | None,
    data: Mapping[str, Any],
    now: datetime,
) -> list[str]:
    """Owe `event_type` (identified by `key`) to every active endpoint that takes it, in
    the caller's transaction; the endpoints owed something. An endpoint registered for a
    tenant gets that tenant's events only."""
    assert event_type in EVENT_TYPES, event_type
    endpoints = connection.execute(
        select(ENDPOINTS.c.endpoint_id, ENDPOINTS.c.event_types, ENDPOINTS.c.tenant).where(
            ENDPOINTS.c.disabled_at.is_(None)
        )
    ).all()
    owed: list[str] = []
    for endpoint, types, only in endpoints:
        if event_type not in (types or []) or (only is not None and only != tenant):
            continue
        message = delivery_id(endpoint, event_type, key)
        values = {
            "delivery_id": message,
            "endpoint_id": endpoint,
            "event_type": event_type,
            "subject": subject[:400],
            "payload": {"type": event_type, "timestamp": iso_ms(now), "data": dict(data)},
            "state": PENDING,
            "attempts": 0,
            "created_at": now,
            "ordinal": next(_ordinals),
            "next_attempt_at": now,
        }
        if connection.dialect.name == "postgresql":
            statement: Any = postgresql.insert(DELIVERIES).values(values).on_conflict_do_nothing()
        else:
            statement = sqlite.insert(DELIVERIES).values(values).on_conflict_do_nothing()
        # RETURNING says whether the row was inserted (psycopg's rowcount is -1 here).
        if connection.execute(statement.returning(DELIVERIES.c.delivery_id)).first():
            owed.append(endpoint)
    if owed:
        wake(owed)
    return owed


# -- delivering ------------------------------------------------------------------------------


def due(connection: Connection, endpoint_id: str, now: datetime, limit: int) -> list[Any]:
    """The endpoint's pending deliveries, oldest first, that the order per subject lets go
    now: the first pending one of each subject, if its next attempt is due."""
    rows = connection.execute(
        select(DELIVERIES)
        .where(DELIVERIES.c.endpoint_id == endpoint_id, DELIVERIES.c.state == PENDING)
        .order_by(DELIVERIES.c.created_at, DELIVERIES.c.ordinal, DELIVERIES.c.delivery_id)
        .limit(limit)
    ).all()
    heads: dict[str, Any] = {}
    for row in rows:
        heads.setdefault(row.subject, row)
    return [row for row in heads.values() if aware_utc(row.next_attempt_at) <= now]


def next_due(connection: Connection, endpoint_id: str) -> datetime | None:
    at = connection.execute(
        select(DELIVERIES.c.next_attempt_at)
        .where(DELIVERIES.c.endpoint_id == endpoint_id, DELIVERIES.c.state == PENDING)
        .order_by(DELIVERIES.c.next_attempt_at)
        .limit(1)
    ).scalar()
    return None if at is None else aware_utc(at)


def delivered(connection: Connection, message: str, now: datetime) -> None:
    connection.execute(
        update(DELIVERIES)
        .where(DELIVERIES.c.delivery_id == message, DELIVERIES.c.state == PENDING)
        .values(state=DELIVERED, delivered_at=now, attempts=DELIVERIES.c.attempts + 1)
    )


def failed(
    connection: Connection,
    message: str,
    error: str,
    now: datetime,
    *,
    max_attempts: int,
    backoff: Callable[[int], timedelta],
) -> bool:
    """Record a failed attempt; True when it was the last (the delivery is dead)."""
    before: int = connection.execute(
        select(DELIVERIES.c.attempts).where(DELIVERIES.c.delivery_id == message)
    ).scalar_one()
    attempts = before + 1
    dead = attempts >= max_attempts
    connection.execute(
        update(DELIVERIES)
        .where(DELIVERIES.c.delivery_id == message, DELIVERIES.c.state == PENDING)
        .values(
            attempts=attempts,
            last_error=error[:2000],
            state=DEAD if dead else PENDING,
            next_attempt_at=now + backoff(attempts),
        )
    )
    return dead


def resend(connection: Connection, endpoint_id: str, message: str, now: datetime) -> bool:
    """A dead delivery owed again, from its first attempt; False when it is not dead."""
    result = connection.execute(
        update(DELIVERIES)
        .where(
            and_(
                DELIVERIES.c.delivery_id == message,
                DELIVERIES.c.endpoint_id == endpoint_id,
                DELIVERIES.c.state == DEAD,
            )
        )
        .values(state=PENDING, attempts=0, next_attempt_at=now, last_error=None)
    )
    return bool(result.rowcount == 1)


def pending_endpoints(connection: Connection) -> list[str]:
    """Active endpoints owed something (the worker wakes them at start)."""
    rows = connection.execute(
        select(DELIVERIES.c.endpoint_id)
        .where(DELIVERIES.c.state == PENDING)
        .group_by(DELIVERIES.c.endpoint_id)
    ).scalars()
    return list(rows)
