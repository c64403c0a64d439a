"""The strict mutation gate, checked over every route the app serves (issue 18, item 7).

On a tokenless loopback daemon the session spec (spec/session-daemon-http-protocol)
leaves some mutation routes open; every other mutation route, and every one agentrt adds
beyond the specs, is strict: 401 `{"code": "token_required"}` until a token is
configured. Walking the served routes instead of listing today's strict routes means a
new route is refused by default: it either joins a list below, citing the spec that leaves
it open, or the test fails. The walk is over `app.routes` (every route and each of its
methods, routers included with `include_in_schema=False` too), not only `/openapi.json`,
which leaves hidden routes out.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, FastAPI, Response
from fastapi.routing import iter_route_contexts

from tests.conftest import ApiFactory

# The session spec's mutation routes that carry no strict gate, read from the spec (the
# routes marked "strict" there — /file/write, /file/edit, approval-mode, tools enable,
# init, MCP restart, POST device-flow — are not here). Its `:id` is agentrt's `{...}`.
SESSION_SPEC_TOKENLESS: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", "/session"),  # POST /session
        ("POST", "/session/{session_id}/load"),  # POST /session/:id/load
        ("POST", "/session/{session_id}/resume"),  # POST /session/:id/resume
        ("POST", "/session/{session_id}/prompt"),  # POST /session/:id/prompt
        ("POST", "/session/{session_id}/cancel"),  # POST /session/:id/cancel
        ("DELETE", "/session/{session_id}"),  # DELETE /session/:id
        ("PATCH", "/session/{session_id}/metadata"),  # PATCH /session/:id/metadata
        ("POST", "/session/{session_id}/heartbeat"),  # POST /session/:id/heartbeat
        ("POST", "/session/{session_id}/model"),  # POST /session/:id/model
        # "Porte de mutation non stricte — la posture reflète /session/:id/prompt".
        ("POST", "/session/{session_id}/recap"),
        ("POST", "/permission/{request_id}"),  # POST /permission/:requestId
        # The session-scoped vote of the `session_permission_vote` capability.
        ("POST", "/session/{session_id}/permission/{request_id}"),
        # Only the POST of a device flow is strict in the spec; its cancel is not.
        ("DELETE", "/workspace/auth/device-flow/{device_flow_id}"),
    }
)

# The agent-tools spec (spec/agent-tools-protocol-v1) gives its mutations a gate of their
# own instead: the exact Host, the local browser session, Origin, CSRF and the rate guard.
# Tokenless and without the page's cookie they are refused too (403 session_required).
AGENT_TOOLS_SPEC_BROWSER_GATED: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", "/api/v1/agent-tools/turns"),
        ("POST", "/api/v1/agent-tools/turns/{turn_id}/resume"),
        ("POST", "/api/v1/agent-tools/calls"),
        # The human decision the agent-tools turn waits for (the page's Approve / Deny).
        ("POST", "/api/v1/research/{research_id}/decision"),
    }
)

# A plausible value per path parameter name (a new name must get one here).
PATH_VALUES: dict[str, str] = {
    "session_id": "00000000-0000-4000-8000-000000000001",
    "request_id": "00000000-0000-4000-8000-000000000002",
    "device_flow_id": "00000000-0000-4000-8000-000000000003",
    "turn_id": "turn-1",
    "research_id": "research-1",
    "tool_name": "read_file",
    "tenant": "acme",
    "instance_id": "soa",
    "decision_id": "00000000-0000-4000-8000-000000000004",
    "agent_id": "agent-1",
    "key": "modes",
    "providerId": "openai",
    "presetId": "default",
    "siteId": "session",
    "model": "gpt-4o-mini",
    "holder": "coder-1",
    "verb": "windows_windows",
    "server": "docs",
    "agent_type": "Soa",
    "mode": "Strategic",
    "task_id": "00000000-0000-4000-8000-000000000005",
    "token_id": "0123456789abcdef0123456789abcdef",
    "webhook_id": "wh_" + "0" * 24,
    "schedule_id": "sch_" + "0" * 24,
    "endpoint_id": "ep_" + "0" * 16,
    "delivery_id": "msg_" + "0" * 40,
    "approval_id": "decision:00000000-0000-4000-8000-000000000006",
}


READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _template(path: str) -> str:
    """A route path as the lists spell it: `{model:path}` is `{model}`."""
    return re.sub(r"\{([^}:]+):[^}]*\}", r"{\1}", path)


def _mutations(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every non-read method of every route the app serves, hidden ones
    (`include_in_schema=False`, a plain Starlette route) included."""
    found: set[tuple[str, str]] = set()
    for route in iter_route_contexts(app.routes):
        path, methods = route.path, route.methods
        if path is None or not methods:
            continue  # a mount or a websocket: none is served here
        found.update((method, _template(path)) for method in methods - READ_METHODS)
    return sorted(found)


def _concrete(path: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in PATH_VALUES, f"give the path parameter {name!r} a value in PATH_VALUES"
        return PATH_VALUES[name]

    return re.sub(r"\{([^}]+)\}", value, path)


def test_the_walk_finds_routes_the_document_hides() -> None:
    hidden = APIRouter(prefix="/hidden", include_in_schema=False)
    hidden.add_api_route("/{item}", lambda item: None, methods=["POST", "DELETE"])
    hidden.add_api_route("/{rest:path}", lambda rest: None, methods=["PUT"])
    app = FastAPI()
    app.include_router(hidden)
    app.add_route("/plain", lambda request: Response(), methods=["PATCH"])
    assert app.openapi()["paths"] == {}
    assert _mutations(app) == [
        ("DELETE", "/hidden/{item}"),
        ("PATCH", "/plain"),
        ("POST", "/hidden/{item}"),
        ("PUT", "/hidden/{rest}"),
    ]


async def test_every_mutation_route_is_strict_unless_a_spec_leaves_it_open(
    api: ApiFactory,
) -> None:
    client = await api()  # loopback, no token configured
    app: FastAPI = client.app  # type: ignore[attr-defined]
    mutations = _mutations(app)
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
        if method.upper() not in READ_METHODS
    }
    assert documented <= set(mutations), f"the walk missed: {documented - set(mutations)}"
    listed = SESSION_SPEC_TOKENLESS | AGENT_TOOLS_SPEC_BROWSER_GATED
    assert listed <= set(mutations), f"listed but not served: {listed - set(mutations)}"

    open_routes = []
    for method, path in mutations:
        if (method, path) in SESSION_SPEC_TOKENLESS:
            continue
        response = await client.request(method, _concrete(path), json={})
        if (method, path) in AGENT_TOOLS_SPEC_BROWSER_GATED:
            expected = (403, "session_required")
        else:
            expected = (401, "token_required")
        body = response.json() if response.content else {}
        if (response.status_code, body.get("code")) != expected:
            open_routes.append(f"{method} {path}: {response.status_code} {body}")
    assert not open_routes, "answered without the strict gate:\n" + "\n".join(open_routes)
