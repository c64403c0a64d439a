"""A tenant's MCP servers for its standing agents, and the operator's grants of their tools.

A tenant's servers live in the store under the tenant's MCP scope, `tenant:{tenant}`
(the key a workspace's settings use is its absolute path, so the two never meet): the
operator adds them through `PUT /api/v1/tenants/{tenant}/mcp/servers/{name}`; no file is
read for a tenant. The worker's pool keys its connections by the same scope, so a
tenant's agents share one connection per server, apart from the daemon's workspace.

An MCP tool enters an agent type's superset only by an operator's explicit grant
(`PUT /api/v1/tenants/{tenant}/mcp/grants/{agentType}`), fail-closed: a tool no grant of
the agent's type names is never offered to it and a call to it is blocked. A mode's
toolset names MCP tools exactly (`mcp__tickets__create_ticket`) or by server
(`mcp__tickets__*`); a tick offers the tenant's tools that its mode names AND a grant of
its type names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

from runtime.failures import WireError
from runtime.mcp.contracts import is_mcp_tool, server_prefix
from runtime.store import Store
from runtime.workspace.settings import get_setting, update_setting

TENANT_SCOPE_PREFIX: Final = "tenant:"
GRANTS_SETTING: Final = "mcp.grants"
MAX_PATTERNS: Final = 200
# `mcp__<server>__<tool>` or `mcp__<server>__*`, in the model-facing alphabet.
_PATTERN: Final = re.compile(r"^mcp__[A-Za-z0-9_-]+?__(?:\*|[A-Za-z0-9_-]+)$")


class InvalidMcpGrant(WireError):
    """A grant's tools that are not MCP tool names: 400."""

    kind: Literal["invalid_mcp_grant"] = "invalid_mcp_grant"
    agent_type: str
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind, "agentType": self.agent_type}


def tenant_scope(tenant: str) -> str:
    """The MCP scope of a tenant's standing agents (store key and pool key)."""
    return f"{TENANT_SCOPE_PREFIX}{tenant}"


def is_tenant_scope(scope: str) -> bool:
    return scope.startswith(TENANT_SCOPE_PREFIX)


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot name MCP tools, or None."""
    if len(pattern) > 64 or not _PATTERN.fullmatch(pattern):
        return (
            f"{pattern[:80]!r} is not an MCP tool name: write mcp__<server>__<tool> "
            "or mcp__<server>__* (letters, digits, _ and -, at most 64 characters)"
        )
    return None


def matches(pattern: str, name: str, server: str | None) -> bool:
    """`mcp__s__*` names every tool of the server whose names start `mcp__s__` (its real
    name, not a prefix of the tool's: server `s_` or `s__x` is not `s`); any other
    pattern names one tool, by its model-facing name. `server`: the tool's server (None
    when it is not known: then only an exact name matches)."""
    if pattern.endswith("__*"):
        return server is not None and server_prefix(server) == pattern[:-1]
    return pattern == name


def named(patterns: Iterable[str], name: str, server: str | None) -> bool:
    return any(matches(p, name, server) for p in patterns if is_mcp_tool(p))


def mcp_patterns(tools: Iterable[str]) -> list[str]:
    """The MCP entries of a mode's toolset."""
    return [t for t in tools if is_mcp_tool(t)]


def offered(mode_tools: Sequence[str], granted: Sequence[str], name: str, server: str) -> bool:
    """Whether a tick in a mode of `mode_tools` offers the MCP tool `name` of `server`."""
    return is_mcp_tool(name) and named(mode_tools, name, server) and named(granted, name, server)


def validate_patterns(value: Any) -> list[str]:
    """A grant's list, normalised (sorted, unique).

    Raises:
        ValueError: not a list of MCP tool patterns (the message names the rule).
    """
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValueError("tools must be a list of MCP tool names")
    if len(value) > MAX_PATTERNS:
        raise ValueError(f"a grant names at most {MAX_PATTERNS} tools")
    for pattern in value:
        problem = pattern_problem(pattern)
        if problem is not None:
            raise ValueError(problem)
    return sorted(set(value))


def grants(store: Store, tenant: str) -> dict[str, list[str]]:
    """Every grant of the tenant, by agent type."""
    raw = get_setting(store, tenant_scope(tenant), GRANTS_SETTING)
    if not isinstance(raw, dict):
        return {}
    out: dict[str, list[str]] = {}
    for agent_type, patterns in raw.items():
        if isinstance(patterns, list):
            # Fail closed on a hand-edited row: only well-formed patterns grant anything.
            out[str(agent_type)] = [
                p for p in patterns if isinstance(p, str) and pattern_problem(p) is None
            ]
    return out


def granted(store: Store, tenant: str, agent_type: str) -> list[str]:
    return grants(store, tenant).get(agent_type, [])


def put_grant(store: Store, tenant: str, agent_type: str, patterns: list[str]) -> list[str]:
    """Replace the grant of `agent_type` (an empty list revokes it)."""
    clean = validate_patterns(patterns)

    def change(current: Any) -> dict[str, Any]:
        entries = dict(current) if isinstance(current, dict) else {}
        if clean:
            entries[agent_type] = clean
        else:
            entries.pop(agent_type, None)
        return entries

    update_setting(store, tenant_scope(tenant), GRANTS_SETTING, change)
    return clean
