"""Session event streams in the journal, and their SSE envelope.

A session's events live in the journal stream `session/<session_id>`; the
journal's `seq` is the SSE `id`. An entry's `data` holds the envelope's `data`
under "data", and optionally the "promptId" the event belongs to; the journal's
`originator` is the envelope's `originatorClientId`.
"""

from __future__ import annotations

from typing import Any

from runtime.store.journal import JournalEntry
from runtime.store.journal_contracts import NewEvent


def session_event(
    type: str,
    data: dict[str, Any],
    *,
    prompt_id: str | None = None,
    originator: str | None = None,
) -> NewEvent:
    """A journal event carrying one session envelope."""
    body: dict[str, Any] = {"data": data}
    if prompt_id is not None:
        body["promptId"] = prompt_id
    return NewEvent(type=type, data=body, originator=originator)


def envelope(entry: JournalEntry) -> dict[str, Any]:
    """`{id, v:1, type, data, promptId?, originatorClientId?, _meta:{serverTimestamp}}`."""
    body: dict[str, Any] = {
        "id": entry.seq,
        "v": 1,
        "type": entry.type,
        "data": entry.data.get("data", {}),
    }
    if "promptId" in entry.data:
        body["promptId"] = entry.data["promptId"]
    if entry.originator:
        body["originatorClientId"] = entry.originator
    body["_meta"] = {"serverTimestamp": entry.ts_ms}
    return body


def synthetic(type: str, data: dict[str, Any], server_timestamp: int) -> dict[str, Any]:
    """A frame that is not in the journal (no id): replay_complete, slow_client_warning, ..."""
    return {"v": 1, "type": type, "data": data, "_meta": {"serverTimestamp": server_timestamp}}
