"""What the service's own routes answer: `GET /health` and `GET /capabilities` (spec
session-daemon-http-protocol), as wire models (runtime/wire.py). Fields that only
`?deep=1` adds are `omittable`: absent from a plain answer, never `null`."""

from __future__ import annotations

from typing import Literal

from pydantic.json_schema import SkipJsonSchema

from runtime.wire import WireModel, omittable


class Health(WireModel):
    status: Literal["ok"]
    sessions: int | SkipJsonSchema[None] = omittable("With `?deep=1`: live sessions.")
    pending_permissions: int | SkipJsonSchema[None] = omittable(
        "With `?deep=1`: sessions of this daemon waiting on a permission."
    )


# -- /capabilities ---------------------------------------------------------------------------


class ProtocolVersions(WireModel):
    current: str
    supported: list[str]


class CapabilityPolicy(WireModel):
    permission: str


class CapabilityLimits(WireModel):
    max_sessions: int
    max_pending_prompts_per_session: int
    session_restore_timeout_ms: int
    permission_response_timeout_ms: int


class Capabilities(WireModel):
    """What this daemon speaks, and the features whose behaviour exists here."""

    v: Literal[1]
    protocol_versions: ProtocolVersions
    agentrt_version: str
    mode: Literal["http-bridge"]
    features: list[str]
    model_services: list[dict[str, object]]
    workspace_cwd: str
    transports: list[str]
    policy: CapabilityPolicy
    feature_modes: dict[str, list[str]]
    limits: CapabilityLimits
