"""The agent-tools turn's activities."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps` (imported when asked for, so
    that importing one of the feature's modules loads no other)."""
    from activities.agent_tools.turn import AgentToolsActivities

    agent_tools = AgentToolsActivities(
        deps.store,
        deps.journal,
        deps.provider,
        settings=deps.settings,
        max_results=deps.settings.agent_tools_max_results,
    )
    return [agent_tools.call_tool, agent_tools.model_step, agent_tools.read_research]
