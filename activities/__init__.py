"""All I/O of agentrt runs here, as Temporal activities.

One folder per feature (`activities/<feature>/`); each lists its activities in its
`__init__.py` (`activities(deps)`), and `build_activities` collects them for the worker.
Beside them, the kernel of this layer: the journal's activity, `deps.py`, `heartbeat.py`
and `activity_log.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.llm.contracts import ModelProvider
    from activities.mcp.pool import McpPool
    from runtime.settings import Settings
    from runtime.store import EventJournal, Store


def build_activities(
    store: Store,
    journal: EventJournal,
    provider: ModelProvider,
    settings: Settings,
    pool: McpPool | None = None,
) -> list[Callable[..., Any]]:
    """Every activity the worker registers, feature by feature, bound to this process's
    store, model and MCP connections (`pool`, the worker's: it closes them when it stops)."""
    from activities import (
        agent_tools,
        approvals,
        coding_tasks,
        device_flow,
        llm,
        mcp,
        notifications,
        sessions,
        standing_agents,
        windows,
    )
    from activities.deps import ActivityDeps
    from activities.journal import JournalActivities
    from activities.mcp.calls import McpCalls
    from activities.mcp.worker_pool import mcp_pool

    calls = McpCalls(pool or mcp_pool(store, settings), store, journal, settings)
    deps = ActivityDeps(store, journal, provider, settings, calls)
    features = (
        notifications,
        approvals,
        sessions,
        mcp,
        agent_tools,
        device_flow,
        standing_agents,
        llm,
        coding_tasks,
        windows,
    )
    return [
        JournalActivities(journal).append_events,
        *(activity for feature in features for activity in feature.activities(deps)),
    ]
