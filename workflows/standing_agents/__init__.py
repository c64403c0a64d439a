"""StandingAgentWorkflow and the firing of its schedules."""

from __future__ import annotations


def workflows() -> list[type]:
    """This feature's workflow classes, for the worker (imported when asked for, so that
    importing one of the feature's modules loads no other)."""
    from workflows.standing_agents.agent import StandingAgentWorkflow
    from workflows.standing_agents.schedule import AgentScheduleWorkflow

    return [StandingAgentWorkflow, AgentScheduleWorkflow]
