"""What crosses Temporal for a device flow: the workflow's input and state, and the
activities' inputs and outputs, called by name (`DeviceFlowActivity`)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel
from temporalio.common import SearchAttributePair

from runtime.activity_contract import ActivityContract
from runtime.device_flow.providers import DeviceFlowProvider
from runtime.search_attributes import starting
from runtime.sessions.contracts import WorkerBound

# Spec: a terminal entry stays readable this long, then 404 device_flow_not_found.
GRACE_MS = 5 * 60 * 1000
# Spec: at most this many pending flows per workspace.
MAX_ACTIVE_FLOWS = 4
# RFC 8628 §3.5: slow_down adds 5 seconds to the polling interval.
SLOW_DOWN_STEP_S = 5
DEFAULT_INTERVAL_S = 5

FailureKind = Literal[
    "expired_token", "access_denied", "invalid_grant", "upstream_error", "persist_failed"
]
FlowStatus = Literal["requesting", "pending", "authorized", "failed", "cancelled"]


class DeviceFlowActivity(StrEnum):
    """The device-flow activities, by name: activities/device_flow/ implements them, and
    DeviceFlowWorkflow and a model call's pause call them by these names."""

    REQUEST_CODE = "device_flow.request_code"
    POLL_TOKEN = "device_flow.poll_token"
    EMIT = "device_flow.emit"
    FORGET = "device_flow.forget"
    # A model call's pause (workflows/device_flow/pause.py): start or attach, then read.
    ENSURE = "device_flow.ensure"
    READ = "device_flow.read"


class DeviceFlowInput(BaseModel):
    """DeviceFlowWorkflow's input: the provider whose token the flow asks for, in the
    workspace whose sessions hear of it."""

    workspace_cwd: str
    provider: DeviceFlowProvider
    # Who started this run: a POST that finds its own request id started it (201).
    request_id: str
    event_retention: int | None = None


class DeviceCode(BaseModel):
    """What the workflow needs of the IdP's device authorization response (RFC 8628 §3.2).

    The device code and the PKCE verifier are not here: whoever holds them can race the
    daemon for the token, and history is readable in plain text (Web UI, `temporal
    workflow show`). `REQUEST_CODE` keeps them on the daemon's disk under the flow id;
    `POLL_TOKEN` reads them from there and `FORGET` deletes them when the flow ends. The
    user code and verification URIs are what the user is shown anyway."""

    user_code: str
    verification_uri: str
    verification_uri_complete: str | None = None
    expires_in: int
    interval: int = DEFAULT_INTERVAL_S


class RequestCodeResult(BaseModel):
    """REQUEST_CODE's result: the IdP's code, or None and a `hint` of why it gave none."""

    code: DeviceCode | None = None
    hint: str | None = None


class PollInput(BaseModel):
    """One token request of the flow `flow_id` (its run id): the device code and the
    verifier are read from the daemon's disk, they never cross Temporal."""

    provider: DeviceFlowProvider
    flow_id: str


class ForgetInput(BaseModel):
    """The flow `flow_id` ended: delete its device code and verifier from the disk."""

    flow_id: str


class PollOutcome(BaseModel):
    """One token request's meaning (the tokens themselves never leave the activity)."""

    outcome: Literal["pending", "slow_down", "authorized", "failed"]
    error_kind: FailureKind | None = None
    hint: str | None = None
    expires_at_ms: int | None = None
    account_alias: str | None = None


class EmitInput(BaseModel):
    """An `auth_device_flow_*` event for every live session of the workspace, or only for
    `session_id` (a model call paused on a flow announces it on its own session)."""

    workspace_cwd: str
    type: str
    data: dict[str, Any]
    dedupe_scope: str
    retention: int | None = None
    session_id: str | None = None


def started_event_scope(device_flow_id: str) -> str:
    """The dedupe scope of a flow's `auth_device_flow_started`: the flow's own broadcast
    and a paused call's announcement on its session share it, so a session that got the
    broadcast does not get the event twice."""
    return f"device-flow/{device_flow_id}/started"


def started_event_data(state: FlowState) -> dict[str, Any]:
    """The spec's `{deviceFlowId, providerId, expiresAt}` (never the user code)."""
    return {
        "deviceFlowId": state.device_flow_id,
        "providerId": state.provider_id,
        "expiresAt": state.expires_at_ms,
    }


class FlowState(BaseModel):
    """The workflow's state, as the API reads it (never the device code or tokens)."""

    device_flow_id: str
    provider_id: str
    request_id: str
    status: FlowStatus = "requesting"
    user_code: str | None = None
    verification_uri: str | None = None
    verification_uri_complete: str | None = None
    expires_at_ms: int | None = None
    interval_ms: int | None = None
    error_kind: str | None = None
    hint: str | None = None
    terminal_at_ms: int | None = None

    @property
    def pending(self) -> bool:
        """Whether the user has a code to enter and the flow polls for its token."""
        return self.status == "pending"

    @property
    def terminal(self) -> bool:
        """Whether the flow ended: authorized, failed or cancelled."""
        return self.status in ("authorized", "failed", "cancelled")


class CancelRequest(WorkerBound):
    """DELETE: cancel a pending flow (a terminal one is left as it is)."""


class CancelResult(BaseModel):
    """The `cancel` update's answer: False when the flow had ended already."""

    cancelled: bool


class EnsureFlowInput(BaseModel):
    """A model call needs a token of `provider_id`: start its flow, or attach to the one
    running. `request_id` is the pausing call's (a retry finds the run it started);
    `since_ms` is when the pause began: a flow that ended before then is of no more use
    (its token is what the call found unusable) and is released for a new one."""

    provider_id: str
    workspace_cwd: str | None  # None: the worker's workspace (a turn's or an agent's call)
    request_id: str
    since_ms: int


class EnsureFlowResult(BaseModel):
    """ENSURE's result: the flow the paused call waits on, or why it waits on none."""

    device_flow_id: str | None = None
    # A usable token is there already (another call's flow ended meanwhile): no flow.
    token_ready: bool = False
    workspace_cwd: str | None = None  # the flow's workspace, resolved
    event_retention: int | None = None  # the deployment's, for the announcement
    # No flow could be started (an unknown provider): the call ends with this.
    error_kind: str | None = None
    hint: str | None = None


class ReadFlowInput(BaseModel):
    """READ's argument: the run `device_flow_id` of the provider's flow in the workspace."""

    provider_id: str
    workspace_cwd: str
    device_flow_id: str


class ReadFlowResult(BaseModel):
    """READ's result: the flow's state, as its `state` query answers."""

    state: FlowState | None = None  # None: the run is gone (terminated from outside)


class DeviceFlowOutcome(BaseModel):
    """How a model call's pause on a device flow ended: `authorized` (the call makes its
    attempt again, with the new token) or not, with the flow's `errorKind`."""

    provider_id: str
    device_flow_id: str | None = None
    authorized: bool
    error_kind: str | None = None
    hint: str | None = None


class DeviceFlowActivityContracts:
    """Each DeviceFlowActivity with the types of its argument and result."""

    ENSURE: Final = ActivityContract(DeviceFlowActivity.ENSURE, EnsureFlowInput, EnsureFlowResult)
    READ: Final = ActivityContract(DeviceFlowActivity.READ, ReadFlowInput, ReadFlowResult)
    REQUEST_CODE: Final = ActivityContract(
        DeviceFlowActivity.REQUEST_CODE, DeviceFlowProvider, RequestCodeResult
    )
    POLL_TOKEN: Final = ActivityContract(DeviceFlowActivity.POLL_TOKEN, PollInput, PollOutcome)
    FORGET: Final = ActivityContract(DeviceFlowActivity.FORGET, ForgetInput, bool)
    EMIT: Final = ActivityContract(DeviceFlowActivity.EMIT, EmitInput, int)


def device_flow_workflow_id(workspace_cwd: str, provider_id: str) -> str:
    """The id of a workspace's device flow with a provider: one at a time."""
    return f"device-flow/{workspace_cwd}/{provider_id}"


def device_flow_search_attributes(request: DeviceFlowInput) -> list[SearchAttributePair[Any]]:
    """A new flow's search attributes: a device flow, of its workspace, pending."""
    return starting("device-flow", request.workspace_cwd, status="pending")
