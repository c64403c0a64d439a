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
from typing import Any

from fastapi import APIRouter, Request
from temporalio.service import RPCError

from api.deps import ConnectorDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.openapi import errors, query
from api.security.ratelimit import RateLimiter
from api.service.feature_tags import advertised_features
from api.sessions.daemon_models import DaemonStatus
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


def _mcp_budget_issues(store: Store, settings: Settings) -> list[dict[str, str]]:
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


def _issue(code: str, severity: str, message: str) -> dict[str, str]:
    return {"code": code, "severity": severity, "message": message}


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
    detail = request.query_params.get("detail", "summary")
    if detail not in ("summary", "full"):
        raise ApiError.of(
            InvalidRequest(message="detail must be one of: summary, full", code="invalid_detail")
        )
    state = request.app.state
    issues: list[dict[str, str]] = []
    limiter: RateLimiter | None = state.rate_limiter

    temporal_section: dict[str, Any] = {
        "address": connector.address,
        "namespace": connector.namespace,
        "taskQueue": settings.task_queue,
        "embedded": state.temporal_embedded,
        "reachable": False,
        "workerPolling": False,
    }
    active_sessions = await asyncio.to_thread(count_live, store)
    pending_permissions = 0
    try:
        client = await connector.get()
        pollers = await describe_pollers(client, settings.task_queue)
        temporal_section.update(reachable=True, workerPolling=pollers["workerPolling"])
        if detail == "full":
            temporal_section.update(live=pollers["live"], pollers=pollers["pollers"])
        pending_permissions = await count_pending_permissions(client, settings.workspace_cwd)
    except (ApiError, RPCError) as err:
        if is_unavailable(err):
            connector.mark_down()
        issues.append(_issue("temporal_unreachable", "error", f"Temporal: {err}"))
    if temporal_section["reachable"] and not temporal_section["workerPolling"]:
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

    severities = {issue["severity"] for issue in issues}
    status = "error" if "error" in severities else "warning" if severities else "ok"
    allow_mode = (
        "any" if "*" in settings.allow_origin else "list" if settings.allow_origin else "none"
    )
    body: dict[str, Any] = {
        "v": 1,
        "detail": detail,
        "generatedAt": iso_ms(datetime.now(UTC)),
        "status": status,
        "issues": issues,
        "daemon": {
            "pid": os.getpid(),
            "uptimeMs": int((time.monotonic() - state.started_monotonic) * 1000),
            "mode": "http-bridge",
            "workspaceCwd": settings.workspace_cwd,
            "agentrtVersion": __version__,
            "daemonId": state.daemon_id,
        },
        "security": {
            "tokenConfigured": settings.token_configured,
            "requireAuth": settings.require_auth,
            "loopbackBind": settings.loopback_bind,
            "allowOriginConfigured": bool(settings.allow_origin),
            "allowOriginMode": allow_mode,
            "sessionShellCommandEnabled": settings.session_shell,
        },
        "limits": {
            "maxSessions": settings.max_sessions,
            "maxPendingPromptsPerSession": settings.max_pending_prompts_per_session,
            "eventRingSize": settings.event_ring_size,
            "promptDeadlineMs": settings.prompt_deadline_ms,
            "permissionResponseTimeoutMs": settings.permission_response_timeout_ms,
            "bodyLimitBytes": BODY_LIMIT_BYTES,
        },
        "runtime": {
            "sessions": {"active": active_sessions},
            "permissions": {"pending": pending_permissions, "policy": settings.permission_policy},
            "rateLimit": {"enabled": limiter is not None, "rejectedSinceStart": rejected},
            "process": {"rss": _rss_bytes()},
        },
        "temporal": temporal_section,
        "store": {"backend": store.backend, "revision": revision, "headRevision": head},
    }
    if detail == "full":
        body["daemon"]["startedAt"] = iso_ms(state.started_at)
        body["capabilities"] = {"features": advertised_features(settings)}
    return DaemonStatus.model_validate(body)
