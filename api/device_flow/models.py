"""Bodies of the device-flow routes (spec, "Routes de flux d'authentification par
appareil"); absent fields are dropped (`exclude_none`)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema

from runtime.device_flow.contracts import FlowState
from runtime.wire import WireBody, WireModel, omittable


class DeviceFlowBody(WireBody):
    # The route reads its body itself (`read_body`): this model documents it, and an
    # unknown field is ignored there, so the schema does not forbid one.
    model_config = ConfigDict(extra="ignore")

    provider_id: str


class DeviceFlowEntry(WireModel):
    """A pending entry shows what the user needs; a terminal one hides it."""

    device_flow_id: str
    provider_id: str
    status: Literal["pending", "authorized", "failed", "cancelled"]
    user_code: str | SkipJsonSchema[None] = omittable("Pending entries only.")
    verification_uri: str | SkipJsonSchema[None] = omittable("Pending entries only.")
    verification_uri_complete: str | SkipJsonSchema[None] = omittable(
        "Pending entries only, when the IdP gave one."
    )
    expires_at: int | SkipJsonSchema[None] = omittable("Pending entries only (epoch ms).")
    interval_ms: int | SkipJsonSchema[None] = omittable("Pending entries only.")
    error_kind: str | SkipJsonSchema[None] = omittable("Failed entries only.")
    hint: str | SkipJsonSchema[None] = omittable("Failed entries, when there is one.")
    attached: bool | SkipJsonSchema[None] = omittable(
        "POST only: true when it joined a pending flow."
    )

    @classmethod
    def of(cls, state: FlowState, attached: bool | None = None) -> DeviceFlowEntry:
        status = "pending" if state.status == "requesting" else state.status
        entry = cls(
            device_flow_id=state.device_flow_id,
            provider_id=state.provider_id,
            status=status,
            attached=attached,
        )
        if state.pending:
            entry.user_code = state.user_code
            entry.verification_uri = state.verification_uri
            entry.verification_uri_complete = state.verification_uri_complete
            entry.expires_at = state.expires_at_ms
            entry.interval_ms = state.interval_ms
        else:
            entry.error_kind = state.error_kind
            entry.hint = state.hint
        return entry


class PendingDeviceFlow(WireModel):
    device_flow_id: str
    provider_id: str
    expires_at: int | SkipJsonSchema[None] = omittable("Epoch ms.")


class AuthStatus(WireModel):
    v: Literal[1] = 1
    workspace_cwd: str
    providers: list[str]
    pending_device_flows: list[PendingDeviceFlow]
    supported_device_flow_providers: list[str]
