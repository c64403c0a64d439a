"""GET /daemon/status: operator diagnostics (`detail=summary|full`).

Every section is computed, none is a placeholder: the API process itself, the
security and limit settings, the rate limiter's counters, the store's schema
revision, and Temporal: reachable or not, and whether a worker polls the task
queue (from Temporal's task-queue description).
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, Request
from temporalio.service import RPCError

from api.deps import ConnectorDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.openapi import errors, query
from api.security.ratelimit import RateLimiter
from api.service.feature_tags import advertised_features
from api.sessions.daemon_models import (
    ActiveSessions,
    DaemonSection,
    DaemonStatus,
    LimitsSection,
    PendingPermissions,
    Poller,
    ProcessSection,
    RateLimitCounters,
    RuntimeSection,
    SecuritySection,
    StatusCapabilities,
    StatusIssue,
    StoreSection,
    TemporalSection,
)
from api.temporal import count_pending_permissions, describe_pollers, is_unavailable
from runtime import __version__
from runtime.failures import InvalidRequest
from runtime.mcp.status import BUDGET_WARN_FRACTION, read_budget
from runtime.sessions.registry import count_live
from runtime.settings import BODY_LIMIT_BYTES, Settings
from runtime.store import Store
from runtime.store.migrate import current_revision, head_revision
from runtime.timestamps import iso_ms

router = APIRouter()


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _mcp_budget_issues(store: Store, settings: Settings) -> list[StatusIssue]:
    """`mcp_budget_exhausted` (servers refused in enforce mode) and `mcp_budget_warning`
    (slots at 75 % of the budget or more), from the worker's accounting."""
    limit = settings.mcp_client_budget
    if settings.effective_mcp_budget_mode == "off" or limit is None:
        return []
    budget = read_budget(store, settings.workspace_cwd)
    if budget is None:
        return []
    if budget.refused:
        names = ", ".join(budget.refused)
        return [
            _issue(
                "mcp_budget_exhausted",
                "error",
                f"MCP client budget {limit} exhausted: refused {names}.",
            )
        ]
    if len(budget.reserved) >= BUDGET_WARN_FRACTION * limit:
        return [
            _issue(
                "mcp_budget_warning",
                "warning",
                f"{len(budget.reserved)} of {limit} MCP client slots in use.",
            )
        ]
    return []


def _issue(code: str, severity: Literal["error", "warning"], message: str) -> StatusIssue:
    return StatusIssue(code=code, severity=severity, message=message)


@router.get(
    "/daemon/status",
    responses=errors(400),
    openapi_extra=query(
        "detail", {"type": "string", "enum": ["summary", "full"]}, "How much to report."
    ),
    response_model_exclude_unset=True,
)
async def daemon_status(
    request: Request, settings: SettingsDep, store: StoreDep, connector: ConnectorDep
) -> DaemonStatus:
    asked = request.query_params.get("detail", "summary")
    if asked not in ("summary", "full"):
        raise ApiError.of(
            InvalidRequest(message="detail must be one of: summary, full", code="invalid_detail")
        )
    detail: Literal["summary", "full"] = "full" if asked == "full" else "summary"
    state = request.app.state
    issues: list[StatusIssue] = []
    limiter: RateLimiter | None = state.rate_limiter

    # The route drops what was not set: `live` and `pollers` only with `detail=full`.
    temporal = TemporalSection(
        address=connector.address,
        namespace=connector.namespace,
        task_queue=settings.task_queue,
        embedded=state.temporal_embedded,
        reachable=False,
        worker_polling=False,
    )
    active_sessions = await asyncio.to_thread(count_live, store)
    pending_permissions = 0
    try:
        client = await connector.get()
        pollers = await describe_pollers(client, settings.task_queue)
        temporal.reachable = True
        temporal.worker_polling = pollers["workerPolling"]
        if detail == "full":
            temporal.live = pollers["live"]
            temporal.pollers = [Poller.model_validate(poller) for poller in pollers["pollers"]]
        pending_permissions = await count_pending_permissions(client, settings.workspace_cwd)
    except (ApiError, RPCError) as err:
        if is_unavailable(err):
            connector.mark_down()
        issues.append(_issue("temporal_unreachable", "error", f"Temporal: {err}"))
    if temporal.reachable and not temporal.worker_polling:
        issues.append(
            _issue(
                "worker_not_polling",
                "error",
                f"No live worker polls task queue {settings.task_queue!r}.",
            )
        )

    revision = current_revision(store.engine)
    head = head_revision()
    if revision != head:
        issues.append(
            _issue(
                "store_migration_pending",
                "warning",
                f"Store at revision {revision}, code expects {head}.",
            )
        )
    rejected = dict(limiter.rejected) if limiter else {"prompt": 0, "mutation": 0, "read": 0}
    if sum(rejected.values()):
        issues.append(
            _issue(
                "rate_limit_hits",
                "warning",
                f"{sum(rejected.values())} requests rate limited since start.",
            )
        )

    issues += await asyncio.to_thread(_mcp_budget_issues, store, settings)

    severities = {issue.severity for issue in issues}
    status: Literal["ok", "warning", "error"] = (
        "error" if "error" in severities else "warning" if severities else "ok"
    )
    allow_mode: Literal["any", "list", "none"] = (
        "any" if "*" in settings.allow_origin else "list" if settings.allow_origin else "none"
    )
    daemon = DaemonSection(
        pid=os.getpid(),
        uptime_ms=int((time.monotonic() - state.started_monotonic) * 1000),
        mode="http-bridge",
        workspace_cwd=settings.workspace_cwd,
        agentrt_version=__version__,
        daemon_id=state.daemon_id,
    )
    body = DaemonStatus(
        v=1,
        detail=detail,
        generated_at=iso_ms(datetime.now(UTC)),
        status=status,
        issues=issues,
        daemon=daemon,
        security=SecuritySection(
            token_configured=settings.token_configured,
            require_auth=settings.require_auth,
            loopback_bind=settings.loopback_bind,
            allow_origin_configured=bool(settings.allow_origin),
            allow_origin_mode=allow_mode,
            session_shell_command_enabled=settings.session_shell,
        ),
        limits=LimitsSection(
            max_sessions=settings.max_sessions,
            max_pending_prompts_per_session=settings.max_pending_prompts_per_session,
            event_ring_size=settings.event_ring_size,
            prompt_deadline_ms=settings.prompt_deadline_ms,
            permission_response_timeout_ms=settings.permission_response_timeout_ms,
            body_limit_bytes=BODY_LIMIT_BYTES,
        ),
        runtime=RuntimeSection(
            sessions=ActiveSessions(active=active_sessions),
            permissions=PendingPermissions(
                pending=pending_permissions, policy=settings.permission_policy
            ),
            rate_limit=RateLimitCounters(
                enabled=limiter is not None, rejected_since_start=rejected
            ),
            process=ProcessSection(rss=_rss_bytes()),
        ),
        temporal=temporal,
        store=StoreSection(backend=store.backend, revision=revision, head_revision=head),
    )
    if detail == "full":
        # Set after the build, so that a summary leaves them unset (absent on the wire).
        daemon.started_at = iso_ms(state.started_at)
        body.capabilities = StatusCapabilities(features=advertised_features(settings))
    return body
