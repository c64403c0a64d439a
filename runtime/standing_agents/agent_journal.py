"""The agent's journal stream `agent/{tenant}/{instanceId}`: what the SSE route serves.

An entry's data is `{"data": body}`, the envelope the session stream uses
(runtime/sessions/streams.envelope), so the agent stream reuses api/sse.py as is.
Types: `agent.turn`, `agent.message`, `agent.decision`, `agent.mode_changed`,
`agent.status`, and `agent.cost_warning` (a model call charged at a guessed price or
with estimated tokens: runtime/llm/cost_warning.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.store.journal import EventJournal, JournalEntry
from runtime.store.journal_contracts import NewEvent
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


def append_agent_event_once(
    journal: EventJournal,
    tenant: str,
    instance_id: str,
    type: str,
    body: Mapping[str, Any],
    dedupe_key: str,
) -> JournalEntry:
    """Append unless an entry with `dedupe_key` is already on the stream: the control side
    journals on every call (a retry after a crash writes what was lost, never a double)."""
    event = NewEvent(type=type, data=entry_data(body))
    return journal.append_many(agent_stream(tenant, instance_id), [event], dedupe_key=dedupe_key)[0]
