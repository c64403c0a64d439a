"""The activities of standing agents (StandingAgentWorkflow)."""

from __future__ import annotations

from activities.standing_agent.activities import StandingAgentActivities

__all__ = ["StandingAgentActivities"]
