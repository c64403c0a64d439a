"""Bodies of the device-flow routes (spec, "Routes de flux d'authentification par
appareil"); absent fields are dropped (`exclude_none`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from api.openapi import omittable
from runtime.device_flow.contracts import FlowState


class DeviceFlowBody(BaseModel):
    providerId: str


class DeviceFlowEntry(BaseModel):
    """A pending entry shows what the user needs; a terminal one hides it."""

    deviceFlowId: str
    providerId: str
    status: Literal["pending", "authorized", "failed", "cancelled"]
    userCode: str | SkipJsonSchema[None] = omittable("Pending entries only.")
    verificationUri: str | SkipJsonSchema[None] = omittable("Pending entries only.")
    verificationUriComplete: str | SkipJsonSchema[None] = omittable(
        "Pending entries only, when the IdP gave one."
    )
    expiresAt: int | SkipJsonSchema[None] = omittable("Pending entries only (epoch ms).")
    intervalMs: int | SkipJsonSchema[None] = omittable("Pending entries only.")
    errorKind: str | SkipJsonSchema[None] = omittable("Failed entries only.")
    hint: str | SkipJsonSchema[None] = omittable("Failed entries, when there is one.")
    attached: bool | SkipJsonSchema[None] = omittable(
        "POST only: true when it joined a pending flow."
    )

    @classmethod
    def of(cls, state: FlowState, attached: bool | None = None) -> DeviceFlowEntry:
        status = "pending" if state.status == "requesting" else state.status
        entry = cls(
            deviceFlowId=state.device_flow_id,
            providerId=state.provider_id,
            status=status,
            attached=attached,
        )
        if state.pending:
            entry.userCode = state.user_code
            entry.verificationUri = state.verification_uri
            entry.verificationUriComplete = state.verification_uri_complete
            entry.expiresAt = state.expires_at_ms
            entry.intervalMs = state.interval_ms
        else:
            entry.errorKind = state.error_kind
            entry.hint = state.hint
        return entry


class PendingDeviceFlow(BaseModel):
    deviceFlowId: str
    providerId: str
    expiresAt: int | SkipJsonSchema[None] = omittable("Epoch ms.")


class AuthStatus(BaseModel):
    v: Literal[1] = 1
    workspaceCwd: str
    providers: list[str]
    pendingDeviceFlows: list[PendingDeviceFlow]
    supportedDeviceFlowProviders: list[str]
