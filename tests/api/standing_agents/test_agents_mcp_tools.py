"""Standing agents use a tenant's MCP tools, over HTTP, against the real workflow (worker +
Temporal dev server, the scripted model) and a real MCP server built on the SDK (the fault
server over Streamable HTTP): the operator's grant and the mode's toolset gate every tool
(fail-closed), a read-only tool runs at once, any other becomes a decision on the tenant's
queue and runs once after a human approves it, its result reaching the agent as its next
event; the constitution applies to the arguments."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from runtime.approvals.binding import call_digest
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentLedgerAction,
    AgentLedgerTurn,
    AttentionRequest,
)
from runtime.store.operations import OperationLedger
from tests.agents_helpers import AgentsDaemon, AgentsFactory
from tests.conftest import migrated_sqlite
from tests.mcp_helpers import FaultServer, fault_server
from tests.workflows import standing_agent_support as sa


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """SQLite only (each test starts a server, a worker and an agent); the store's part
    (grants, the decision's outcome in its event) runs on both in
    tests/runtime/mcp/test_mcp_store.py."""
    return migrated_sqlite(sqlite_template, tmp_path / ".data" / "agentrt.db")


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[FaultServer]:
    with fault_server(tmp_path) as server:
        yield server


def _first(d: AgentsDaemon, instance_id: str, seq: int) -> AgentLedgerAction:
    """The first action of a ledger turn."""
    return sa.actions(d.store, instance_id, seq)[0]


def _turns(d: AgentsDaemon, instance_id: str) -> list[AgentLedgerTurn]:
    return sa.turns(d.store, instance_id)


def _decisions(d: AgentsDaemon, tenant: str) -> list[AttentionRequest]:
    with d.store.session() as db:
        statement = select(AttentionRequest).where(col(AttentionRequest.tenant) == tenant)
        return list(db.exec(statement.order_by(col(AttentionRequest.created_at))).all())


async def _tell(d: AgentsDaemon, tenant: str, soa: str, text: str) -> int:
    """Send the agent a message and wait for the turn that answers it; its ledger seq."""
    before = len(_turns(d, soa))
    response = await d.client.post(f"{d.base(tenant)}/agents/{soa}/messages", json={"text": text})
    assert response.status_code == 202, response.text
    await d.wait_until(lambda: len(_turns(d, soa)) > before, "the message's turn", timeout=90)
    return _turns(d, soa)[-1].seq


def _call(tool: str, args: dict[str, Any]) -> str:
    return f"/call {tool} {json.dumps(args)}"


async def _set_up(
    d: AgentsDaemon, faults: FaultServer, *, grant: list[str], trust: bool = False
) -> tuple[str, str]:
    tenant = d.tenant()
    soa = await d.soa(tenant)
    await d.wait_until(lambda: _turns(d, soa), "the greeting turn", timeout=90)
    base = d.base(tenant)
    entry = {"httpUrl": faults.url, "trust": trust}
    put = await d.client.put(f"{base}/mcp/servers/faults", json=entry)
    assert put.status_code == 200, put.text
    assert put.json() == {"serverName": "faults", "transport": "http", "trust": trust}
    mode = await d.client.get("/api/v1/agent-modes/Soa")
    strategic = next(m for m in mode.json()["modes"] if m["name"] == "Strategic")
    tools = [*strategic["tools"], "mcp__faults__*"]
    changed = await d.client.put("/api/v1/agent-modes/Soa/Strategic/tools", json={"tools": tools})
    assert changed.status_code == 200, changed.text
    assert "mcp__faults__*" in changed.json()["tools"]
    granted = await d.client.put(f"{base}/mcp/grants/Soa", json={"tools": grant})
    assert granted.status_code == 200, granted.text
    assert granted.json() == {"tenant": tenant, "agentType": "Soa", "tools": sorted(set(grant))}
    return tenant, soa


async def test_without_a_grant_an_mcp_tool_is_blocked_and_never_called(
    agents: AgentsFactory, faults: FaultServer
) -> None:
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__count"])
    seq = await _tell(d, tenant, soa, _call("mcp__faults__record", {"value": "nope"}))
    blocked = _first(d, soa, seq)
    assert (blocked.tool, blocked.outcome) == ("mcp__faults__record", "blocked")
    assert blocked.blocked_reason == "mcp_tool_not_granted"
    assert faults.calls() == []
    assert _decisions(d, tenant) == []


async def test_a_trusted_read_only_tool_runs_at_once_and_its_result_is_on_the_ledger(
    agents: AgentsFactory, faults: FaultServer
) -> None:
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__*"], trust=True)
    seq = await _tell(d, tenant, soa, _call("mcp__faults__count", {}))
    action = _first(d, soa, seq)
    assert (action.tool, action.outcome) == ("mcp__faults__count", "ok")
    assert action.result == {"output": "0"}
    assert _decisions(d, tenant) == []
    listed = (await d.client.get(f"{d.base(tenant)}/mcp")).json()
    assert listed["grants"] == {"Soa": ["mcp__faults__*"]}
    (cell,) = listed["servers"]
    assert (cell["name"], cell["mcpStatus"], cell["status"]) == ("faults", "connected", "ok")
    assert "mcp__faults__record" in cell["tools"]


async def test_a_consequential_call_is_a_decision_and_runs_once_after_approval(
    agents: AgentsFactory, faults: FaultServer
) -> None:
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__record"])
    seq = await _tell(d, tenant, soa, _call("mcp__faults__record", {"value": "ship"}))
    action = _first(d, soa, seq)
    assert (action.tool, action.outcome) == ("mcp__faults__record", "ok")
    assert action.result is not None and action.result["status"] == "awaiting_approval"
    assert faults.calls() == []  # not run: a human has not approved it
    (decision,) = _decisions(d, tenant)
    assert (decision.kind, decision.status) == ("mcp_call", "open")
    assert decision.payload["arguments"] == {"value": "ship"}
    assert (decision.payload["server"], decision.payload["serverTool"]) == ("faults", "record")
    assert "ship" in decision.body
    # Bound to exactly this call: its digest, in the payload and in the body shown.
    target = {"server": "faults", "serverTool": "record"}
    digest = call_digest("mcp__faults__record", {"value": "ship"}, **target)
    assert decision.payload["digest"] == digest and digest in decision.body
    assert _turns(d, soa)[-1].decision_kind == "Escalated"

    url = f"{d.base(tenant)}/decisions/{decision.decision_id}/respond"
    answer = {"resolution": "approve", "respondedBy": "ops"}
    before = len(_turns(d, soa))
    assert (await d.client.post(url, json=answer)).status_code == 200
    await d.wait_until(lambda: len(_turns(d, soa)) > before, "the answer's turn", timeout=90)
    (call,) = faults.calls()
    assert call["value"] == "ship"
    assert call["operationId"] == f"agent-mcp/{tenant}/{decision.decision_id}"
    turn = _turns(d, soa)[-1]
    assert turn.event_kind == "OperatorAnsweredEscalation"
    assert turn.decision_kind == "ActedWithTool"
    # The result reached the agent in its event (what the episode's opening shows).
    outcome = turn.event_payload["mcpCall"]
    assert outcome["decisionId"] == decision.decision_id
    assert (outcome["tool"], outcome["outcome"]) == ("mcp__faults__record", "ok")
    ran = _first(d, soa, turn.seq)
    assert (ran.tool, ran.outcome, ran.arguments) == (
        "mcp__faults__record",
        "ok",
        {"value": "ship"},
    )
    record = OperationLedger(d.store).get(f"agent-mcp/{tenant}/{decision.decision_id}")
    assert record is not None and record.state == "done"
    (approved,) = _decisions(d, tenant)
    assert approved.approved_digest == digest

    # The same answer again resolves nothing twice and runs nothing twice.
    assert (await d.client.post(url, json=answer)).status_code == 200
    with d.store.session() as db:
        resumes = db.exec(
            select(AgentEventRow).where(
                col(AgentEventRow.event_id) == f"escalation/{decision.decision_id}"
            )
        ).all()
    assert len(resumes) == 1
    assert len(faults.calls()) == 1


async def test_an_untrusted_servers_read_only_hint_is_only_its_word(
    agents: AgentsFactory, faults: FaultServer
) -> None:
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__*"])
    await _tell(d, tenant, soa, _call("mcp__faults__count", {}))
    (decision,) = _decisions(d, tenant)
    assert decision.kind == "mcp_call"
    assert "fingerprint" not in (await d.client.get(f"{d.base(tenant)}/decisions")).text
    url = f"{d.base(tenant)}/decisions/{decision.decision_id}/respond"
    loose = await d.client.post(url, json={"resolution": "Approved"})
    assert (loose.status_code, loose.json()["code"]) == (400, "invalid_resolution")
    assert loose.json()["allowed"] == ["approve", "reject"]


async def test_a_rejected_call_never_runs(agents: AgentsFactory, faults: FaultServer) -> None:
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__*"])
    await _tell(d, tenant, soa, _call("mcp__faults__record", {"value": "no"}))
    (decision,) = _decisions(d, tenant)
    before = len(_turns(d, soa))
    url = f"{d.base(tenant)}/decisions/{decision.decision_id}/respond"
    assert (await d.client.post(url, json={"resolution": "reject"})).status_code == 200
    await d.wait_until(lambda: len(_turns(d, soa)) > before, "the answer's turn", timeout=90)
    assert faults.calls() == []
    assert "mcpCall" not in _turns(d, soa)[-1].event_payload


async def test_the_constitution_applies_to_an_mcp_tools_arguments(
    agents: AgentsFactory, faults: FaultServer
) -> None:
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__*"])
    rules = [{"id": "no-prod", "pattern": "(?i)production", "tools": ["mcp__faults__record"]}]
    put = await d.client.put(f"{d.base(tenant)}/config/constitution.rules", json={"value": rules})
    assert put.status_code == 200, put.text
    seq = await _tell(d, tenant, soa, _call("mcp__faults__record", {"value": "to production"}))
    action = _first(d, soa, seq)
    assert (action.outcome, action.blocked_reason) == ("blocked", "constitution_violation")
    assert action.violations == ["no-prod"]
    assert _decisions(d, tenant) == []
    assert faults.calls() == []


async def test_the_routes_refuse_what_they_cannot_store(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    base = d.base(tenant)
    off = await d.client.get(f"{base}/mcp")
    assert (off.status_code, off.json()["code"]) == (403, "feature_disabled")
    await d.soa(tenant)
    bad_grant = await d.client.put(f"{base}/mcp/grants/Soa", json={"tools": ["soa_send_message"]})
    assert (bad_grant.status_code, bad_grant.json()["code"]) == (400, "invalid_mcp_grant")
    unknown_type = await d.client.put(f"{base}/mcp/grants/Nobody", json={"tools": []})
    assert unknown_type.status_code == 400
    bad_name = await d.client.put(f"{base}/mcp/servers/a b", json={"command": "x"})
    assert (bad_name.status_code, bad_name.json()["code"]) == (400, "invalid_server_name")
    metadata = await d.client.put(
        f"{base}/mcp/servers/meta", json={"httpUrl": "http://169.254.169.254/mcp"}
    )
    assert (metadata.status_code, metadata.json()["code"]) == (400, "invalid_mcp_server")
    extra = await d.client.put(f"{base}/mcp/servers/s", json={"command": "x", "nope": 1})
    assert extra.status_code == 400
    missing = await d.client.delete(f"{base}/mcp/servers/absent")
    assert missing.status_code == 404
    outside = await d.client.put(
        "/api/v1/agent-modes/Compliance/Cadence/tools", json={"tools": ["soa_propose_task"]}
    )
    assert (outside.status_code, outside.json()["code"]) == (400, "invalid_mode_tools")
    nomode = await d.client.put("/api/v1/agent-modes/Soa/Nowhere/tools", json={"tools": []})
    assert (nomode.status_code, nomode.json()["code"]) == (404, "unknown_mode")
    secret = {"command": "x", "env": {"K": "$AGENTRT_TOKEN"}}
    leaked = await d.client.put(f"{base}/mcp/servers/s", json=secret)
    assert (leaked.status_code, leaked.json()["code"]) == (400, "invalid_mcp_server")
    ok = await d.client.put(f"{base}/mcp/servers/s", json={"command": "x", "env": {"A": "v"}})
    assert ok.status_code == 200
    assert "env" not in ok.text and "v" not in json.dumps(ok.json().get("env", ""))
    gone = await d.client.delete(f"{base}/mcp/servers/s")
    assert gone.json() == {"serverName": "s", "removed": True}
    revoked = await d.client.put(f"{base}/mcp/grants/Soa", json={"tools": []})
    assert revoked.json()["tools"] == []
    assert (await d.client.get(f"{base}/mcp")).json()["grants"] == {}


async def test_a_call_proposed_before_a_reset_never_runs(
    agents: AgentsFactory, faults: FaultServer
) -> None:
    """A reset wipes the agent's memory: a call it proposed before is not its to run. The
    reset supersedes its decision (issue 22), so an approval afterwards is refused (the
    worker's own check of the call's generation stays, behind it)."""
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__*"])
    await _tell(d, tenant, soa, _call("mcp__faults__record", {"value": "old"}))
    (decision,) = _decisions(d, tenant)
    base = d.base(tenant)
    reset = await d.client.post(f"{base}/agents/{soa}/reset", json={})
    assert reset.status_code == 200, reset.text
    url = f"{base}/decisions/{decision.decision_id}/respond"
    late = await d.client.post(url, json={"resolution": "approve"})
    assert (late.status_code, late.json()["resolution"]) == (409, "superseded")
    assert faults.calls() == []


async def test_what_an_attacker_tried_is_refused(agents: AgentsFactory) -> None:
    """An operator token configures no server (a command runs on the worker); no header
    with CR/LF (the HTTP client's refusal would quote it); no name that reads as two or
    that gives its tools another server's names."""
    d = await agents()
    tenant = d.tenant()
    base = d.base(tenant)
    await d.soa(tenant)
    made = await d.client.post(f"{base}/tokens", json={"name": "alice", "role": "operator"})
    assert made.status_code == 201, made.text
    alice = {"Authorization": f"Bearer {made.json()['token']}"}
    shell = {"command": "/bin/sh", "args": ["-c", "id"]}
    denied = await d.client.put(f"{base}/mcp/servers/pwn", json=shell, headers=alice)
    assert (denied.status_code, denied.json()["code"]) == (403, "forbidden_role")
    grant = await d.client.put(f"{base}/mcp/grants/Soa", json={"tools": []}, headers=alice)
    assert grant.status_code == 403
    crlf = {"httpUrl": "http://127.0.0.1:9/mcp", "headers": {"A": "Bearer s3cret\n"}}
    refused = await d.client.put(f"{base}/mcp/servers/h", json=crlf)
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_mcp_server")
    assert "s3cret" not in refused.text
    double = await d.client.put(f"{base}/mcp/servers/a__b", json={"command": "x"})
    assert (double.status_code, double.json()["code"]) == (400, "invalid_mcp_server")
    assert (await d.client.put(f"{base}/mcp/servers/x.y", json={"command": "x"})).is_success
    twin = await d.client.put(f"{base}/mcp/servers/x_y", json={"command": "x"})
    assert (twin.status_code, twin.json()["code"]) == (400, "invalid_mcp_server")
    newline = await d.client.put(f"{base}/mcp/grants/Soa", json={"tools": ["mcp__a__*\n"]})
    assert newline.status_code == 400


async def test_an_approval_binds_the_exact_call(agents: AgentsFactory, faults: FaultServer) -> None:
    """Issue 22: an answer naming a digest the call does not have is refused, and a call
    whose arguments changed after their approval is not run."""
    d = await agents()
    tenant, soa = await _set_up(d, faults, grant=["mcp__faults__*"])
    await _tell(d, tenant, soa, _call("mcp__faults__record", {"value": "as shown"}))
    (decision,) = _decisions(d, tenant)
    base = d.base(tenant)
    url = f"{base}/decisions/{decision.decision_id}/respond"
    other = call_digest("mcp__faults__record", {"value": "something else"})
    refused = await d.client.post(url, json={"resolution": "approve", "digest": other})
    assert refused.status_code == 409, refused.text
    assert refused.json() == {
        "error": f"This answer approves {other}, but its call's digest is "
        f"{decision.payload['digest']}",
        "code": "approval_digest_mismatch",
        "decisionId": decision.decision_id,
        "expected": decision.payload["digest"],
        "given": other,
    }
    malformed = await d.client.post(url, json={"resolution": "approve", "digest": "sha1:x"})
    assert malformed.status_code == 400
    assert _decisions(d, tenant)[0].status == "open"  # neither answer resolved it
    # Approved as shown while the agent is stopped; then the arguments change, in the
    # store, before its next tick runs the call.
    assert (await d.client.post(f"{base}/agents/{soa}/stop")).status_code == 200
    approve = {"resolution": "approve", "digest": decision.payload["digest"]}
    assert (await d.client.post(url, json=approve)).status_code == 200
    with d.store.session() as db:
        row = db.get(AttentionRequest, decision.decision_id)
        assert row is not None and row.approved_digest == decision.payload["digest"]
        row.payload = {**row.payload, "arguments": {"value": "not as shown"}}
        db.add(row)
        db.commit()
    assert (await d.client.post(f"{base}/agents/{soa}/start")).status_code == 200

    def answered() -> AgentLedgerTurn | None:
        turns = [t for t in _turns(d, soa) if t.event_id == f"escalation/{decision.decision_id}"]
        return turns[0] if turns else None

    turn = await d.wait_until(answered, "the answer's turn", timeout=90)
    outcome = turn.event_payload["mcpCall"]
    assert outcome["outcome"] == "blocked"
    assert outcome["error"].startswith("approval_digest_mismatch: ")
    assert faults.calls() == []
