"""The activities of standing agents (StandingAgentWorkflow).

`StandingAgentActivities` is imported on first use: the model gateway
(activities/llm/gateway.py) prices replies with this package's `pricing`, and the
agents' activities use the gateway, so an eager import here would be a cycle for
whoever imports the gateway first (the session and agent-tools activities do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.standing_agent.activities import StandingAgentActivities

__all__ = ["StandingAgentActivities"]


def __getattr__(name: str) -> Any:
    if name == "StandingAgentActivities":
        from activities.standing_agent.activities import StandingAgentActivities

        return StandingAgentActivities
    raise AttributeError(name)
