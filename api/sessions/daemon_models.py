"""What the daemon's own routes answer: /health, /capabilities and /daemon/status
(spec session-daemon-http-protocol), with the spec's camelCase field names.

Fields that only `?deep=1` or `detail=full` add are optional, and those routes drop
what they did not set (`response_model_exclude_unset`/`_none`): they are absent from a
plain answer, never `null`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from api.openapi import omittable


class Health(BaseModel):
    status: Literal["ok"]
    sessions: int | SkipJsonSchema[None] = omittable("With `?deep=1`: live sessions.")
    pendingPermissions: int | SkipJsonSchema[None] = omittable(
        "With `?deep=1`: sessions of this daemon waiting on a permission."
    )


# -- /capabilities ---------------------------------------------------------------------------


class ProtocolVersions(BaseModel):
    current: str
    supported: list[str]


class CapabilityPolicy(BaseModel):
    permission: str


class CapabilityLimits(BaseModel):
    maxSessions: int
    maxPendingPromptsPerSession: int
    sessionRestoreTimeoutMs: int
    permissionResponseTimeoutMs: int


class Capabilities(BaseModel):
    """What this daemon speaks, and the features whose behaviour exists here."""

    v: Literal[1]
    protocolVersions: ProtocolVersions
    agentrtVersion: str
    mode: Literal["http-bridge"]
    features: list[str]
    modelServices: list[dict[str, object]]
    workspaceCwd: str
    transports: list[str]
    policy: CapabilityPolicy
    featureModes: dict[str, list[str]]
    limits: CapabilityLimits


# -- /daemon/status ----------------------------------------------------------------------------


class StatusIssue(BaseModel):
    code: str
    severity: Literal["error", "warning"]
    message: str


class DaemonSection(BaseModel):
    pid: int
    uptimeMs: int
    mode: Literal["http-bridge"]
    workspaceCwd: str
    agentrtVersion: str
    daemonId: str
    startedAt: str | SkipJsonSchema[None] = omittable("With `detail=full`.")


class SecuritySection(BaseModel):
    tokenConfigured: bool
    requireAuth: bool
    loopbackBind: bool
    allowOriginConfigured: bool
    allowOriginMode: Literal["any", "list", "none"]
    sessionShellCommandEnabled: bool


class LimitsSection(BaseModel):
    maxSessions: int
    maxPendingPromptsPerSession: int
    eventRingSize: int
    promptDeadlineMs: int | None
    permissionResponseTimeoutMs: int
    bodyLimitBytes: int


class ActiveSessions(BaseModel):
    active: int


class PendingPermissions(BaseModel):
    pending: int
    policy: str


class RateLimitCounters(BaseModel):
    enabled: bool
    rejectedSinceStart: dict[str, int]


class ProcessSection(BaseModel):
    rss: int


class RuntimeSection(BaseModel):
    sessions: ActiveSessions
    permissions: PendingPermissions
    rateLimit: RateLimitCounters
    process: ProcessSection


class Poller(BaseModel):
    type: Literal["workflow", "activity"]
    identity: str
    lastAccessTime: str
    live: bool


class TemporalSection(BaseModel):
    address: str
    namespace: str
    taskQueue: str
    embedded: bool
    reachable: bool
    workerPolling: bool
    live: dict[str, bool] | SkipJsonSchema[None] = omittable(
        "With `detail=full` and Temporal reachable: a live poller per task type."
    )
    pollers: list[Poller] | SkipJsonSchema[None] = omittable(
        "With `detail=full` and Temporal reachable."
    )


class StoreSection(BaseModel):
    backend: str
    revision: str | None
    headRevision: str | None


class StatusCapabilities(BaseModel):
    features: list[str]


class DaemonStatus(BaseModel):
    """GET /daemon/status: operator diagnostics, every section computed."""

    v: Literal[1]
    detail: Literal["summary", "full"]
    generatedAt: str
    status: Literal["ok", "warning", "error"]
    issues: list[StatusIssue]
    daemon: DaemonSection
    security: SecuritySection
    limits: LimitsSection
    runtime: RuntimeSection
    temporal: TemporalSection
    store: StoreSection
    capabilities: StatusCapabilities | SkipJsonSchema[None] = omittable("With `detail=full`.")
