"""`agentrt worker`, stalled at the worst moment for a test to kill -9 it there.

`python -m tests.stalling_worker EVENT_TYPE` builds the worker `cli worker` builds, from the
same settings, except that its journal write stalls for ever once it has committed an event
of type EVENT_TYPE: the row is readable by clients, the write never returns, so the
workflow task that ran it is never recorded. It prints `committed` on stdout then.
"""

from __future__ import annotations

import asyncio
import sys
import time

from temporalio import activity

from activities import build_activities
from activities.journal import JournalActivities
from activities.llm import provider_from_settings
from runtime import temporal
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import APPEND_EVENTS, AppendEventsInput, AppendEventsResult
from worker import build_worker


class StallAfter:
    def __init__(self, journal: EventJournal, event_type: str) -> None:
        self._append = JournalActivities(journal).append_events
        self._event_type = event_type

    @activity.defn(name=APPEND_EVENTS)
    async def append_events(self, request: AppendEventsInput) -> AppendEventsResult:
        result = await self._append(request)
        if any(event.type == self._event_type for event in request.events):
            print("committed", flush=True)
            time.sleep(3600)  # noqa: ASYNC251 (the whole process stalls here, until its kill -9)
        return result


async def main(event_type: str) -> None:
    settings = Settings()
    store = Store(settings.resolved_database_url)
    client = await temporal.connect(
        settings.effective_temporal_address, settings.temporal_namespace, timeout=30
    )
    journal = EventJournal(store)
    stall = StallAfter(journal, event_type)
    # The worker `cli worker` runs, its journal write replaced.
    worker = build_worker(
        client,
        settings,
        store,
        activities=[
            stall.append_events if a.__name__ == "append_events" else a
            for a in build_activities(store, journal, provider_from_settings(settings), settings)
        ],
    )
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
