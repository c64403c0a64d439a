"""What crosses Temporal for outbound webhooks: the endpoint workflow's input, its wake
signal, its delivery activity's result."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel

from runtime.activity_contract import ActivityContract

WORKFLOW_NAME: Final = "NotificationEndpointWorkflow"
WAKE_SIGNAL: Final = "wake"
DELIVER_DUE: Final = "notifications.deliver_due"


def endpoint_workflow_id(endpoint_id: str) -> str:
    """The id of the endpoint's NotificationEndpointWorkflow (one per endpoint)."""
    return f"notifications/{endpoint_id}"


class EndpointRun(BaseModel):
    """The endpoint workflow's input, and its delivery activity's argument (one pass)."""

    endpoint_id: str
    # A wake ran this pass: the rows it announced may commit a moment after the wake.
    woken: bool = False


class DeliverResult(BaseModel):
    """What one pass delivered; when the next pending delivery falls due (ms from now;
    None: nothing pending); `gone`: the endpoint was removed, the workflow ends."""

    delivered: int = 0
    failed: int = 0
    next_due_ms: int | None = None
    gone: bool = False


DELIVER_DUE_CONTRACT: Final = ActivityContract(DELIVER_DUE, EndpointRun, DeliverResult)
