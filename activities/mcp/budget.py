"""The MCP client budget of a worker's pool (spec mcp_guardrails), per workspace: the
servers holding a slot (opening or open), taken in the order they ask; in `enforce` the
ones past the budget refused; `mcp_budget_warning` once on crossing 75 % upwards,
re-armed below 37.5 %; every change recorded through `on_budget`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from activities.mcp.failures import McpUnavailable
from runtime.mcp.status import (
    BUDGET_HINT,
    BUDGET_REARM_FRACTION,
    BUDGET_WARN_FRACTION,
    BudgetMode,
    McpBudgetState,
)

log = logging.getLogger(__name__)


class ClientBudget:
    def __init__(
        self,
        budget: int | None,
        mode: BudgetMode,
        on_budget: Any,
        live: Callable[[str], list[str]],
    ) -> None:
        self.budget = budget
        self.mode: BudgetMode = mode if budget is not None else "off"
        # Called with (workspace, event type or None, payload, McpBudgetState).
        self._on_budget = on_budget
        # The servers of a workspace whose connection is open now.
        self._live = live
        self._slots: dict[str, list[str]] = {}
        self._warned: dict[str, bool] = {}
        self._refused: dict[str, list[str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def reserve(self, workspace: str, name: str) -> McpUnavailable | None:
        slots = self._slots.setdefault(workspace, [])
        if name in slots:
            return None
        if self.mode == "enforce" and self.budget is not None and len(slots) >= self.budget:
            self._refused.setdefault(workspace, [])
            if name not in self._refused[workspace]:
                self._refused[workspace].append(name)
            return McpUnavailable(
                "budget_exhausted",
                f"the MCP client budget ({self.budget}) is taken by {', '.join(slots)}",
                BUDGET_HINT,
            )
        slots.append(name)
        refused = self._refused.get(workspace, [])
        if name in refused:
            refused.remove(name)
        return None

    def release(self, workspace: str, name: str) -> bool:
        slots = self._slots.get(workspace, [])
        if name in slots:
            slots.remove(name)
            return True
        return False

    def state(self, workspace: str) -> McpBudgetState:
        live = self._live(workspace)
        return McpBudgetState(
            budget=self.budget,
            mode=self.mode,
            reserved=list(self._slots.get(workspace, [])),
            live=live,
            refused=list(self._refused.get(workspace, [])),
        )

    async def changed(self, workspace: str) -> None:
        """Record the accounting; `mcp_budget_warning` once on crossing 75 % of the budget
        upwards, re-armed below 37.5 % (the reference's hysteresis)."""
        if self._on_budget is None or self.mode == "off" or self.budget is None:
            return
        state = self.state(workspace)
        ratio = len(state.reserved) / self.budget
        event: str | None = None
        payload: dict[str, Any] = {}
        if not self._warned.get(workspace) and ratio >= BUDGET_WARN_FRACTION:
            self._warned[workspace] = True
            event = "mcp_budget_warning"
            payload = {
                "liveCount": len(state.live),
                "reservedCount": len(state.reserved),
                "budget": self.budget,
                "thresholdRatio": BUDGET_WARN_FRACTION,
                "mode": self.mode,
            }
        elif self._warned.get(workspace) and ratio < BUDGET_REARM_FRACTION:
            self._warned[workspace] = False
        await self.notify(workspace, event, payload, state)

    async def notify(
        self, workspace: str, event: str | None, payload: dict[str, Any], state: McpBudgetState
    ) -> None:
        # One record at a time per workspace, each the accounting as it is when written:
        # concurrent openings must not leave an older count as the last word.
        if self._on_budget is None:
            return
        lock = self._locks.setdefault(workspace, asyncio.Lock())
        async with lock:
            try:
                await self._on_budget(workspace, event, payload, self.state(workspace))
            except Exception:
                log.exception("could not record the MCP budget of %s", workspace)
