"""The activities of standing agents (StandingAgentWorkflow)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps` (imported when asked for, so
    that importing one of the feature's modules loads no other)."""
    from activities.standing_agents.agent import StandingAgentActivities
    from activities.standing_agents.schedules import AgentScheduleActivities

    agents = StandingAgentActivities(
        deps.store, deps.journal, deps.provider, deps.settings, mcp=deps.mcp
    )
    schedules = AgentScheduleActivities(deps.store)
    return [
        agents.load_instance,
        agents.next_event,
        agents.begin_tick,
        agents.model_step,
        agents.run_tool,
        agents.run_approved_mcp_call,
        agents.complete_tick,
        agents.resume_regenerated,
        schedules.fire,
        schedules.pending,
    ]
