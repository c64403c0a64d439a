"""Workspace status routes of the daemon (spec session-daemon-http-protocol): the read-only
snapshots (`/workspace/env`, `/preflight`, `/providers`, `/skills`; `/workspace/mcp` is
api/mcp/workspace_servers.py's, a session's own snapshots api/sessions/status.py's) and
the workspace mutations (`/workspace/tools/:name/enable`, `/workspace/init`).

router → the process and the store (settings, the session registry), and the journal
for the workspace-scoped events (every live session of the workspace gets them).
Secrets never leave: environment variables are reported by presence only.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import stat
import subprocess
import sys
from typing import Any

from fastapi import APIRouter, Depends, Request

from api.deps import ConnectorDep, JournalDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import MAX_ID_CHARS
from api.openapi import errors, json_body
from api.requests import client_id_of, read_body
from api.security import require_configured_token
from api.workspace.models import InitBody, ToolEnableBody
from api.workspace.preflight_cells import (
    mcp_view,
    model_cell,
    store_cell,
    temporal_cells,
    workspace_cell,
)
from api.workspace.routes import workspace_fence
from api.workspace.status_models import (
    CurrentModel,
    ModelProvider,
    ProviderModel,
    ToolToggled,
    WorkspaceEnv,
    WorkspaceInitialized,
    WorkspacePreflight,
    WorkspaceProviders,
    WorkspaceSkills,
)
from runtime.device_flow.providers import all_providers, credentials_path
from runtime.failures import InvalidRequest, RelayedRefusal
from runtime.llm.active import active_model
from runtime.mcp.views import discovery_cell
from runtime.sessions import registry
from runtime.sessions.approval_modes import DEFAULT_APPROVAL_MODE, TOOL_KINDS, is_approval_mode
from runtime.workspace.errors import WorkspaceInitConflict
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError
from runtime.workspace.files import WORKSPACE_FILE_MODE, HashMismatch, content_hash
from runtime.workspace.settings import (
    APPROVAL_MODE,
    disabled_tools,
    get_setting,
    set_tool_enabled,
)
from runtime.workspace.status import env_cells
from runtime.workspace.views import EnvCell, PreflightCell

router = APIRouter()

MIN_PYTHON = (3, 11)


# -- read-only snapshots -------------------------------------------------------------------


@router.get("/workspace/env", response_model_exclude_none=True)
async def workspace_env(settings: SettingsDep) -> WorkspaceEnv:
    """The runtime, the platform, sandbox and proxy settings (proxies as host:port) and the
    presence, never the value, of the allowlisted secret variables."""
    cells = [
        EnvCell(kind="runtime", name="python", status="ok", value=platform.python_version()),
        EnvCell(kind="platform", name=sys.platform, status="ok", value=platform.machine()),
        *env_cells(os.environ),
    ]
    return WorkspaceEnv(
        v=1,
        workspace_cwd=settings.workspace_cwd,
        initialized=True,
        acp_channel_live=False,
        cells=cells,
    )


def _git_version() -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run([git, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


@router.get("/workspace/preflight", response_model_exclude_none=True)
async def workspace_preflight(
    settings: SettingsDep, store: StoreDep, connector: ConnectorDep
) -> WorkspacePreflight:
    """Readiness of what agentrt needs: Python, the workspace directory, git, the store and
    its migrations, Temporal and a polling worker, the model provider's reachability."""
    version = platform.python_version()
    required = ">=" + ".".join(map(str, MIN_PYTHON))
    python = PreflightCell(
        kind="python_version",
        status="ok" if sys.version_info[:2] >= MIN_PYTHON else "error",
        locality="daemon",
        detail={"version": version, "required": required},
    )
    if python.status == "error":
        python.error_kind = "missing_binary"
        python.error = f"Python {version} is below the required {required}."
    git_version = await asyncio.to_thread(_git_version)
    git = (
        PreflightCell(kind="git", status="ok", locality="daemon", detail={"version": git_version})
        if git_version
        else PreflightCell(
            kind="git",
            status="warning",
            error_kind="missing_binary",
            error="git is not on PATH",
            hint="Install git (optional: the session tools do not need it).",
            locality="daemon",
        )
    )
    store_status = await asyncio.to_thread(store_cell, store)
    disabled = await asyncio.to_thread(disabled_tools, store, settings.workspace_cwd)
    tools = [name for name in TOOL_KINDS if settings.session_shell or name != "run_shell_command"]
    cells = [
        python,
        workspace_cell(settings),
        git,
        store_status,
        *await temporal_cells(settings, connector),
        await model_cell(settings),
        PreflightCell(
            kind="tool_registry",
            status="ok",
            locality="daemon",
            detail={"tools": [t for t in tools if t not in disabled], "disabled": disabled},
        ),
        discovery_cell(*await mcp_view(store, settings)),
    ]
    return WorkspacePreflight(
        v=1,
        workspace_cwd=settings.workspace_cwd,
        initialized=True,
        acp_channel_live=False,
        cells=cells,
    )


@router.get("/workspace/providers")
async def workspace_providers(settings: SettingsDep, store: StoreDep) -> WorkspaceProviders:
    """The model provider in use and its model (never its URL or key), and the approval
    mode new sessions start in."""
    active = active_model(settings)
    persisted = await asyncio.to_thread(get_setting, store, settings.workspace_cwd, APPROVAL_MODE)
    approval_mode = persisted if is_approval_mode(persisted) else DEFAULT_APPROVAL_MODE
    model = ProviderModel(
        model_id=active.model_id,
        base_model_id=active.model_id,
        name=active.model_id,
        description="agentrt's built-in deterministic model"
        if active.provider == "scripted"
        else None,
        context_limit=None,
        is_current=True,
        is_runtime=False,
    )
    return WorkspaceProviders(
        v=1,
        workspace_cwd=settings.workspace_cwd,
        initialized=True,
        acp_channel_live=False,
        current=CurrentModel(auth_type=active.provider, model_id=active.model_id),
        approval_mode=approval_mode,
        providers=[
            ModelProvider(
                kind="model_provider",
                status="ok",
                auth_type=active.provider,
                current=True,
                models=[model],
            )
        ],
        # The OAuth device-flow providers (qwen-oauth, AGENTRT_DEVICE_FLOW_PROVIDERS) and
        # whether credentials are on disk (never what they are).
        device_flow_providers=[
            {
                "providerId": provider_id,
                "credentialsPresent": credentials_path(
                    settings.resolved_data_dir, provider_id
                ).exists(),
            }
            for provider_id in all_providers(
                settings.qwen_oauth_base_url, settings.device_flow_providers
            )
        ],
    )


@router.get("/workspace/skills")
async def workspace_skills(settings: SettingsDep) -> WorkspaceSkills:
    """agentrt's agents have no skills: an honest empty list."""
    return WorkspaceSkills(v=1, workspace_cwd=settings.workspace_cwd, initialized=True, skills=[])


# -- workspace mutations -------------------------------------------------------------------


def _with_originator(data: dict[str, Any], originator: str | None) -> dict[str, Any]:
    return {**data, "originatorClientId": originator} if originator else data


@router.post(
    "/workspace/tools/{tool_name}/enable",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401),
    openapi_extra=json_body(ToolEnableBody),
)
async def enable_tool(
    tool_name: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    journal: JournalDep,
) -> ToolToggled:
    """Enable or disable a tool by its exact registry name (`tools.disabled`, in the
    store); sessions apply it from their next prompt. Unknown names are accepted."""
    originator = client_id_of(request)
    if not tool_name or len(tool_name) > MAX_ID_CHARS:
        raise ApiError.of(
            InvalidRequest(
                message=f"tool name must be 1 to {MAX_ID_CHARS} characters",
                code="invalid_tool_name",
            )
        )
    enabled = ToolEnableBody.parse(await read_body(request)).enabled
    await asyncio.to_thread(set_tool_enabled, store, settings.workspace_cwd, tool_name, enabled)
    await asyncio.to_thread(
        registry.journal_to_live_sessions,
        store,
        journal,
        settings.workspace_cwd,
        "tool_toggled",
        _with_originator({"toolName": tool_name, "enabled": enabled}, originator),
        retention=settings.event_ring_size,
        originator=originator,
    )
    return ToolToggled(tool_name=tool_name, enabled=enabled)


MAX_MEMORY_FILE_BYTES = 8 * 1024 * 1024  # read to judge it; a larger one has content
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _init_memory_file(fence: Fence, name: str, force: bool) -> tuple[str, int | None]:
    """Write the empty memory file `name` at the workspace root; (action, existing size
    when refused).

    Through the workspace fence, and atomic (`Fence.write`): a replace only lands on the
    content that was judged (compare-and-swap on its hash), a create never overwrites a
    file made meanwhile, and a symlink is replaced itself, never written through (it could
    point outside the workspace). A directory, FIFO, socket or device by that name is
    never opened: it is not a memory file."""
    path = fence.root / name
    if not fence.contains(path):
        return "not_a_file", None  # the data dir itself by that name
    try:
        info: os.stat_result | None = fence.lstat(path)
    except FileError as err:
        if err.kind != "path_not_found":
            raise
        info = None
    if info is None:
        with fence.parent(path) as (dir_fd, entry):
            try:
                fd = os.open(entry, _CREATE_FLAGS, 0o600, dir_fd=dir_fd)
            except FileExistsError:
                return _init_memory_file(fence, name, force)  # created meanwhile: judge it
            try:
                os.fchmod(fd, WORKSPACE_FILE_MODE)  # the user's file, whatever our umask
            finally:
                os.close(fd)
        return "created", None
    if stat.S_ISLNK(info.st_mode):
        if not force:
            return "conflict", info.st_size
        fence.write(path, b"")
        return "overwrote", None
    if not stat.S_ISREG(info.st_mode):
        return "not_a_file", None
    try:
        content = fence.read(path, limit=MAX_MEMORY_FILE_BYTES)
    except FileError as err:
        if err.kind != "file_too_large":
            raise
        if not force:
            return "conflict", info.st_size
        content = None
    if content is not None and not content.strip():
        return "noop", None
    if not force:
        return "conflict", len(content or b"")
    try:
        fence.write(
            path, b"", expected=fence.file_hash(path) if content is None else content_hash(content)
        )
    except HashMismatch:
        return _init_memory_file(fence, name, force)
    return "overwrote", None


@router.post(
    "/workspace/init",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 409),
    openapi_extra=json_body(InitBody, required=False),
)
async def init_workspace(
    request: Request, settings: SettingsDep, store: StoreDep, journal: JournalDep
) -> WorkspaceInitialized:
    """Create the workspace's memory file (`--memory-file-name`, AGENTS.md by default),
    empty; a file with content is kept unless `force`."""
    originator = client_id_of(request)
    force = InitBody.parse(await read_body(request)).force
    path = settings.resolved_workspace / settings.memory_file_name

    def init() -> tuple[str, int | None]:
        return _init_memory_file(workspace_fence(settings), settings.memory_file_name, force)

    try:
        action, existing = await asyncio.to_thread(init)
    except FileError as err:
        raise ApiError.of(
            RelayedRefusal(status=err.status, code=err.kind, message=err.message)
        ) from err
    if action == "not_a_file":
        raise ApiError.of(WorkspaceInitConflict(path=str(path)))
    if action == "conflict":
        raise ApiError.of(WorkspaceInitConflict(path=str(path), existing_size=existing))
    await asyncio.to_thread(
        registry.journal_to_live_sessions,
        store,
        journal,
        settings.workspace_cwd,
        "workspace_initialized",
        _with_originator({"path": str(path), "action": action}, originator),
        retention=settings.event_ring_size,
        originator=originator,
    )
    return WorkspaceInitialized(path=str(path), action=action)
