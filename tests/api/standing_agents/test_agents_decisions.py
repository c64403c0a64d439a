"""The decision queue, modes by approval, live config and the ledger over HTTP, against
the real StandingAgentWorkflow (worker + Temporal dev server, the scripted model)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlmodel import col, select

from runtime.standing_agents.configs import KNOWN_KEYS
from runtime.standing_agents.contracts import AttentionKind
from runtime.standing_agents.ledger_chain import verify_chain
from runtime.standing_agents.models import AgentEventRow, AgentLedgerTurn
from runtime.standing_agents.tick_budget import settings_budget
from tests.agents_helpers import AgentsDaemon, AgentsFactory


def _resumes(d: AgentsDaemon, decision_id: str) -> list[AgentEventRow]:
    """The OperatorAnsweredEscalation events that answer one decision."""
    with d.store.session() as db:
        rows = db.exec(
            select(AgentEventRow).where(
                col(AgentEventRow.event_kind) == "OperatorAnsweredEscalation"
            )
        ).all()
    return [row for row in rows if row.payload.get("decisionId") == decision_id]


def _turns(d: AgentsDaemon, instance_id: str, kind: str | None = None) -> list[AgentLedgerTurn]:
    with d.store.session() as db:
        statement = select(AgentLedgerTurn).where(col(AgentLedgerTurn.instance_id) == instance_id)
        if kind is not None:
            statement = statement.where(col(AgentLedgerTurn.event_kind) == kind)
        return list(db.exec(statement).all())


async def test_ten_concurrent_identical_answers_resume_the_agent_once(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    decision_id = d.raise_decision(tenant, soa)
    base = d.base(tenant)
    listed = (await d.client.get(f"{base}/decisions", params={"status": "open"})).json()
    assert [x["decisionId"] for x in listed["decisions"]] == [decision_id]
    assert listed["decisions"][0]["soaInstanceId"] == soa
    answer = {"resolution": "approve", "resolutionNotes": "go", "respondedBy": "ops"}
    url = f"{base}/decisions/{decision_id}/respond"
    responses = await asyncio.gather(*(d.client.post(url, json=answer) for _ in range(10)))
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    bodies = {json.dumps(r.json(), sort_keys=True) for r in responses}
    assert len(bodies) == 1
    body = responses[0].json()
    assert (body["status"], body["resolution"], body["resolutionNotes"]) == (
        "resolved",
        "approve",
        "go",
    )
    resumes = _resumes(d, decision_id)
    assert len(resumes) == 1
    assert resumes[0].event_id == f"escalation/{decision_id}"
    assert resumes[0].payload == {
        "decisionId": decision_id,
        "resolution": "approve",
        "resolutionNotes": "go",
    }
    # The agent resumes once: one ledger turn for the answer.
    await d.wait_until(
        lambda: _turns(d, soa, "OperatorAnsweredEscalation"), "the resume turn", timeout=60
    )
    assert len(_turns(d, soa, "OperatorAnsweredEscalation")) == 1
    again = await d.client.post(url, json=answer)
    assert again.status_code == 200
    different = await d.client.post(url, json={**answer, "resolution": "reject"})
    assert different.status_code == 409
    assert different.json()["code"] == "decision_already_resolved"
    resolved = (await d.client.get(f"{base}/decisions", params={"status": "resolved"})).json()
    assert [x["decisionId"] for x in resolved["decisions"]] == [decision_id]
    assert (await d.client.get(f"{base}/decisions", params={"status": "open"})).json() == {
        "decisions": []
    }
    missing = await d.client.post(f"{base}/decisions/nope/respond", json=answer)
    assert missing.status_code == 404
    assert missing.json()["code"] == "decision_not_found"


async def test_an_approved_mode_change_applies_once_with_source_approval(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    approved = d.raise_decision(
        tenant, soa, AttentionKind.MODE_CHANGE, {"mode": "Incident", "reason": "errors"}
    )
    rejected = d.raise_decision(
        tenant, soa, AttentionKind.MODE_CHANGE, {"mode": "Idle", "reason": "quiet"}
    )
    answer: dict[str, Any] = {"resolution": "approve", "respondedBy": "lead"}
    responses = await asyncio.gather(
        *(d.client.post(f"{base}/decisions/{approved}/respond", json=answer) for _ in range(5))
    )
    assert {r.status_code for r in responses} == {200}
    no = await d.client.post(f"{base}/decisions/{rejected}/respond", json={"resolution": "reject"})
    assert no.status_code == 200
    assert d.instance(soa).active_mode == "Incident"
    changes = (await d.client.get(f"{base}/agents/{soa}/mode-changes")).json()["changes"]
    assert [(c["from"], c["to"], c["source"], c["actor"], c["decisionId"]) for c in changes] == [
        ("Strategic", "Incident", "approval", "lead", approved)
    ]


async def test_a_stuck_request_of_a_closed_agent_enqueues_nothing(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    await d.client.post(f"{d.base(tenant)}/agents/{soa}/stop")
    d.set_instance(soa, status="Closed")
    stuck = d.raise_decision(tenant, soa, AttentionKind.STUCK)
    answered = await d.client.post(
        f"{d.base(tenant)}/decisions/{stuck}/respond", json={"resolution": "restart later"}
    )
    assert answered.status_code == 200
    assert _resumes(d, stuck) == []


async def test_config_is_validated_per_key(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    url = f"{d.base(tenant)}/config/AgentDispatcher:TickMaxToolCalls"
    # Like every agent route, a disabled tenant's config answers 403 (writes included).
    for refused in (await d.client.get(url), await d.client.put(url, json={"value": 3})):
        assert refused.status_code == 403 and refused.json()["code"] == "feature_disabled"
    await d.enable(tenant)
    unset = (await d.client.get(url)).json()
    # Unset: the value in force is the settings layer's, else the code default.
    assert unset["value"] is None
    assert unset["effective"] == settings_budget(d.settings).max_tool_calls
    put = await d.client.put(url, json={"value": 12})
    assert put.status_code == 200, put.text
    assert put.json()["value"] == 12 and put.json()["effective"] == 12
    assert (await d.client.get(url)).json()["value"] == 12
    bad = await d.client.put(url, json={"value": "many"})
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid_config_value"
    huge = await d.client.put(url, json={"value": 10_001})
    assert huge.status_code == 400 and "10,000" in huge.json()["error"]
    listed = (await d.client.get(f"{d.base(tenant)}/config")).json()["configs"]
    assert {entry["key"] for entry in listed} == set(KNOWN_KEYS)
    by_key = {entry["key"]: entry for entry in listed}
    assert by_key["AgentDispatcher:TickMaxToolCalls"]["effective"] == 12
    assert by_key["CreditEnforcementEnabled"]["value"] is None
    assert by_key["CreditEnforcementEnabled"]["effective"] is d.settings.credit_enforcement_enabled
    rules = [{"id": "no-prod", "pattern": "prod", "tools": ["soa_propose_task"]}]
    constitution = await d.client.put(
        f"{d.base(tenant)}/config/constitution.rules", json={"value": rules}
    )
    assert constitution.status_code == 200, constitution.text
    broken = await d.client.put(
        f"{d.base(tenant)}/config/constitution.rules",
        json={"value": [{"id": "x", "pattern": "(", "tools": []}]},
    )
    assert broken.status_code == 400
    unknown = await d.client.put(f"{d.base(tenant)}/config/Nope", json={"value": 1})
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "unknown_config_key"


async def test_the_ledger_and_its_export_verify(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = f"{d.base(tenant)}/agents/{soa}"
    await d.client.post(f"{base}/messages", json={"text": "status report please"})

    def two_turns() -> bool:
        kinds = [t.event_kind for t in _turns(d, soa)]
        return "AgentInitialized" in kinds and "OperatorMessage" in kinds

    await d.wait_until(two_turns, "the greeting and the answer turns")
    turns = (await d.client.get(f"{base}/ledger")).json()["turns"]
    assert turns[0]["eventKind"] == "AgentInitialized"
    assert turns[0]["prevHash"] is None
    for field in (
        "seq",
        "decisionKind",
        "decision",
        "planInputHash",
        "llmCallId",
        "servedModel",
        "costUsd",
        "createdAt",
        "hash",
    ):
        assert field in turns[0]
    page = (await d.client.get(f"{base}/ledger", params={"after": turns[0]["seq"]})).json()
    assert page["turns"][0]["seq"] == turns[1]["seq"]
    export = await d.client.get(f"{base}/ledger/export")
    assert export.status_code == 200
    assert export.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in export.text.splitlines() if line]
    assert len(lines) >= 2
    verdict = verify_chain(lines)
    assert verdict.ok, verdict
    tampered = [dict(lines[0], costUsd=99.0), *lines[1:]]
    assert not verify_chain(tampered).ok
    messages = (await d.client.get(f"{base}/messages")).json()["messages"]
    assert {m["direction"] for m in messages} == {"operator", "agent"}
    calls = (await d.client.get(f"{base}/llm-calls")).json()["calls"]
    assert calls and all(c["outcome"] for c in calls)
