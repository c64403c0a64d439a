"""Pure helpers of the workspace status routes: which environment variables are reported,
and how a proxy URL is reduced to host:port (spec: never a credential on the wire)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
SANDBOX_VARS = ("SANDBOX",)
# Presence only, never a value (the spec's allowlist, plus agentrt's own secrets).
SECRET_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DASHSCOPE_API_KEY",
    "OPENROUTER_API_KEY",
    "QWEN_SERVER_TOKEN",
    "AGENTRT_TOKEN",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "DATABASE_URL",
)


def proxy_host(value: str) -> str | None:
    """`host:port` of a proxy URL, credentials and path dropped; None when unparsable."""
    text = value.strip()
    if not text:
        return None
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}" if port is not None else host


def no_proxy_hosts(value: str) -> str:
    """NO_PROXY is a host list: each entry stripped of anything credential-like."""
    hosts = []
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            continue
        hosts.append(entry.rsplit("@", 1)[-1])
    return ",".join(hosts)


def _lookup(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    if value is None:
        value = environ.get(name.lower())
    return value


def env_cells(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """The sandbox, proxy and env_var cells of GET /workspace/env, from `environ`."""
    cells: list[dict[str, Any]] = []
    for name in SANDBOX_VARS:
        value = environ.get(name)
        cell: dict[str, Any] = {
            "kind": "sandbox",
            "name": name,
            "status": "ok" if value else "disabled",
            "present": bool(value),
        }
        cells.append(cell)
    for name in PROXY_VARS:
        value = _lookup(environ, name)
        cell = {"kind": "proxy", "name": name, "present": bool(value)}
        if not value:
            cell["status"] = "disabled"
        else:
            shown = no_proxy_hosts(value) if name == "NO_PROXY" else proxy_host(value)
            if shown is None:
                cell.update(
                    status="warning",
                    errorKind="parse_error",
                    error=f"{name} is not a URL",
                    hint=f"Set {name} to <scheme>://<host>:<port>.",
                )
            else:
                cell.update(status="ok", value=shown)
        cells.append(cell)
    for name in SECRET_VARS:
        present = bool(environ.get(name))
        cells.append(
            {
                "kind": "env_var",
                "name": name,
                "status": "ok" if present else "disabled",
                "present": present,
            }
        )
    return cells
