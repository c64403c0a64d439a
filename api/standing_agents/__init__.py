"""The standing agents' routes (spec 004): agents, decisions, registry, schedules, webhooks
and streams."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.standing_agents import (
        config,
        decisions,
        modes,
        redactor_signals,
        registry,
        routes,
        schedules,
        stream,
        tenant_features,
        webhooks,
    )

    return [
        tenant_features.router,
        routes.router,
        stream.router,
        decisions.router,
        registry.router,
        config.router,
        redactor_signals.router,
        webhooks.router,
        webhooks.delivery,
        schedules.router,
        modes.router,
    ]
