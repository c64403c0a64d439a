"""The approvals' clock: the timeouts of the kinds that have no timer of their own.

A session's vote and a device flow keep their own durable timers (their workflows'); a
research authorization, a standing agent's decision (a coder's question with it) and an
MCP call approval are timed here. `ApprovalClockWorkflow` (one per deployment,
`approvals-clock/<task queue>`) sleeps on a Temporal timer until the next instant below, so it fires
with the worker down (the next worker runs what fell due), and is woken when a request
opens:

- a request of a timed kind gets its timeout (`timeout_ms`; 0: none) and `expires_at`,
  right after it opened: its tool's override (an MCP call), else its mode's (a standing
  agent's decision or MCP call), else its kind's (`timeout_of`);
- `approval_expiring_lead_ms` before `expires_at`, `approval.expiring` is owed once;
- at `expires_at`, the kind ends it as an answer would (activities/approvals/clock.py): a
  proposal is refused, a question answered `expired`; the approval is `expired`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import Connection, and_, select, update

from runtime.approvals import ledger
from runtime.approvals.ledger import APPROVALS, ApprovalKind, ApprovalState
from runtime.settings import Settings
from runtime.timestamps import aware_utc

TIMED: Final = tuple(sorted(ledger.TIMED_KINDS))


def timeouts(settings: Settings) -> Mapping[ApprovalKind, int]:
    """Each timed kind's timeout in ms (0: none)."""
    return {
        ApprovalKind.RESEARCH: settings.research_timeout_ms,
        ApprovalKind.DECISION: settings.decision_timeout_ms,
        ApprovalKind.CODER_QUESTION: settings.decision_timeout_ms,
        ApprovalKind.MCP_CALL: settings.mcp_approval_timeout_ms,
    }


def enabled(settings: Settings) -> bool:
    """Whether the deployment times any approval (else the clock never starts)."""
    return any(timeouts(settings).values()) or any(settings.approval_timeout_overrides.values())


# The kinds a `mode:` override times (a standing agent's requests; `detail.mode` is the
# agent's mode when it asked), and the one a `tool:` override times (`detail.call.tool`).
MODE_TIMED: Final = frozenset({ApprovalKind.DECISION, ApprovalKind.MCP_CALL})


def timeout_of(settings: Settings, kind: ApprovalKind, detail: Mapping[str, Any]) -> int:
    """The timeout of one request in ms (0: none): its tool's override, else its mode's,
    else its kind's."""
    overrides = settings.approval_timeout_overrides
    call = detail.get("call")
    if kind is ApprovalKind.MCP_CALL and isinstance(call, Mapping):
        tool = overrides.get(f"tool:{call.get('tool')}")
        if tool is not None:
            return tool
    mode = detail.get("mode")
    if kind in MODE_TIMED and isinstance(mode, str):
        by_mode = overrides.get(f"mode:{mode}")
        if by_mode is not None:
            return by_mode
    return timeouts(settings)[kind]


def _pending(kinds: tuple[ApprovalKind, ...] = TIMED) -> Any:
    return and_(
        APPROVALS.c.state == ApprovalState.PENDING.value,
        APPROVALS.c.kind.in_([k.value for k in kinds]),
    )


def assign_timeouts(connection: Connection, settings: Settings) -> int:
    """Give every new request of a timed kind its timeout; how many got one."""
    rows = connection.execute(
        select(
            APPROVALS.c.approval_id, APPROVALS.c.kind, APPROVALS.c.created_at, APPROVALS.c.detail
        ).where(_pending(), APPROVALS.c.timeout_ms.is_(None))
    ).all()
    for approval, kind, created, detail in rows:
        timeout = timeout_of(settings, ApprovalKind(kind), detail or {})
        expires = aware_utc(created) + timedelta(milliseconds=timeout) if timeout else None
        connection.execute(
            update(APPROVALS)
            .where(APPROVALS.c.approval_id == approval, APPROVALS.c.timeout_ms.is_(None))
            .values(timeout_ms=timeout, expires_at=expires)
        )
    return len(rows)


def owe_warnings(connection: Connection, lead: timedelta, now: datetime) -> int:
    """Owe `approval.expiring` for each pending request within `lead` of its expiry."""
    rows = (
        connection.execute(
            select(APPROVALS).where(
                _pending(),
                APPROVALS.c.warned_at.is_(None),
                APPROVALS.c.expires_at.is_not(None),
                APPROVALS.c.expires_at <= now + lead,
                APPROVALS.c.expires_at > now,
            )
        )
        .mappings()
        .all()
    )
    for row in rows:
        connection.execute(
            update(APPROVALS)
            .where(APPROVALS.c.approval_id == row["approval_id"])
            .values(warned_at=now)
        )
        ledger.notify(
            connection, "approval.expiring", {**row, "expires_at": row["expires_at"]}, now
        )
    return len(rows)


def expired(connection: Connection, now: datetime) -> list[Any]:
    """The pending requests of timed kinds whose time is up."""
    return list(
        connection.execute(
            select(APPROVALS).where(
                _pending(), APPROVALS.c.expires_at.is_not(None), APPROVALS.c.expires_at <= now
            )
        ).all()
    )


def next_instant(connection: Connection, lead: timedelta) -> datetime | None:
    """When the clock has something to do next: a warning or an expiry."""
    expiry = connection.execute(
        select(APPROVALS.c.expires_at)
        .where(_pending(), APPROVALS.c.expires_at.is_not(None))
        .order_by(APPROVALS.c.expires_at)
        .limit(1)
    ).scalar()
    warning = connection.execute(
        select(APPROVALS.c.expires_at)
        .where(
            _pending(),
            APPROVALS.c.expires_at.is_not(None),
            APPROVALS.c.warned_at.is_(None),
        )
        .order_by(APPROVALS.c.expires_at)
        .limit(1)
    ).scalar()
    candidates = [aware_utc(expiry)] if expiry is not None else []
    if warning is not None:
        candidates.append(aware_utc(warning) - lead)
    return min(candidates) if candidates else None
