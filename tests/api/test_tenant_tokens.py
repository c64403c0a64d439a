"""Tenant tokens with roles: issued by the administrator, stored hashed, one tenant each.

`POST/GET/DELETE /api/v1/tenants/{tenant}/tokens` (the deployment token's only); a
`coder` token reaches the tenant's MCP tools (`/mcp`), an `operator` token the tenant's
REST routes; another tenant is 403 `forbidden_tenant`, a route above the role 403
`forbidden_role`, a revoked token 401 at its next request; a decision answered with a
token records the verified identity (`answeredBy`) beside the self-declared `respondedBy`.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import inspect
from sqlmodel import select

from api.security.bearer import UNAUTHORIZED
from api.security.roles import ForbiddenRole, ForbiddenTenant, refusal
from runtime.standing_agents.models import AttentionRequest
from runtime.store import Store
from runtime.tenants.tokens import (
    ADMIN,
    Identity,
    TenantToken,
    TokenRefused,
    create,
    revoke,
    verify,
)
from tests.agents_helpers import AgentsFactory
from tests.conftest import ApiFactory

TOKEN = "deployment-admin-token"
ADMIN_AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


async def _issue(
    client: httpx.AsyncClient, tenant: str, name: str, role: str, headers: dict[str, str]
) -> dict[str, Any]:
    response = await client.post(
        f"/api/v1/tenants/{tenant}/tokens", json={"name": name, "role": role}, headers=headers
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _rows(database_url: str) -> list[TenantToken]:
    store = Store(database_url)
    try:
        with store.session() as db:
            return list(db.exec(select(TenantToken)).all())
    finally:
        store.dispose()


# -- the policy, case by case --------------------------------------------------------------


def _identity(role: str, tenant: str = "acme") -> Identity:
    return Identity.model_validate(
        {"kind": "tenant", "tenant": tenant, "name": "alice", "role": role, "token_id": "t1"}
    )


@pytest.mark.parametrize(
    ("role", "path", "expected"),
    [
        ("operator", "/api/v1/tenants/acme/decisions", None),
        ("operator", "/api/v1/tenants/acme", None),
        ("operator", "/api/v1/tenants/acme/windows/h1/windows_windows", None),
        ("operator", "/api/v1/tenants/other/decisions", "forbidden_tenant"),
        ("operator", "/api/v1/tenants/acmex/decisions", "forbidden_tenant"),
        ("operator", "/api/v1/tenants//decisions", "forbidden_tenant"),
        ("operator", "/api/v1/tenants/acme/tokens", "forbidden_role"),
        ("operator", "/api/v1/tenants/acme/tokens/abc", "forbidden_role"),
        ("operator", "/api/v1/tenants", "forbidden_role"),
        ("operator", "/api/v1/agent-modes/soa/Idle/tools", "forbidden_role"),
        ("operator", "/api/v1/llm/providers/openai", "forbidden_role"),
        ("operator", "/session", "forbidden_role"),
        ("operator", "/workspace/file", "forbidden_role"),
        ("operator", "/capabilities", "forbidden_role"),
        ("operator", "/mcp", None),
        ("operator", "/mcp/", None),
        ("operator", "/mcpx", "forbidden_role"),
        ("operator", "/health", None),
        ("coder", "/mcp", None),
        ("coder", "/mcp/messages", None),
        ("coder", "/api/v1/tenants/acme/decisions", "forbidden_role"),
        ("coder", "/api/v1/tenants/other/decisions", "forbidden_tenant"),
        ("coder", "/session/abc/prompt", "forbidden_role"),
    ],
)
def test_what_a_tenant_token_reaches(role: str, path: str, expected: str | None) -> None:
    refused = refusal(_identity(role), path)
    assert (refused.kind_name if refused is not None else None) == expected
    if refused is not None:
        assert refused.http_status == 403
        assert refused.response_body()["code"] == expected
        assert isinstance(refused, ForbiddenTenant | ForbiddenRole)


def test_the_administrator_reaches_everything() -> None:
    for path in ("/session", "/api/v1/tenants/acme/tokens", "/api/v1/llm/presets/x", "/mcp"):
        assert refusal(ADMIN, path) is None
    assert ADMIN.label == "admin"
    assert _identity("operator").label == "operator:alice"


# -- the routes -----------------------------------------------------------------------------


async def test_create_list_revoke_shown_once_stored_hashed(
    api: ApiFactory, database_url: str
) -> None:
    client = await api(token=TOKEN, database_url=database_url)
    tenant = _tenant()
    base = f"/api/v1/tenants/{tenant}/tokens"
    issued = await _issue(client, tenant, "alice", "operator", ADMIN_AUTH)
    assert set(issued) == {"tokenId", "tenant", "name", "role", "token", "createdAt"}
    assert (issued["tenant"], issued["name"], issued["role"]) == (tenant, "alice", "operator")
    token: str = issued["token"]
    assert token.startswith("agentrt_") and len(token) >= 8 + 43
    coder = await _issue(client, tenant, "ci.bot-1", "coder", ADMIN_AUTH)
    assert coder["token"] != token

    # Stored hashed: the row holds the SHA-256, the token is in no column.
    rows = {row.token_id: row for row in _rows(database_url)}
    row = rows[issued["tokenId"]]
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert all(token not in str(value) for value in row.model_dump().values())

    # Listed without the token or its digest (shown once, at creation only).
    listed = await client.get(base, headers=ADMIN_AUTH)
    assert listed.status_code == 200
    body = listed.json()
    assert body["tenant"] == tenant
    assert [(t["name"], t["role"]) for t in body["tokens"]] == [
        ("alice", "operator"),
        ("ci.bot-1", "coder"),
    ]
    assert all(set(t) == {"tokenId", "name", "role", "createdAt"} for t in body["tokens"])
    assert token not in listed.text and row.token_hash not in listed.text
    # Another tenant's list does not show them.
    other = await client.get(f"/api/v1/tenants/{_tenant()}/tokens", headers=ADMIN_AUTH)
    assert other.json()["tokens"] == []

    # A live name is taken; a bad name or role is a 400.
    taken = await client.post(base, json={"name": "alice", "role": "coder"}, headers=ADMIN_AUTH)
    assert taken.status_code == 409 and taken.json()["code"] == "token_name_taken"
    for bad in (
        {"name": "", "role": "coder"},
        {"name": "a" * 65, "role": "coder"},
        {"name": "al ice", "role": "coder"},
        {"name": "alice/2", "role": "coder"},
        {"name": "bob", "role": "admin"},
        {"name": "bob"},
        {"name": "bob", "role": "coder", "token": "mine"},
    ):
        refused = await client.post(base, json=bad, headers=ADMIN_AUTH)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["code"] == "invalid_request"

    # Revoke: gone from the list, its name free again; again is a no-op; unknown is 404.
    url = f"{base}/{issued['tokenId']}"
    revoked = await client.delete(url, headers=ADMIN_AUTH)
    assert revoked.status_code == 200
    assert revoked.json() == {"tokenId": issued["tokenId"], "revoked": True}
    assert (await client.delete(url, headers=ADMIN_AUTH)).status_code == 200
    names = [t["name"] for t in (await client.get(base, headers=ADMIN_AUTH)).json()["tokens"]]
    assert names == ["ci.bot-1"]
    again = await _issue(client, tenant, "alice", "coder", ADMIN_AUTH)
    assert again["tokenId"] != issued["tokenId"]
    missing = await client.delete(f"{base}/nope", headers=ADMIN_AUTH)
    assert missing.status_code == 404 and missing.json()["code"] == "token_not_found"
    # A token id of another tenant is not found under this one (and not revoked).
    elsewhere = await client.delete(
        f"/api/v1/tenants/{_tenant()}/tokens/{coder['tokenId']}", headers=ADMIN_AUTH
    )
    assert elsewhere.status_code == 404
    assert [t["name"] for t in (await client.get(base, headers=ADMIN_AUTH)).json()["tokens"]] == [
        "ci.bot-1",
        "alice",
    ]
    # The revoked row stays, for the record of who answered what.
    kept = {row.token_id: row for row in _rows(database_url)}[issued["tokenId"]]
    assert kept.revoked_at is not None


async def test_concurrent_creates_of_one_name_issue_one_token(
    api: ApiFactory, database_url: str
) -> None:
    client = await api(token=TOKEN, database_url=database_url)
    tenant = _tenant()
    responses = await asyncio.gather(
        *(
            client.post(
                f"/api/v1/tenants/{tenant}/tokens",
                json={"name": "same", "role": "operator"},
                headers=ADMIN_AUTH,
            )
            for _ in range(5)
        )
    )
    assert sorted(r.status_code for r in responses) == [201, 409, 409, 409, 409]
    assert len(_rows(database_url)) == 1


async def test_a_tenant_token_reaches_only_its_space(api: ApiFactory, database_url: str) -> None:
    client = await api(token=TOKEN, database_url=database_url)
    tenant, other = _tenant(), _tenant()
    operator = _bearer((await _issue(client, tenant, "alice", "operator", ADMIN_AUTH))["token"])
    coder = _bearer((await _issue(client, tenant, "bob", "coder", ADMIN_AUTH))["token"])

    # The operator reaches its tenant's REST routes (the feature gate still applies).
    feature = await client.get(
        f"/api/v1/tenants/{tenant}/features/standing-agents", headers=operator
    )
    assert feature.status_code == 200 and feature.json()["enabled"] is False
    gated = await client.get(f"/api/v1/tenants/{tenant}/decisions", headers=operator)
    assert gated.status_code == 403 and gated.json()["code"] == "feature_disabled"

    def code(response: httpx.Response) -> tuple[int, str | None]:
        return response.status_code, response.json().get("code")

    # Another tenant: 403 forbidden_tenant, whatever the role.
    for headers in (operator, coder):
        refused = await client.get(f"/api/v1/tenants/{other}/decisions", headers=headers)
        assert code(refused) == (403, "forbidden_tenant")
        assert other not in refused.text  # the refusal names the token's tenant only
    # A coder on REST, anyone on the tokens routes, anything outside: 403 forbidden_role.
    refused = await client.get(f"/api/v1/tenants/{tenant}/features/standing-agents", headers=coder)
    assert code(refused) == (403, "forbidden_role")
    assert refused.json()["role"] == "coder"
    for headers in (operator, coder):
        tokens = f"/api/v1/tenants/{tenant}/tokens"
        assert code(await client.get(tokens, headers=headers)) == (403, "forbidden_role")
        created = await client.post(tokens, json={"name": "x", "role": "operator"}, headers=headers)
        assert code(created) == (403, "forbidden_role")
        assert code(await client.delete(f"{tokens}/abc", headers=headers)) == (
            403,
            "forbidden_role",
        )
        assert code(await client.get(f"/api/v1/tenants/{other}/tokens", headers=headers)) == (
            403,
            "forbidden_tenant",
        )
        for method, path in (
            ("POST", "/session"),
            ("GET", "/workspace/file?path=README.md"),
            ("GET", "/capabilities"),
            ("GET", "/daemon/status"),
            ("GET", "/api/v1/agent-modes"),
            ("GET", "/api/v1/llm/providers"),
        ):
            response = await client.request(method, path, headers=headers, json={})
            assert code(response) == (403, "forbidden_role"), (method, path, response.text)
    # The refusal comes before the body is read: a malformed body is not looked at.
    malformed = await client.post(
        "/session",
        content=b"{not json",
        headers={**operator, "Content-Type": "application/json"},
    )
    assert code(malformed) == (403, "forbidden_role")
    # /mcp is open to both roles (past the bearer: the MCP transport answers a ping).
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    for headers in (operator, coder):
        answer = await client.post("/mcp", json=ping, headers={**headers, **mcp_headers})
        assert answer.status_code == 200, answer.text
        assert (await client.get("/mcp", headers=headers)).status_code == 405
    # /health stays as it is; the administrator still reaches everything.
    assert (await client.get("/health", headers=coder)).json() == {"status": "ok"}
    assert (await client.get("/capabilities", headers=ADMIN_AUTH)).status_code == 200


async def test_a_revoked_token_is_401_at_once(api: ApiFactory, database_url: str) -> None:
    client = await api(token=TOKEN, database_url=database_url)
    tenant = _tenant()
    issued = await _issue(client, tenant, "alice", "operator", ADMIN_AUTH)
    operator = _bearer(issued["token"])
    url = f"/api/v1/tenants/{tenant}/features/standing-agents"
    assert (await client.get(url, headers=operator)).status_code == 200
    revoked = await client.delete(
        f"/api/v1/tenants/{tenant}/tokens/{issued['tokenId']}", headers=ADMIN_AUTH
    )
    assert revoked.status_code == 200
    refused = await client.get(url, headers=operator)
    assert refused.status_code == 401 and refused.json() == UNAUTHORIZED
    # The same uniform 401 as any wrong bearer, a token of agentrt's shape or not.
    for guess in ("agentrt_" + "x" * 43, "agentrt_", issued["token"] + "x", issued["token"][:-1]):
        wrong = await client.get(url, headers=_bearer(guess))
        assert wrong.status_code == 401 and wrong.json() == UNAUTHORIZED


async def test_a_wrong_tenant_token_counts_as_a_failed_check(api: ApiFactory) -> None:
    client = await api(token=TOKEN, auth_failures_per_minute=2)
    tenant = _tenant()
    token = (await _issue(client, tenant, "alice", "operator", ADMIN_AUTH))["token"]
    url = f"/api/v1/tenants/{tenant}/features/standing-agents"
    for n in range(2):
        guess = await client.get(url, headers=_bearer(f"agentrt_guess{n}"))
        assert guess.status_code == 401
    # Blocked before any check, the right tenant token (and the admin's) included.
    assert (await client.get(url, headers=_bearer(token))).status_code == 429
    assert (await client.get(url, headers=ADMIN_AUTH)).status_code == 429


async def test_a_tokenless_daemon_issues_no_token_and_knows_none(
    api: ApiFactory, database_url: str
) -> None:
    client = await api(database_url=database_url)
    tenant = _tenant()
    base = f"/api/v1/tenants/{tenant}/tokens"
    refused = await client.post(base, json={"name": "alice", "role": "operator"})
    assert refused.status_code == 401 and refused.json()["code"] == "token_required"
    assert (await client.get(base)).json()["code"] == "token_required"
    assert (await client.delete(f"{base}/abc")).json()["code"] == "token_required"
    # A tenant token (written into the store directly) means nothing special here:
    # no bearer is checked, so it neither opens nor closes anything.
    store = Store(database_url)
    try:
        token = (await asyncio.to_thread(create, store, tenant, "alice", "coder")).token
        assert (await asyncio.to_thread(verify, store, token)) is not None
    finally:
        store.dispose()
    for headers in ({}, _bearer(token)):
        assert (await client.get("/capabilities", headers=headers)).status_code == 200
    strict = await client.put(
        f"/api/v1/tenants/{tenant}/features/standing-agents",
        json={"enabled": True},
        headers=_bearer(token),
    )
    assert strict.status_code == 401 and strict.json()["code"] == "token_required"


async def test_an_operator_answers_a_decision_with_its_verified_identity(
    agents: AgentsFactory,
) -> None:
    d = await agents(token=TOKEN)
    tenant = d.tenant()
    soa = await d.soa(tenant)  # enabled with the administrator's token
    issued = await _issue(d.client, tenant, "alice", "operator", ADMIN_AUTH)
    operator = _bearer(issued["token"])
    base = d.base(tenant)

    decision_id = d.raise_decision(tenant, soa)
    listed = await d.client.get(f"{base}/decisions", params={"status": "open"}, headers=operator)
    assert listed.status_code == 200, listed.text
    assert [x["decisionId"] for x in listed.json()["decisions"]] == [decision_id]
    assert listed.json()["decisions"][0]["answeredBy"] is None

    answer = {"resolution": "approve", "respondedBy": "the-boss"}  # self-declared
    url = f"{base}/decisions/{decision_id}/respond"
    answered = await d.client.post(url, json=answer, headers=operator)
    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert body["status"] == "resolved"
    assert (body["respondedBy"], body["answeredBy"]) == ("the-boss", "operator:alice")
    # The same answer again, by the administrator: the first answer's identity stays.
    again = await d.client.post(url, json=answer)
    assert again.status_code == 200 and again.json()["answeredBy"] == "operator:alice"
    with d.store.session() as db:
        row = db.get(AttentionRequest, decision_id)
    assert row is not None and row.answered_by == "operator:alice"
    assert row.responded_by == "the-boss"

    # The administrator's answer records `admin`.
    second = d.raise_decision(tenant, soa)
    by_admin = await d.client.post(f"{base}/decisions/{second}/respond", json={"resolution": "no"})
    assert by_admin.status_code == 200 and by_admin.json()["answeredBy"] == "admin"
    assert by_admin.json()["respondedBy"] is None

    # A coder token may not answer; another tenant's operator may not either.
    third = d.raise_decision(tenant, soa)
    coder = _bearer((await _issue(d.client, tenant, "bob", "coder", ADMIN_AUTH))["token"])
    refused = await d.client.post(
        f"{base}/decisions/{third}/respond", json={"resolution": "approve"}, headers=coder
    )
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden_role"
    stranger_tenant = d.tenant()
    stranger = _bearer(
        (await _issue(d.client, stranger_tenant, "eve", "operator", ADMIN_AUTH))["token"]
    )
    refused = await d.client.post(
        f"{base}/decisions/{third}/respond", json={"resolution": "approve"}, headers=stranger
    )
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden_tenant"
    still_open = await d.client.get(f"{base}/decisions", params={"status": "open"})
    assert [x["decisionId"] for x in still_open.json()["decisions"]] == [third]


# -- migration 0010 -------------------------------------------------------------------------


def test_migration_0010_goes_down_and_up(database_url: str) -> None:
    """Down to 0009 (the table and the column gone) and up again, a decision answered
    before keeping `answered_by` NULL."""
    from alembic import command

    from runtime.store.migrate import alembic_config, current_revision, head_revision

    store = Store(database_url)
    try:
        with store.engine.begin() as connection:
            command.downgrade(alembic_config(connection), "0009")
        assert current_revision(store.engine) == "0009"
        with store.engine.connect() as connection:
            inspector = inspect(connection)
            assert not inspector.has_table("tenant_tokens")
            columns = {c["name"] for c in inspector.get_columns("attention_requests")}
            assert "answered_by" not in columns and "responded_by" in columns
        with store.engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
        assert current_revision(store.engine) == head_revision()
        with store.engine.connect() as connection:
            inspector = inspect(connection)
            assert inspector.has_table("tenant_tokens")
            indexes = {i["name"]: i for i in inspector.get_indexes("tenant_tokens")}
            assert indexes["uq_tenant_tokens_live_name"]["unique"]
            assert indexes["ix_tenant_tokens_token_hash"]["unique"]
        # The partial index: a revoked name can be issued again, a live one cannot.
        first = create(store, "acme", "alice", "operator")
        with pytest.raises(TokenRefused):
            create(store, "acme", "alice", "coder")
        revoke(store, "acme", first.token_id)
        assert verify(store, first.token) is None
        second = create(store, "acme", "alice", "coder")
        identity = verify(store, second.token)
        assert identity is not None and identity.label == "coder:alice"
        assert identity.tenant == "acme" and identity.token_id == second.token_id
    finally:
        store.dispose()
