"""GET /: a small index of what this server offers, for a person opening it in a browser.

Static text and links only (no script, no data from clients); the same headers as
the agent-tools page forbid anything else from running.
"""

from __future__ import annotations

from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import Response

from api.deps import SettingsDep
from api.service.ui import SECURITY_HEADERS
from runtime import __version__

router = APIRouter(include_in_schema=False)

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>agentrt</title>
<link rel="icon" href="/ui/agent-tools.svg" type="image/svg+xml">
<style>
body {{ font: 15px/1.5 system-ui, sans-serif; max-width: 44rem; margin: 2rem auto; }}
code {{ background: #f3f3f3; padding: 0 .2em; }}
</style>
</head>
<body>
<h1>agentrt {version}</h1>
<p>A durable agent runtime: Temporal workflows behind an HTTP API.</p>
<ul>
<li><a href="/ui/agent-tools">Agent tools</a>: ask about the demo investigation, watch the
tool calls, approve or deny the proposed research.</li>
<li><a href="/ui/agents">Standing agents</a>: a tenant's agents, their ledger and transcript,
chat with them, answer their decisions, change their mode.</li>
<li><a href="/docs">API documentation</a> (every route, its body and its errors;
<a href="/openapi.json">/openapi.json</a>).</li>
<li>{temporal}</li>
<li><a href="/capabilities">/capabilities</a> and <a href="/health">/health</a>.</li>
</ul>
<p>Session daemon (spec 002): <code>POST /session</code>, then
<code>POST /session/:id/prompt</code> and <code>GET /session/:id/events</code>;
the README has curl recipes.</p>
</body>
</html>
"""


@router.api_route("/", methods=["GET", "HEAD"])
async def index(request: Request, settings: SettingsDep) -> Response:
    embedded = getattr(request.app.state, "temporal_embedded", False)
    if embedded and not settings.temporal_ui:
        temporal = "Temporal Web UI: off (<code>--no-temporal-ui</code>)."
    elif embedded:
        ui = escape(f"http://127.0.0.1:{settings.temporal_ui_port}", quote=True)
        temporal = f'<a href="{ui}">Temporal Web UI</a>: every workflow, its history and state.'
    else:
        temporal = "Temporal Web UI: the one of your Temporal deployment."
    return Response(
        PAGE.format(version=escape(__version__), temporal=temporal),
        media_type="text/html; charset=utf-8",
        headers=SECURITY_HEADERS,
    )
