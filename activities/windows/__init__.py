"""The Windows pool client, one activity per pool call."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps` (imported when asked for, so
    that importing one of the feature's modules loads no other)."""
    from activities.windows.pool import WindowsPoolActivities

    pool = WindowsPoolActivities(deps.settings, deps.journal)
    return [pool.open_session, pool.renew, pool.close_session, pool.call_verb]
