"""Waits on a workflow's history: a test that lets a server-side timer or timeout fall due
(no worker running, or the worker stopped) waits until the server has recorded it, not
for a fixed time."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle


async def wait_for_history_event(
    handle: WorkflowHandle[Any, Any], event_type: EventType.ValueType, timeout: float = 60
) -> None:
    """Until the workflow's history holds an event of `event_type` (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        history = await handle.fetch_history()
        if any(e.event_type == event_type for e in history.events):
            return
        if time.monotonic() > deadline:
            name = EventType.Name(event_type)
            raise AssertionError(f"{handle.id}: no {name} in its history after {timeout} s")
        await asyncio.sleep(0.1)


async def wait_for_pending_timers_to_fire(
    handle: WorkflowHandle[Any, Any], timeout: float = 60
) -> None:
    """Until every timer the workflow started has fired or been cancelled, and one at
    least was started (bounded): with no worker running, the server fires them alone."""
    deadline = time.monotonic() + timeout
    while True:
        history = await handle.fetch_history()
        started: set[str] = set()
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
                started.add(event.timer_started_event_attributes.timer_id)
            elif event.event_type == EventType.EVENT_TYPE_TIMER_FIRED:
                started.discard(event.timer_fired_event_attributes.timer_id)
            elif event.event_type == EventType.EVENT_TYPE_TIMER_CANCELED:
                started.discard(event.timer_canceled_event_attributes.timer_id)
        fired = any(e.event_type == EventType.EVENT_TYPE_TIMER_FIRED for e in history.events)
        if fired and not started:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{handle.id}: timers {sorted(started)} never fired")
        await asyncio.sleep(0.1)
