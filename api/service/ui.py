"""GET /ui/agent-tools and /ui/agents: the agent-tools and standing-agents pages (one HTML
file and one plain script each, no build). The helpers both scripts share are written once,
in static/common.js, and served in front of each page's script (see `_page_script`).

The page only talks to this server (`connect-src 'self'`), loads nothing from
elsewhere, and renders every string from the API as text; the Content-Security-Policy
below forbids inline scripts, so an injected tag could not run even if it were parsed.
"""

from __future__ import annotations

from functools import cache
from html import escape
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

from runtime.standing_agents.catalog import MODES
from runtime.standing_agents.contracts import AgentType

router = APIRouter(prefix="/ui", include_in_schema=False)

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

# On the page, its script and its icon alike.
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    # Small and versioned with the package: always revalidate, never serve a stale page.
    "Cache-Control": "no-cache",
}


# The tab icon, so the browser does not ask for /favicon.ico (which nobody serves).
ICON_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    b'<rect width="16" height="16" rx="3" fill="#2457c5"/>'
    b'<path d="M4 11.5 8 4l4 7.5" fill="none" stroke="#fff" stroke-width="1.8"/></svg>'
)


@cache
def _asset(name: str) -> bytes:
    return (STATIC_DIR / name).read_bytes()


@cache
def _page_script(name: str) -> bytes:
    """common.js (the `agentrtUi` helpers) then the page's own script, as one script: each
    page still loads a single script from its own path, which the bearer middleware exempts
    on loopback binds like the page itself (api/security/bearer.py STATIC_PAGE_PATHS)."""
    return _asset("common.js") + b"\n" + _asset(name)


@router.api_route("/agent-tools", methods=["GET", "HEAD"])
async def agent_tools_page() -> Response:
    return Response(
        _asset("agent_tools.html"),
        media_type="text/html; charset=utf-8",
        headers=SECURITY_HEADERS,
    )


@router.api_route("/agent-tools.js", methods=["GET", "HEAD"])
async def agent_tools_script() -> Response:
    return Response(
        _page_script("agent_tools.js"),
        media_type="text/javascript; charset=utf-8",
        headers=SECURITY_HEADERS,
    )


@router.api_route("/agent-tools.svg", methods=["GET", "HEAD"])
async def agent_tools_icon() -> Response:
    return Response(ICON_SVG, media_type="image/svg+xml", headers=SECURITY_HEADERS)


# Where the server puts the mode catalogue in agents.html (the page has no route to read it).
MODE_CATALOGUE_MARK = b"<!-- mode catalogue -->"


def _mode_options() -> bytes:
    """The code seed of agent_modes as <optgroup>s, one per agent type: escaped data only."""
    groups = []
    for agent_type in AgentType:
        options = "".join(
            f'<option value="{escape(mode.name)}" title="{escape(mode.description)}">'
            f"{escape(mode.name)}</option>"
            for mode in MODES
            if mode.agent_type == agent_type
        )
        groups.append(f'<optgroup label="{escape(agent_type.value)}">{options}</optgroup>')
    return "".join(groups).encode()


@cache
def _agents_page() -> bytes:
    return _asset("agents.html").replace(MODE_CATALOGUE_MARK, _mode_options(), 1)


@router.api_route("/agents", methods=["GET", "HEAD"])
async def agents_page() -> Response:
    return Response(_agents_page(), media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)


@router.api_route("/agents.js", methods=["GET", "HEAD"])
async def agents_script() -> Response:
    return Response(
        _page_script("agents.js"),
        media_type="text/javascript; charset=utf-8",
        headers=SECURITY_HEADERS,
    )
