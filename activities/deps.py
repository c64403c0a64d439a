"""What every feature's activities are built from: this worker's store, journal, model,
settings and MCP connections (`build_activities` makes one, each feature's
`activities(deps)` takes what it needs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from activities.llm.contracts import ModelProvider
    from activities.mcp.calls import McpCalls
    from runtime.settings import Settings
    from runtime.store import EventJournal, Store


@dataclass(frozen=True)
class ActivityDeps:
    store: Store
    journal: EventJournal
    provider: ModelProvider
    settings: Settings
    mcp: McpCalls
