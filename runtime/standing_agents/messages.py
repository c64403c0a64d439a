"""A standing agent's messages and events from outside: an operator's message (stored
and queued as `OperatorMessage` in one transaction, journalled as `agent.message`), the
conversation as a client reads it, and the orchestration or external events a client
posts. Every write is idempotent by the client's id (`messageId`, `eventId`).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlmodel import Session, col, select

from runtime.standing_agents import queue
from runtime.standing_agents.agent_journal import (
    MESSAGE,
    append_agent_event_once,
)
from runtime.standing_agents.contracts import (
    AgentEvent,
    EventKind,
    MessageDirection,
)
from runtime.standing_agents.control import get_instance, iso, now_utc
from runtime.standing_agents.models import (
    AgentMessage,
)
from runtime.standing_agents.views import MessageView
from runtime.store.engine import Store
from runtime.store.journal import EventJournal


def post_message(
    store: Store,
    journal: EventJournal,
    tenant: str,
    instance_id: str,
    text: str,
    client_message_id: str | None = None,
) -> tuple[AgentMessage, bool]:
    """Persist an operator message and enqueue it as `OperatorMessage` in one transaction;
    returns the message and whether it is new (a retry with the same `messageId` adds
    nothing, and journals `agent.message` only if the first call's entry was lost)."""
    instance = get_instance(store, tenant, instance_id)
    # The wire id is the client's when given (its retry key), else the row's own.
    row_id = uuid.uuid4().hex
    message_id = client_message_id or row_id
    op_id = f"operator/{instance_id}/{message_id}"

    def write(db: Session) -> tuple[AgentMessage, bool]:
        existing = db.exec(select(AgentMessage).where(col(AgentMessage.op_id) == op_id)).first()
        row = existing or AgentMessage(
            message_id=row_id,
            instance_id=instance_id,
            tenant=tenant,
            direction=MessageDirection.OPERATOR.value,
            text=text,
            op_id=op_id,
            created_at=now_utc(),
        )
        if existing is None:
            db.add(row)
            db.flush()
        queue.enqueue_in(
            db,
            tenant=tenant,
            instance_id=instance_id,
            kind=EventKind.OPERATOR_MESSAGE,
            payload={"messageId": message_id, "text": row.text},
            event_id=f"message/{instance_id}/{message_id}",
            generation=instance.generation,
        )
        return row, existing is None

    row, created = store.run_transaction(write)
    append_agent_event_once(
        journal,
        tenant,
        instance_id,
        MESSAGE,
        message_view(row).model_dump(mode="json"),
        f"message/{row.message_id}",
    )
    return row, created


def stored_message(store: Store, message_id: str) -> MessageView | None:
    """A message by its row id, as the transcript route and the `agent.message` journal
    event show it; None when there is none."""
    with store.session() as db:
        row = db.get(AgentMessage, message_id)
    return message_view(row) if row is not None else None


def message_view(row: AgentMessage) -> MessageView:
    return MessageView(
        message_id=client_message_id(row),
        direction=row.direction,
        text=row.text,
        created_at=iso(row.created_at),
    )


def client_message_id(row: AgentMessage) -> str:
    """The id a client knows a message by: its own messageId for operator messages."""
    prefix = f"operator/{row.instance_id}/"
    if row.op_id and row.op_id.startswith(prefix):
        return row.op_id[len(prefix) :]
    return row.message_id


def list_messages(
    store: Store, tenant: str, instance_id: str, limit: int = 500
) -> list[AgentMessage]:
    get_instance(store, tenant, instance_id)
    with store.session() as db:
        rows = db.exec(
            select(AgentMessage)
            .where(col(AgentMessage.instance_id) == instance_id)
            .order_by(col(AgentMessage.created_at).desc(), col(AgentMessage.message_id))
            .limit(limit)
        ).all()
    return list(reversed(rows))


def enqueue_external(
    store: Store,
    tenant: str,
    instance_id: str,
    kind: EventKind,
    payload: dict[str, Any],
    event_id: str | None = None,
) -> tuple[AgentEvent, bool]:
    """An orchestration or external event (EXTERNAL_EVENT_KINDS), durably queued."""
    instance = get_instance(store, tenant, instance_id)
    return queue.enqueue(
        store,
        tenant=tenant,
        instance_id=instance_id,
        kind=kind,
        payload=payload,
        event_id=f"external/{instance_id}/{event_id or uuid.uuid4().hex}",
        generation=instance.generation,
    )
