"""The two Temporal environments of the suite, and the journal activity seen from a workflow."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from activities.journal import JournalActivities
    from runtime.store import EventJournal, Store, upgrade_to_head
    from runtime.store.journal_contracts import AppendEventsInput, AppendEventsResult, NewEvent


class WaitThenJournalInput(BaseModel):
    stream: str
    wait: timedelta


@workflow.defn
class WaitThenJournal:
    """Sleeps (a long timer on the time-skipping server), then appends through a local activity."""

    @workflow.run
    async def run(self, request: WaitThenJournalInput) -> AppendEventsResult:
        await workflow.sleep(request.wait)
        append = AppendEventsInput(
            stream=request.stream,
            events=[NewEvent(type="woke", data={"at": workflow.now().isoformat()})],
            dedupe_key=f"{workflow.info().workflow_id}/woke",
        )
        return await workflow.execute_local_activity_method(
            JournalActivities.append_events,
            append,
            start_to_close_timeout=timedelta(seconds=30),
        )


def _journal(tmp_path: Path) -> EventJournal:
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    upgrade_to_head(store.engine)
    return EventJournal(store)


async def test_a_day_long_timer_on_the_time_skipping_server(
    time_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    journal = _journal(tmp_path)
    async with Worker(
        time_env.client,
        task_queue=task_queue,
        workflows=[WaitThenJournal],
        activities=[JournalActivities(journal).append_events],
    ):
        result = await time_env.client.execute_workflow(
            WaitThenJournal.run,
            WaitThenJournalInput(stream="s", wait=timedelta(days=1)),
            id=f"wait-{uuid.uuid4()}",
            task_queue=task_queue,
        )
    assert (result.first_seq, result.last_seq) == (1, 1)
    assert [e.type for e in journal.read("s").entries] == ["woke"]


async def test_the_local_dev_server(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    journal = _journal(tmp_path)
    async with Worker(
        dev_env.client,
        task_queue=task_queue,
        workflows=[WaitThenJournal],
        activities=[JournalActivities(journal).append_events],
    ):
        result = await dev_env.client.execute_workflow(
            WaitThenJournal.run,
            WaitThenJournalInput(stream="s", wait=timedelta(milliseconds=10)),
            id=f"wait-{uuid.uuid4()}",
            task_queue=task_queue,
        )
    assert result.last_seq == 1
