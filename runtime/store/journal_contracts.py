"""The journal's contracts: a new event, and the append activity's input and output.

`NewEvent` is the one type of an event to append, whoever appends it: the API
directly (`EventJournal.append_many`), or a workflow through the append activity.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from pydantic import BaseModel, Field

from runtime.activity_contract import ActivityContract

# The journal's append activity, by name (activities/journal.py implements it).
APPEND_EVENTS = "journal.append_events"


class NewEvent(BaseModel):
    """An event to append; the journal gives it its seq and timestamp."""

    type: str
    data: dict[str, Any] = Field(default_factory=dict)
    originator: str | None = None


class AppendEventsInput(BaseModel):
    """Append `events` to `stream` with contiguous seqs.

    `retention` keeps only the stream's last events, that many (None: all of them).
    `dedupe_key` makes a retried activity idempotent: when the stream still holds a
    batch appended under it, nothing is appended twice (the stored entries answer).
    """

    stream: str
    events: list[NewEvent]
    retention: int | None = None
    dedupe_key: str | None = None


class AppendEventsResult(BaseModel):
    """The seqs the batch has in its stream, first and last (a deduplicated batch's
    are those it was given the first time)."""

    first_seq: int
    last_seq: int


def dedupe_key(scope: str, position: int, events: list[NewEvent]) -> str:
    """A workflow's key for its `position`-th append: the position AND the content.

    A replay of the same workflow task re-emits the same events at the same position:
    the journal keeps one copy. A workflow task that failed after its local activities
    journaled events is not replayed as such: the next task may emit other events at
    the same position (the counter never reached history). The content digest keeps
    those apart, so they are journaled instead of being taken for duplicates.

    Args:
        scope: what the counter is unique within (the workflow's id, or its run's id).
        position: the append's number within `scope` (a counter the workflow keeps).
        events: the batch.

    Returns:
        `<scope>/e<position>/<digest of the events>`.
    """
    canonical = json.dumps(
        [e.model_dump(mode="json") for e in events], sort_keys=True, separators=(",", ":")
    )
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    return f"{scope}/e{position}/{digest}"


APPEND_EVENTS_CONTRACT: Final = ActivityContract(
    APPEND_EVENTS, AppendEventsInput, AppendEventsResult
)
