"""Waits on a workflow's history: a test that lets a server-side timer or timeout fall due
(no worker running, or the worker stopped) waits until the server has recorded it, not
for a fixed time."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle


def pending_timers(events: Any) -> dict[str, Any]:
    """The timers started and neither fired nor cancelled: id to TIMER_STARTED event."""
    pending: dict[str, Any] = {}
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            pending[event.timer_started_event_attributes.timer_id] = event
        elif event.event_type == EventType.EVENT_TYPE_TIMER_FIRED:
            pending.pop(event.timer_fired_event_attributes.timer_id, None)
        elif event.event_type == EventType.EVENT_TYPE_TIMER_CANCELED:
            pending.pop(event.timer_canceled_event_attributes.timer_id, None)
    return pending


async def wait_for_pending_timers_to_fire(
    handle: WorkflowHandle[Any, Any], timeout: float = 60
) -> None:
    """Until every timer the workflow started has fired or been cancelled, and one at
    least was started (bounded): with no worker running, the server fires them alone."""
    deadline = time.monotonic() + timeout
    while True:
        history = await handle.fetch_history()
        started = pending_timers(history.events)
        fired = any(e.event_type == EventType.EVENT_TYPE_TIMER_FIRED for e in history.events)
        if fired and not started:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{handle.id}: timers {sorted(started)} never fired")
        await asyncio.sleep(0.1)
