"""Pure helpers of the workspace status routes: which environment variables are reported
(the cells of GET /workspace/env, runtime/workspace/views.py), and how a proxy URL is
reduced to host:port (spec: never a credential on the wire)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from runtime.workspace.views import EnvCell

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


def env_cells(environ: Mapping[str, str]) -> list[EnvCell]:
    """The sandbox, proxy and env_var cells of GET /workspace/env, from `environ`."""
    cells: list[EnvCell] = []
    for name in SANDBOX_VARS:
        value = environ.get(name)
        cells.append(
            EnvCell(
                kind="sandbox",
                name=name,
                status="ok" if value else "disabled",
                present=bool(value),
            )
        )
    for name in PROXY_VARS:
        value = _lookup(environ, name)
        if not value:
            cells.append(EnvCell(kind="proxy", name=name, present=False, status="disabled"))
            continue
        shown = no_proxy_hosts(value) if name == "NO_PROXY" else proxy_host(value)
        if shown is None:
            cells.append(
                EnvCell(
                    kind="proxy",
                    name=name,
                    present=True,
                    status="warning",
                    error_kind="parse_error",
                    error=f"{name} is not a URL",
                    hint=f"Set {name} to <scheme>://<host>:<port>.",
                )
            )
        else:
            cells.append(EnvCell(kind="proxy", name=name, present=True, status="ok", value=shown))
    for name in SECRET_VARS:
        present = bool(environ.get(name))
        cells.append(
            EnvCell(
                kind="env_var",
                name=name,
                status="ok" if present else "disabled",
                present=present,
            )
        )
    return cells
