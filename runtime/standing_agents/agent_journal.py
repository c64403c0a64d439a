"""The agent's journal stream `agent/{tenant}/{instanceId}`: what the SSE route serves.

An entry's data is `{"data": body}`, the envelope the session stream uses
(runtime/sessions/streams.envelope), so the agent stream reuses api/sse.py as is.
Types: `agent.turn`, `agent.message`, `agent.decision`, `agent.mode_changed`,
`agent.status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.store.journal import EventJournal, JournalEntry
from runtime.streams import agent_stream

TURN = "agent.turn"
MESSAGE = "agent.message"
DECISION = "agent.decision"
MODE_CHANGED = "agent.mode_changed"
STATUS = "agent.status"


def entry_data(body: Mapping[str, Any]) -> dict[str, Any]:
    """The journal entry's data for an agent event's body."""
    return {"data": dict(body)}


def append_agent_event(
    journal: EventJournal, tenant: str, instance_id: str, type: str, body: Mapping[str, Any]
) -> JournalEntry:
    return journal.append(agent_stream(tenant, instance_id), type, entry_data(body))
