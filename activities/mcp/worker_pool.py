"""The worker's MCP pool: each server's state and the client budget recorded in the store
for the API, budget events on every live session of the workspace."""

from __future__ import annotations

import asyncio
from typing import Any

from activities.mcp.pool import McpPool
from runtime.mcp.status import McpBudgetState, McpServerState, write_budget, write_state
from runtime.sessions import registry
from runtime.settings import Settings
from runtime.store import EventJournal, Store


def mcp_pool(store: Store, settings: Settings) -> McpPool:
    """The worker's pool: each server's state recorded in the store for the API."""

    async def on_state(workspace: str, state: McpServerState) -> None:
        await asyncio.to_thread(write_state, store, workspace, state)

    async def on_budget(
        workspace: str, event: str | None, payload: dict[str, Any], state: McpBudgetState
    ) -> None:
        await asyncio.to_thread(write_budget, store, workspace, state)
        if event is not None:
            await asyncio.to_thread(
                registry.journal_to_live_sessions,
                store,
                EventJournal(store),
                workspace,
                event,
                payload,
                retention=settings.event_ring_size,
            )

    return McpPool(
        listed_envs=tuple(settings.provider_key_envs),
        idle_seconds=settings.mcp_idle_seconds,
        on_state=on_state,
        budget=settings.mcp_client_budget,
        budget_mode=settings.effective_mcp_budget_mode,
        on_budget=on_budget,
    )
