"""What `GET /daemon/status` answers (spec session-daemon-http-protocol), as wire models
(runtime/wire.py): snake_case fields, the spec's camelCase names on the wire. (/health
and /capabilities are api/service/models.py's.)

Fields that only `detail=full` adds are optional, and those routes drop
what they did not set (`response_model_exclude_unset`/`_none`): they are absent from a
plain answer, never `null`.
"""

from __future__ import annotations

from typing import Literal

from pydantic.json_schema import SkipJsonSchema

from runtime.wire import WireModel, omittable

# -- /daemon/status ----------------------------------------------------------------------------


class StatusIssue(WireModel):
    code: str
    severity: Literal["error", "warning"]
    message: str


class DaemonSection(WireModel):
    pid: int
    uptime_ms: int
    mode: Literal["http-bridge"]
    workspace_cwd: str
    agentrt_version: str
    daemon_id: str
    started_at: str | SkipJsonSchema[None] = omittable("With `detail=full`.")


class SecuritySection(WireModel):
    token_configured: bool
    require_auth: bool
    loopback_bind: bool
    allow_origin_configured: bool
    allow_origin_mode: Literal["any", "list", "none"]
    session_shell_command_enabled: bool


class LimitsSection(WireModel):
    max_sessions: int
    max_pending_prompts_per_session: int
    event_ring_size: int
    prompt_deadline_ms: int | None
    permission_response_timeout_ms: int
    body_limit_bytes: int


class ActiveSessions(WireModel):
    active: int


class PendingPermissions(WireModel):
    pending: int
    policy: str


class RateLimitCounters(WireModel):
    enabled: bool
    rejected_since_start: dict[str, int]


class ProcessSection(WireModel):
    rss: int


class RuntimeSection(WireModel):
    sessions: ActiveSessions
    permissions: PendingPermissions
    rate_limit: RateLimitCounters
    process: ProcessSection


class Poller(WireModel):
    type: Literal["workflow", "activity"]
    identity: str
    last_access_time: str
    live: bool


class TemporalSection(WireModel):
    address: str
    namespace: str
    task_queue: str
    embedded: bool
    reachable: bool
    worker_polling: bool
    live: dict[str, bool] | SkipJsonSchema[None] = omittable(
        "With `detail=full` and Temporal reachable: a live poller per task type."
    )
    pollers: list[Poller] | SkipJsonSchema[None] = omittable(
        "With `detail=full` and Temporal reachable."
    )


class StoreSection(WireModel):
    backend: str
    revision: str | None
    head_revision: str | None


class StatusCapabilities(WireModel):
    features: list[str]


class DaemonStatus(WireModel):
    """GET /daemon/status: operator diagnostics, every section computed."""

    v: Literal[1]
    detail: Literal["summary", "full"]
    generated_at: str
    status: Literal["ok", "warning", "error"]
    issues: list[StatusIssue]
    daemon: DaemonSection
    security: SecuritySection
    limits: LimitsSection
    runtime: RuntimeSection
    temporal: TemporalSection
    store: StoreSection
    capabilities: StatusCapabilities | SkipJsonSchema[None] = omittable("With `detail=full`.")
