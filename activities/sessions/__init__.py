"""A session's activities: model steps and the session agent's tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps` (imported when asked for, so
    that importing one of the feature's modules loads no other)."""
    from activities.sessions.session import SessionActivities

    session = SessionActivities(
        deps.store, deps.journal, deps.provider, deps.settings, mcp=deps.mcp
    )
    return [
        session.open_prompt,
        session.model_step,
        session.preview_tool,
        session.run_tool,
        session.run_effect,
        session.persist_approval_mode,
        session.recap,
        session.windows_tool,
        session.mcp_read,
        session.mcp_call,
        session.task_decision,
    ]
