"""The activities of a schedule's firing (workflows/standing_agents/schedule.py): enqueue its tick
once, and tell whether that tick still holds the schedule's overlap slot."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from runtime.standing_agents import schedules
from runtime.standing_agents.schedules import (
    AgentScheduleActivityContracts,
    FireRequest,
    FireResult,
    PendingRequest,
)
from runtime.store import Store


class AgentScheduleActivities:
    def __init__(self, store: Store) -> None:
        self.store = store

    @AgentScheduleActivityContracts.FIRE.defn
    async def fire(self, request: FireRequest) -> FireResult:
        return await asyncio.to_thread(schedules.fire, self.store, request, datetime.now(UTC))

    @AgentScheduleActivityContracts.PENDING.defn
    async def pending(self, request: PendingRequest) -> bool:
        return await asyncio.to_thread(schedules.pending, self.store, request)
