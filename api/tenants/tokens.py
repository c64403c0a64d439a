"""A tenant's tokens: /api/v1/tenants/{tenant}/tokens (the administrator's routes).

`POST` issues a token with a role (`coder`, `operator`) and shows it once; `GET` lists
the live tokens' names and roles (never a token or its digest); `DELETE .../{tokenId}`
revokes one, effective at its next request. Only the deployment token reaches these
routes (api/security/roles.py refuses a tenant token, 403 `forbidden_role`), and, being
strict, they refuse on a daemon without a token (401 `token_required`). They do not need
the tenant's standing-agents feature: a token is no agent.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path
from pydantic import Field

from api.deps import StoreDep, TenantPath
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from runtime.tenants import tokens as tenant_tokens
from runtime.timestamps import iso_ms
from runtime.wire import WireBody, WireModel

router = APIRouter(
    prefix="/api/v1/tenants/{tenant}/tokens",
    route_class=StrictJsonRoute,
    dependencies=[Depends(require_configured_token)],
)

TokenIdPath = Annotated[str, Path(pattern=tenant_tokens.TOKEN_ID_PATTERN)]


class TokenCreate(WireBody):
    name: str = Field(pattern=tenant_tokens.NAME_PATTERN, description="1 to 64 of [A-Za-z0-9._-]")
    role: Literal["coder", "operator"]


class TokenSummary(WireModel):
    token_id: str
    name: str
    role: Literal["coder", "operator"]
    created_at: str


class IssuedToken(TokenSummary):
    tenant: str
    token: str = Field(description="The bearer token: shown this once, stored hashed.")


class TokenList(WireModel):
    tenant: str
    tokens: list[TokenSummary]


class TokenRevoked(WireModel):
    token_id: str
    revoked: Literal[True]


def _role(value: str) -> Literal["coder", "operator"]:
    return "coder" if value == "coder" else "operator"


@router.post("", status_code=201, responses=errors(400, 401, 409))
async def create_token(body: TokenCreate, tenant: TenantPath, store: StoreDep) -> IssuedToken:
    try:
        issued = await asyncio.to_thread(tenant_tokens.create, store, tenant, body.name, body.role)
    except tenant_tokens.TokenRefused as err:
        raise ApiError.of(err.failure) from None
    return IssuedToken(
        token_id=issued.token_id,
        tenant=issued.tenant,
        name=issued.name,
        role=issued.role,
        token=issued.token,
        created_at=iso_ms(issued.created_at),
    )


@router.get("", responses=errors(400, 401))
async def list_tokens(tenant: TenantPath, store: StoreDep) -> TokenList:
    rows = await asyncio.to_thread(tenant_tokens.list_tokens, store, tenant)
    return TokenList(
        tenant=tenant,
        tokens=[
            TokenSummary(
                token_id=row.token_id,
                name=row.name,
                role=_role(row.role),
                created_at=iso_ms(row.created_at),
            )
            for row in rows
        ],
    )


@router.delete("/{token_id}", responses=errors(400, 401, 404))
async def revoke_token(tenant: TenantPath, token_id: TokenIdPath, store: StoreDep) -> TokenRevoked:
    try:
        await asyncio.to_thread(tenant_tokens.revoke, store, tenant, token_id)
    except tenant_tokens.TokenRefused as err:
        raise ApiError.of(err.failure) from None
    return TokenRevoked(token_id=token_id, revoked=True)
