"""The device flow's activities: the identity provider's side, and a model call's pause."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps` (imported when asked for, so
    that importing one of the feature's modules loads no other)."""
    from activities.device_flow.pause import DeviceFlowPauseActivities
    from activities.device_flow.provider import IdentityActivities

    identity = IdentityActivities(deps.store, deps.journal, deps.settings.resolved_data_dir)
    pause = DeviceFlowPauseActivities(deps.settings)
    return [
        identity.request_code,
        identity.poll_token,
        identity.emit,
        identity.forget,
        pause.ensure_flow,
        pause.read_flow,
    ]
