"""`mcpServers`: the MCP servers of a workspace, in the shape qwen-code's settings use.

Two sources, merged by name (the operator's entry wins):
- the workspace's own `.qwen/settings.json` (`mcpServers`, `disabledMcpServers`), so a
  workspace set up for qwen-code works unchanged;
- the servers an operator adds through `PUT /workspace/mcp/servers/:name`, kept in the
  store (workspace setting `mcp.servers`, `mcp.disabled`).

A value of `env` or `headers` may be a reference to the worker's environment, `$NAME`
or `${NAME}` (qwen-code's expansion), resolved in the worker when it connects and only
for the names the provider-key rule allows (runtime/egress.key_env_refusal). Neither the
values nor the names of `env` and `headers` are ever shown back: `/workspace/mcp`, the
events, the logs and workflow history carry the server's name, transport and state only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runtime.egress import key_env_refusal, url_refusal
from runtime.mcp.grants import is_tenant_scope
from runtime.store import Store
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError
from runtime.workspace.settings import get_setting, update_setting

Transport = Literal["stdio", "http", "sse"]

# qwen-code's MCP_DEFAULT_TIMEOUT_MSEC: a call (and the connection) is bounded by it.
DEFAULT_TIMEOUT_MS: Final = 600_000
SERVER_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
_REFERENCE: Final = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")
# The workspace's agent configuration (qwen-code's): session tools never write it.
AGENT_CONFIG_DIR: Final = ".qwen"
SETTINGS_FILE: Final = Path(AGENT_CONFIG_DIR) / "settings.json"
APPROVED_SETTING: Final = "mcp.approved"
WorkspaceServers = Literal["approve", "trusted", "off"]
SERVERS_SETTING: Final = "mcp.servers"
DISABLED_SETTING: Final = "mcp.disabled"
MAX_SETTINGS_BYTES: Final = 1 << 20


class McpServerConfig(BaseModel):
    """One entry of `mcpServers`. Exactly one of `command` (stdio), `httpUrl` (Streamable
    HTTP) or `url` (legacy SSE)."""

    model_config = ConfigDict(extra="ignore")

    command: str | None = Field(None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    httpUrl: str | None = Field(None, min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    url: str | None = Field(None, min_length=1)
    timeout: int | None = Field(None, ge=1, le=3_600_000)
    trust: bool = False
    includeTools: list[str] | None = None
    excludeTools: list[str] | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        given = [k for k in ("command", "httpUrl", "url") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("exactly one of command (stdio), httpUrl or url (sse) is required")
        for where, values in (("headers", self.headers), ("env", self.env)):
            for key, value in values.items():
                if _CONTROL.search(key) or _CONTROL.search(value):
                    # A header with CR or LF would be refused by the HTTP client, whose
                    # message quotes the value: refused here, where nothing is shown.
                    raise ValueError(f"{where}.{key[:64]}: control characters are not allowed")
        return self

    def secret_values(self) -> list[str]:
        """The literal values of `env` and `headers` (what no message may quote)."""
        return [v for v in (*self.env.values(), *self.headers.values()) if len(v) >= 4]

    @property
    def transport(self) -> Transport:
        if self.command:
            return "stdio"
        return "http" if self.httpUrl else "sse"

    @property
    def timeout_seconds(self) -> float:
        return (self.timeout or DEFAULT_TIMEOUT_MS) / 1000

    def offers(self, tool: str) -> bool:
        """`includeTools` / `excludeTools` (exclude wins)."""
        if self.excludeTools and tool in self.excludeTools:
            return False
        return self.includeTools is None or tool in self.includeTools

    def fingerprint(self) -> str:
        """Changes whenever anything that shapes the connection changes."""
        raw = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


class StrictMcpServerConfig(McpServerConfig):
    """What an operator's `PUT` must be: no unknown field, no `"10"` for a number."""

    model_config = ConfigDict(extra="forbid", strict=True)


class McpServers(BaseModel):
    """The merged configuration of one workspace, in declaration order."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    disabled: list[str] = Field(default_factory=list)
    # Entries of the settings file that could not be read, by server name (or `*`).
    problems: dict[str, str] = Field(default_factory=dict)
    # Where each server comes from: the workspace's settings file, or an operator.
    sources: dict[str, Literal["settings", "operator"]] = Field(default_factory=dict)
    # Settings-file servers waiting for an operator's approval of exactly this entry.
    pending: list[str] = Field(default_factory=list)

    def enabled(self) -> dict[str, McpServerConfig]:
        return {
            n: c
            for n, c in self.servers.items()
            if n not in self.disabled and n not in self.pending
        }


def egress_refusal(config: McpServerConfig) -> str | None:
    """Why the worker may not connect to the server's URL (the egress rule of provider
    URLs: http/https, no user-info, never a link-local or cloud-metadata address); None
    for a stdio server or an allowed URL. The addresses a name resolves to are checked
    on each connection (activities/mcp/egress.py)."""
    for what, url in (("httpUrl", config.httpUrl), ("url", config.url)):  # one is set
        if url:
            refusal = url_refusal(url, what, base=False)
            return None if refusal is None else refusal.message
    return None


class ReferenceRefused(ValueError):
    """A `$NAME` reference names a variable the provider-key rule does not allow."""


def secret_reference(value: str) -> str | None:
    """The variable a `$NAME` / `${NAME}` value refers to, or None for a literal."""
    match = _REFERENCE.match(value)
    return None if match is None else (match.group(1) or match.group(2))


def reference_refusal(config: McpServerConfig, listed: Collection[str] = ()) -> str | None:
    """Why one of the config's references may not be read; None when all may."""
    for where, values in (("env", config.env), ("headers", config.headers)):
        for key, value in values.items():
            name = secret_reference(value)
            if name is None:
                continue
            refusal = key_env_refusal(name, listed)
            if refusal is not None:
                return f"{where}.{key}: {refusal.message.replace('apiKeyEnv', 'reference')}"
    return None


def resolve_references(
    values: Mapping[str, str], environ: Mapping[str, str], listed: Collection[str] = ()
) -> dict[str, str]:
    """The values with their references read from `environ` (the worker's).

    Raises:
        ReferenceRefused: a reference the rule refuses, or one that is not set.
    """
    out = {}
    for key, value in values.items():
        name = secret_reference(value)
        if name is None:
            out[key] = value
            continue
        refusal = key_env_refusal(name, listed)
        if refusal is not None:
            raise ReferenceRefused(f"{key}: {refusal.message.replace('apiKeyEnv', 'reference')}")
        if name not in environ:
            raise ReferenceRefused(f"{key}: the worker's environment has no {name}")
        if _CONTROL.search(environ[name]):
            raise ReferenceRefused(f"{key}: {name} holds control characters")
        out[key] = environ[name]
    return out


def read_settings_file(workspace: Path, data_dir: Path | None = None) -> McpServers:
    """`mcpServers` and `disabledMcpServers` of `<workspace>/.qwen/settings.json`, read
    through the workspace fence (a symlink out of the workspace is not followed)."""
    try:
        fence = Fence.of(workspace, data_dir)
        path = fence.resolve(str(SETTINGS_FILE))
        if not fence.exists(path):
            return McpServers()
        raw = json.loads(fence.read(path, limit=MAX_SETTINGS_BYTES).decode("utf-8"))
    except FileError as err:
        if err.kind == "path_not_found":
            return McpServers()
        return McpServers(problems={"*": f"{SETTINGS_FILE}: {err.message}"})
    except ValueError as err:
        return McpServers(problems={"*": f"{SETTINGS_FILE} is not readable JSON: {err}"})
    return servers_of(raw if isinstance(raw, dict) else {})


def put_operator_server(store: Store, workspace: str, name: str, entry: dict[str, Any]) -> None:
    """Add or replace an operator's server (read-modify-write of `mcp.servers`)."""
    update_setting(
        store, workspace, SERVERS_SETTING, lambda current: {**_dict(current), name: entry}
    )


def remove_operator_server(store: Store, workspace: str, name: str) -> bool:
    """Remove an operator's server; False when there was none of that name."""
    found = False

    def without(current: Any) -> dict[str, Any]:
        nonlocal found
        entries = _dict(current)
        found = name in entries
        return {k: v for k, v in entries.items() if k != name}

    update_setting(store, workspace, SERVERS_SETTING, without)
    return found


def load_servers(
    store: Store,
    workspace: str,
    data_dir: Path | None = None,
    mode: WorkspaceServers = "approve",
) -> McpServers:
    """The merged configuration of a workspace: its settings file, then the operator's.

    A tenant's scope (runtime/mcp/grants.tenant_scope) has the operator's servers only.
    """
    if is_tenant_scope(workspace):
        mode = "off"
    operator = get_setting(store, workspace, SERVERS_SETTING)
    disabled = get_setting(store, workspace, DISABLED_SETTING)
    approved = get_setting(store, workspace, APPROVED_SETTING)
    return merged(
        read_settings_file(Path(workspace), data_dir) if mode != "off" else McpServers(),
        operator if isinstance(operator, dict) else None,
        [n for n in disabled if isinstance(n, str)] if isinstance(disabled, list) else [],
        mode=mode,
        approved={k: v for k, v in approved.items() if isinstance(v, str)}
        if isinstance(approved, dict)
        else {},
    )


def approve_file_server(store: Store, workspace: str, name: str, fingerprint: str) -> None:
    """Pin an operator's approval of a settings-file entry to its fingerprint."""
    update_setting(
        store, workspace, APPROVED_SETTING, lambda current: {**_dict(current), name: fingerprint}
    )


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def servers_of(raw: Mapping[str, Any]) -> McpServers:
    servers: dict[str, McpServerConfig] = {}
    problems: dict[str, str] = {}
    entries = raw.get("mcpServers")
    for name, entry in (entries if isinstance(entries, dict) else {}).items():
        if not isinstance(name, str) or not SERVER_NAME.match(name):
            problems[str(name)[:64]] = "a server name is 1-64 of A-Z a-z 0-9 _ . -"
            continue
        try:
            servers[name] = McpServerConfig.model_validate(entry)
        except ValidationError as err:
            problems[name] = "; ".join(e["msg"].removeprefix("Value error, ") for e in err.errors())
    disabled = raw.get("disabledMcpServers")
    names = [n for n in disabled if isinstance(n, str)] if isinstance(disabled, list) else []
    return McpServers(servers=servers, disabled=names, problems=problems)


def merged(
    from_file: McpServers,
    operator: Mapping[str, Any] | None,
    operator_disabled: Collection[str] = (),
    *,
    mode: WorkspaceServers = "approve",
    approved: Mapping[str, str] | None = None,
) -> McpServers:
    """The file's servers, then the operator's (which replace a file entry of that name).

    A settings-file entry can make the worker run a command, send a referenced key to a
    host, or trust a server; whoever can write the workspace (a cloned repository, a
    collaborator) writes it. So `mode` (AGENTRT_MCP_WORKSPACE_SERVERS):
    - `approve` (the default): a file entry is used once an operator approved exactly it
      (`POST /workspace/mcp/:name/approve` pins its fingerprint; any change waits for a
      new approval);
    - `trusted`: file entries are used as they are (the operator owns the workspace, as a
      qwen-code trusted folder);
    - `off`: the file's `mcpServers` are ignored.
    """
    file_servers = {} if mode == "off" else dict(from_file.servers)
    servers: dict[str, McpServerConfig] = dict(file_servers)
    sources: dict[str, Literal["settings", "operator"]] = dict.fromkeys(file_servers, "settings")
    problems = {} if mode == "off" else dict(from_file.problems)
    for name, entry in (operator or {}).items():
        try:
            servers[name] = McpServerConfig.model_validate(entry)
            sources[name] = "operator"
        except ValidationError as err:
            problems[name] = "; ".join(e["msg"] for e in err.errors())
    pending = [
        name
        for name, source in sources.items()
        if source == "settings"
        and mode == "approve"
        and (approved or {}).get(name) != servers[name].fingerprint()
    ]
    file_disabled = [] if mode == "off" else from_file.disabled
    disabled = list(dict.fromkeys([*file_disabled, *operator_disabled]))
    return McpServers(
        servers=servers, disabled=disabled, problems=problems, sources=sources, pending=pending
    )
