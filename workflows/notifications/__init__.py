"""One delivery workflow per outbound-webhook endpoint."""

from __future__ import annotations


def workflows() -> list[type]:
    """This feature's workflow classes, for the worker (imported when asked for, so that
    importing one of the feature's modules loads no other)."""
    from workflows.notifications.delivery import NotificationEndpointWorkflow

    return [NotificationEndpointWorkflow]
