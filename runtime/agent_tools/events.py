"""Agent-tools events in the journal: one stream per (instance, workspace), bounded payloads."""

from __future__ import annotations

import json
from typing import Any

from runtime.agent_tools.views import AgentToolsEvent
from runtime.store.journal import JournalEntry
from runtime.timestamps import iso_ms

PAYLOAD_LIMIT = 4096


def bounded(payload: dict[str, Any], limit: int = PAYLOAD_LIMIT) -> dict[str, Any]:
    """The payload itself when small; otherwise a truncated JSON preview, flagged."""
    encoded = json.dumps(payload, separators=(",", ":"), default=str)
    if len(encoded) <= limit:
        return payload
    return {"truncated": True, "preview": encoded[: limit - 200]}


def event_data(
    turn_id: str,
    payload: dict[str, Any],
    *,
    call_id: str | None = None,
    refs: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The journal `data` of an agent-tools event."""
    return {
        "turn_id": turn_id,
        "call_id": call_id,
        "refs": refs or [],
        "payload": bounded(payload),
    }


def event_body(entry: JournalEntry) -> AgentToolsEvent:
    """One event of GET /events, from its journal entry (`event_data` wrote its data)."""
    data = entry.data
    return AgentToolsEvent(
        sequence=entry.seq,
        timestamp=iso_ms(entry.ts),
        type=entry.type,
        turn_id=data.get("turn_id"),
        call_id=data.get("call_id"),
        refs=data.get("refs", []),
        payload=data.get("payload", {}),
    )
