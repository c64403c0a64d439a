"""What a verified identity may reach: the one authorization rule of the API.

The bearer check (api/security/bearer.py) verifies who a request is and asks `refusal`
here before the request goes any further, so no route can forget it: a route is closed
to tenant tokens unless its path is in the space below.

- `admin` (the deployment token, `AGENTRT_TOKEN`): everything.
- a tenant token (runtime/tenants/tokens.py) reaches only
  - `/mcp` and below, role `coder` or `operator` (the MCP server scopes its tools to the
    token's tenant itself);
  - `/api/v1/tenants/{its tenant}` and below, role `operator`, except the tenant's
    `tokens` and `mcp` routes (an MCP server entry runs a command on the worker, or
    sends the worker's keys to a URL), which are the administrator's;
  - `/health`, as any caller does.

Refusals are 403: `forbidden_tenant` for a path of another tenant, `forbidden_role` for
a route above the token's role (a `coder` on REST, anyone but the administrator on the
tokens routes, and every path outside the space above: `/session`, `/workspace/...`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Depends, Request

from runtime.failures import WireError
from runtime.tenants.tokens import Identity

TENANTS_PREFIX = "/api/v1/tenants/"
MCP_PATH = "/mcp"
OPEN_PATHS = frozenset({"/health"})
# The tenant's tokens, and its MCP servers and grants (an `mcpServers` entry runs a
# command on the worker and may reference the worker's keys: the administrator's call).
ADMIN_ONLY_SEGMENTS = frozenset({"tokens", "mcp"})
STATE_KEY = "identity"


class ForbiddenTenant(WireError):
    """A tenant token on a path of another tenant: 403."""

    kind: Literal["forbidden_tenant"] = "forbidden_tenant"
    tenant: str

    @property
    def http_status(self) -> int:
        return 403

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'This token belongs to tenant "{self.tenant}" and reaches no other tenant',
            "code": self.kind_name,
        }


class ForbiddenRole(WireError):
    """A route above the identity's role: 403."""

    kind: Literal["forbidden_role"] = "forbidden_role"
    role: str

    @property
    def http_status(self) -> int:
        return 403

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'A token of role "{self.role}" does not reach this route',
            "code": self.kind_name,
            "role": self.role,
        }


def refusal(identity: Identity, path: str) -> WireError | None:
    """None when `identity` may reach `path` (the decoded path, as routing sees it)."""
    if identity.is_admin or path in OPEN_PATHS:
        return None
    role = identity.role or "none"
    if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        return None if role in ("coder", "operator") else ForbiddenRole(role=role)
    if path.startswith(TENANTS_PREFIX):
        tenant, _, rest = path[len(TENANTS_PREFIX) :].partition("/")
        if tenant != identity.tenant:
            return ForbiddenTenant(tenant=identity.tenant or "")
        if rest.split("/", 1)[0] in ADMIN_ONLY_SEGMENTS or role != "operator":
            return ForbiddenRole(role=role)
        return None
    return ForbiddenRole(role=role)


def current_identity(request: Request) -> Identity | None:
    """The identity the bearer check verified; None on a daemon without a token (or on a
    path the bearer does not guard)."""
    identity = request.scope.get("state", {}).get(STATE_KEY)
    return identity if isinstance(identity, Identity) else None


IdentityDep = Annotated[Identity | None, Depends(current_identity)]

# Who answered, on a daemon without a token: its loopback bind is the only door.
LOOPBACK_ANSWERER = "loopback"


def answerer(request: Request) -> str:
    """What an answer to a human's request records as who gave it: the verified token's
    label (`admin`, `operator:alice`), or `loopback` on a daemon without a token; never
    what the request says of itself."""
    identity = current_identity(request)
    return identity.label if identity is not None else LOOPBACK_ANSWERER


AnswererDep = Annotated[str, Depends(answerer)]
