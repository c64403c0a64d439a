"""The app factory: settings in, a FastAPI app with the security chain and every router out."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from types import ModuleType

from fastapi import FastAPI
from starlette.routing import Route
from temporalio.client import Client

from api import (
    agent_tools,
    approvals,
    coding_tasks,
    device_flow,
    llm,
    mcp,
    notifications,
    service,
    sessions,
    standing_agents,
    tenants,
    windows,
    workspace,
)
from api.access_log import AccessLog
from api.approvals.contracts import Answerer
from api.errors import LastResort, install_error_handlers
from api.mcp.server import MCP_PATH, McpEndpoint
from api.openapi import install_openapi
from api.security import (
    BearerAuth,
    BodyLimit,
    CorsPolicy,
    HostAllowlist,
    RateLimit,
    RateLimiter,
    SameOriginStrip,
)
from api.security.bearer import auth_failure_limiter
from api.security.browser import MUTATIONS_PER_MINUTE
from api.security.hosts import loopback_hosts
from api.standing_agents.temporal_calls import Sweeper
from api.temporal import TemporalConnector
from api.tracing import RequestSpans
from runtime import __version__
from runtime.approvals import clock as approval_clock
from runtime.approvals.ledger import ApprovalKind
from runtime.journal_projections import JOURNAL_PROJECTIONS
from runtime.notifications import outbox
from runtime.notifications.waker import Waker
from runtime.settings import BODY_LIMIT_BYTES, Settings
from runtime.standing_agents.modes import seed_modes
from runtime.store import EventJournal, Store
from runtime.store.migrate import upgrade_to_head
from runtime.telemetry import setup_tracing

log = logging.getLogger(__name__)

# Every feature's routers (api/<feature>/__init__.py lists them), in the order they are
# matched: the service's own pages first; and the approvals' answerers of those that answer
# a kind of the inbox (`approval_answerers()`).
FEATURES = (
    service,
    sessions,
    agent_tools,
    workspace,
    mcp,
    device_flow,
    tenants,
    standing_agents,
    approvals,
    notifications,
    coding_tasks,
    llm,
    windows,
)


def create_app(
    settings: Settings,
    *,
    temporal_client: Client | None = None,
    store: Store | None = None,
    temporal_embedded: bool = False,
) -> FastAPI:
    """Build the API. Temporal and the store are opened in the lifespan unless given."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        setup_tracing("agentrt-api")
        owned_store = store is None
        app.state.store = store or Store(settings.resolved_database_url)
        await asyncio.to_thread(upgrade_to_head, app.state.store.engine)
        app.state.journal = EventJournal(
            app.state.store, poll_interval=0.02, projections=JOURNAL_PROJECTIONS
        )
        connector = TemporalConnector(
            settings.effective_temporal_address, settings.temporal_namespace, temporal_client
        )
        app.state.temporal = connector
        # Connect in the background: the API answers /health while Temporal starts.
        warmup = asyncio.create_task(_warm_up(connector))
        await asyncio.to_thread(seed_modes, app.state.store)
        # Repairs a wake-up lost between a store write and its signal
        # (api/standing_agents/temporal_calls.py).
        app.state.agent_sweeper = Sweeper(settings, app.state.store)
        sweeper = asyncio.create_task(app.state.agent_sweeper.run(connector.get))
        # Outbound webhooks this process's routes owe wake their endpoints' workflows.
        replaced_waker = outbox.install_waker(
            Waker(
                connector.get,
                settings.task_queue,
                settings.approval_clock_idle_ms,
                clock=approval_clock.enabled(settings),
            )
        )
        try:
            yield
        finally:
            outbox.install_waker(replaced_waker)
            await mcp_endpoint.stop()
            for task in (warmup, sweeper):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if owned_store:
                app.state.store.dispose()

    app = FastAPI(
        title="agentrt",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,  # served by api/service/docs.py, without a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.daemon_id = f"agentrt-{uuid.uuid4().hex[:12]}"
    app.state.started_at = datetime.now(UTC)
    app.state.started_monotonic = time.monotonic()
    app.state.temporal_embedded = temporal_embedded
    app.state.rate_limiter = RateLimiter() if settings.rate_limit else None
    app.state.agent_tools_limiter = RateLimiter({"mutation": MUTATIONS_PER_MINUTE})
    app.state.auth_failure_limiter = auth_failure_limiter(settings.auth_failures_per_minute)

    install_error_handlers(app)
    install_openapi(app)
    for feature in FEATURES:
        for router in feature.routers():
            app.include_router(router)
    app.state.approval_answerers = approval_answerers(FEATURES)
    # agentrt's own MCP server (api/mcp/server.py): the SDK's transport, on our chain.
    mcp_endpoint = McpEndpoint(settings)
    app.router.routes.append(
        Route(
            MCP_PATH,
            endpoint=mcp_endpoint,
            # Stateless JSON answers: no stream to GET, no session to DELETE (a GET that
            # held an SSE stream open would hold a connection for nothing).
            methods=["POST"],
            include_in_schema=False,
        )
    )

    # add_middleware wraps what is already there: add the innermost first.
    app.add_middleware(LastResort)
    app.add_middleware(BodyLimit, limit=BODY_LIMIT_BYTES)
    app.add_middleware(RateLimit, limiter=app.state.rate_limiter, loopback=settings.loopback_bind)
    app.add_middleware(
        BearerAuth,
        token=settings.token,
        health_exempt=settings.loopback_bind and not settings.require_auth,
        failures=app.state.auth_failure_limiter,
    )
    allowed_hosts = (
        loopback_hosts(settings.port) | set(settings.allowed_hosts)
        if settings.loopback_bind
        else (set(settings.allowed_hosts) or None)
    )
    app.add_middleware(HostAllowlist, allowed=allowed_hosts)
    app.add_middleware(CorsPolicy, allow_origin=settings.allow_origin)
    app.add_middleware(SameOriginStrip, port=settings.port)
    app.add_middleware(RequestSpans)
    # Outermost: requests the security chain refuses are logged too.
    app.add_middleware(AccessLog)
    return app


def approval_answerers(features: Iterable[ModuleType]) -> dict[ApprovalKind, Answerer]:
    """Each approval kind's answerer, as the features list them (api/approvals/contracts.py).

    Raises:
        RuntimeError: a kind that two features answer, or that none does (the inbox would
            list requests it cannot answer).
    """
    answerers: dict[ApprovalKind, Answerer] = {}
    answered_by: dict[ApprovalKind, str] = {}
    for feature in features:
        listed = getattr(feature, "approval_answerers", None)
        if listed is None:
            continue
        for kind, answerer in listed().items():
            if kind in answerers:
                raise RuntimeError(
                    f"approval kind {kind.value!r} is answered by both "
                    f"{answered_by[kind]} and {feature.__name__}"
                )
            answerers[kind] = answerer
            answered_by[kind] = feature.__name__
    unanswered = sorted(kind.value for kind in ApprovalKind if kind not in answerers)
    if unanswered:
        raise RuntimeError(f"no feature answers the approval kinds {unanswered}")
    return answerers


async def _warm_up(connector: TemporalConnector) -> None:
    for _ in range(300):
        try:
            await connector.get()
            return
        except Exception:
            await asyncio.sleep(1)
