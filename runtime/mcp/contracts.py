"""What other features use of MCP: the names the model calls MCP tools by, and what an
MCP call was resolved to when a human was asked about it (`McpBinding`).

What the model calls an MCP tool: `mcp__<server>__<tool>`.

Model APIs take function names of `[A-Za-z0-9_-]{1,64}`. A server's or tool's name with
other characters has each of them replaced by `_`; a name longer than 64 keeps its first
55 characters and ends with `_` and 8 hex digits of the SHA-256 of the unsanitized name.
Two tools that end up with the same name (e.g. `a.b` and `a_b`) are told apart by
declaration order: servers in the order of `mcpServers`, tools in the order the server
lists them; the first keeps the name, the next get `_2`, `_3`, ... (cut to fit).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Final

from pydantic import BaseModel

PREFIX: Final = "mcp__"
MAX_NAME: Final = 64
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]")


def qualified(server: str, tool: str) -> str:
    """The name before collisions are resolved."""
    raw = f"{PREFIX}{server}__{tool}"
    name = _UNSAFE.sub("_", raw)
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def server_prefix(server: str) -> str:
    """What every model-facing name of `server`'s tools starts with (however cut)."""
    return _UNSAFE.sub("_", f"{PREFIX}{server}__")[: MAX_NAME - 9]


def assign(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The model-facing name of each (server, tool), collisions resolved in order."""
    taken: set[str] = set()
    names: dict[tuple[str, str], str] = {}
    for server, tool in pairs:
        base = qualified(server, tool)
        name, n = base, 1
        while name in taken:
            n += 1
            suffix = f"_{n}"
            name = base[: MAX_NAME - len(suffix)] + suffix
        taken.add(name)
        names[(server, tool)] = name
    return names


def is_mcp_tool(name: str) -> bool:
    return name.startswith(PREFIX)


class McpBinding(BaseModel):
    """What an MCP call's preview resolved its name to: the server, the server's own tool
    name and the fingerprint of the server's configuration. The call runs on exactly
    this, or not at all: a name never moves to another server between the vote and the
    call, and a server whose configuration changed meanwhile is not called."""

    server: str
    tool: str
    fingerprint: str
