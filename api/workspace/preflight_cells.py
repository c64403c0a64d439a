"""The cells of `GET /workspace/preflight` that probe what the daemon depends on: the
workspace directory, the store, Temporal and the worker, the model endpoint (through the
egress client the model calls use) and the MCP servers (read only: their cells are built
in runtime/mcp/views.py). The route, in `api/workspace/status.py`, puts them together.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
from temporalio.service import RPCError

from api.errors import ApiError
from api.temporal import describe_pollers, is_unavailable
from runtime.egress_client import EgressRefused, egress_client
from runtime.llm.active import active_model
from runtime.mcp.views import McpServer, server_cells
from runtime.settings import Settings
from runtime.store import Store
from runtime.store.migrate import current_revision, head_revision
from runtime.workspace.views import PreflightCell


def workspace_cell(settings: Settings) -> PreflightCell:
    path = settings.resolved_workspace
    detail = {"path": str(path)}
    if not path.is_dir():
        return PreflightCell(
            kind="workspace_dir",
            status="error",
            error_kind="missing_file",
            error=f"{path} does not exist or is not a directory",
            hint="Create it, or start agentrt with --workspace pointing at a directory.",
            locality="daemon",
            detail=detail,
        )
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        return PreflightCell(
            kind="workspace_dir",
            status="warning",
            error=f"{path} is not readable and writable by the daemon",
            locality="daemon",
            detail=detail,
        )
    return PreflightCell(kind="workspace_dir", status="ok", locality="daemon", detail=detail)


def store_cell(store: Store) -> PreflightCell:
    try:
        revision = current_revision(store.engine)
    except Exception as err:  # the store is down: that is what this cell reports
        return PreflightCell(
            kind="store",
            status="error",
            error=f"the store does not answer: {type(err).__name__}",
            hint="Check DATABASE_URL (or the data dir) and that the database is up.",
            locality="daemon",
            detail={"backend": store.backend},
        )
    head = head_revision()
    detail = {"backend": store.backend, "revision": revision, "headRevision": head}
    if revision != head:
        return PreflightCell(
            kind="store",
            status="warning",
            error=f"the store is at revision {revision}, the code expects {head}",
            hint="Run `agentrt migrate`.",
            locality="daemon",
            detail=detail,
        )
    return PreflightCell(kind="store", status="ok", locality="daemon", detail=detail)


async def temporal_cells(settings: Settings, connector: Any) -> list[PreflightCell]:
    detail = {"address": connector.address, "namespace": connector.namespace}
    try:
        client = await connector.get()
        pollers = await describe_pollers(client, settings.task_queue)
    except (ApiError, RPCError) as err:
        if is_unavailable(err):
            connector.mark_down()
        return [
            PreflightCell(
                kind="temporal",
                status="error",
                error_kind="init_timeout",
                error="the Temporal server does not answer",
                hint="Start it (`agentrt up` runs one) or check TEMPORAL_ADDRESS.",
                locality="daemon",
                detail=detail,
            ),
            PreflightCell(
                kind="worker",
                status="unknown",
                locality="daemon",
                detail={"taskQueue": settings.task_queue},
            ),
        ]
    temporal = PreflightCell(kind="temporal", status="ok", locality="daemon", detail=detail)
    worker_detail = {"taskQueue": settings.task_queue, "polling": pollers["workerPolling"]}
    if not pollers["workerPolling"]:
        worker = PreflightCell(
            kind="worker",
            status="error",
            error_kind="missing_binary",
            error=f"no live worker polls task queue {settings.task_queue!r}",
            hint="Start `agentrt worker` (`agentrt up` runs one).",
            locality="daemon",
            detail=worker_detail,
        )
    else:
        worker = PreflightCell(kind="worker", status="ok", locality="daemon", detail=worker_detail)
    return [temporal, worker]


async def model_cell(settings: Settings) -> PreflightCell:
    active = active_model(settings)
    detail: dict[str, Any] = {"provider": active.provider, "modelId": active.model_id}
    if active.provider == "scripted":
        detail["builtin"] = True
        return PreflightCell(kind="providers", status="ok", locality="daemon", detail=detail)
    # Reachability of the OpenAI-compatible endpoint (its URL and key never on the wire).
    headers = {}
    if settings.openai_api_key:
        headers["Authorization"] = f"Bearer {settings.openai_api_key}"
    url = settings.openai_base_url.rstrip("/") + "/models"
    try:
        # The egress rule the model calls connect under (runtime/egress_client.py): the
        # preflight reaches what they would reach, and nothing they may not.
        async with egress_client(timeout=3.0) as http:
            response = await http.get(url, headers=headers)
    except httpx.HTTPError as err:
        if isinstance(err, EgressRefused):
            error = "the egress rule refuses the model endpoint's address"
            hint = "Check OPENAI_BASE_URL: it resolves to a link-local or metadata address."
        else:
            error = f"the model endpoint does not answer ({type(err).__name__})"
            hint = "Check OPENAI_BASE_URL and the network."
        return PreflightCell(
            kind="providers",
            status="error",
            error_kind="blocked_egress",
            error=error,
            hint=hint,
            locality="daemon",
            detail=detail,
        )
    detail["httpStatus"] = response.status_code
    if response.status_code in (401, 403):
        return PreflightCell(
            kind="providers",
            status="error",
            error_kind="auth_env_error",
            error="the model endpoint refuses the credentials",
            hint="Check OPENAI_API_KEY.",
            locality="daemon",
            detail=detail,
        )
    return PreflightCell(kind="providers", status="ok", locality="daemon", detail=detail)


async def mcp_view(store: Store, settings: Settings) -> tuple[list[McpServer], str]:
    """The servers' cells and the discovery state, read only (the preflight starts no
    discovery: `GET /workspace/mcp` does)."""
    servers, states, cells = await server_cells(store, settings)
    opened = all(
        name in states and states[name].fingerprint == config.fingerprint()
        for name, config in servers.enabled().items()
    )
    return cells, "completed" if opened else "not_started"
