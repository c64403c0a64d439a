"""Deterministic workflow code only: no I/O, no clock, no randomness but Temporal's.

One folder per feature (`workflows/<feature>/`); each lists its workflow classes in its
`__init__.py` (`workflows()`), and `all_workflows` collects them for the worker. Beside
them, the kernel of this layer: `patches.py` (the register of every patch id) and
`activity_calls.py` (how a workflow calls an activity, by its contract).
"""

from __future__ import annotations


def all_workflows() -> list[type]:
    """Every workflow class the worker registers, feature by feature."""
    from workflows import (
        agent_tools,
        approvals,
        coding_tasks,
        device_flow,
        mcp,
        notifications,
        sessions,
        standing_agents,
        windows,
    )

    features = (
        agent_tools,
        sessions,
        device_flow,
        standing_agents,
        windows,
        mcp,
        coding_tasks,
        notifications,
        approvals,
    )
    return [cls for feature in features for cls in feature.workflows()]
