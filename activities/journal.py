"""Journal writes from workflows: an activity (usually run as a local activity)."""

from __future__ import annotations

import asyncio

from runtime.store import EventJournal
from runtime.store.journal_contracts import (
    APPEND_EVENTS_CONTRACT,
    AppendEventsInput,
    AppendEventsResult,
)


class JournalActivities:
    def __init__(self, journal: EventJournal) -> None:
        self.journal = journal

    @APPEND_EVENTS_CONTRACT.defn
    async def append_events(self, request: AppendEventsInput) -> AppendEventsResult:
        """Append a batch; idempotent across retries when the workflow gives a dedupe key."""
        entries = await asyncio.to_thread(
            self.journal.append_many,
            request.stream,
            request.events,
            retention=request.retention,
            dedupe_key=request.dedupe_key,
        )
        return AppendEventsResult(first_seq=entries[0].seq, last_seq=entries[-1].seq)
