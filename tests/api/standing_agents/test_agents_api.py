"""Standing-agent routes over HTTP: feature gate, strict mutation gate, instances, messages,
events, modes, registry, SSE; API in process with a real worker and Temporal dev server."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from activities.standing_agents.scripted_model import GREETING
from runtime.standing_agents.contracts import AgentStatus, EventKind
from runtime.standing_agents.control import soa_instance_id
from runtime.standing_agents.models import RegistryEntry
from tests.agents_helpers import AgentsFactory, served
from tests.conftest import free_port


async def test_agent_routes_of_a_disabled_tenant_answer_403(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    base = d.base(tenant)
    for method, path in [
        ("GET", "/agents"),
        ("POST", "/agents"),
        ("GET", "/agents/abc"),
        ("POST", "/agents/abc/messages"),
        ("GET", "/decisions"),
        ("GET", "/registry"),
    ]:
        body = {"agentType": "Soa"} if path == "/agents" and method == "POST" else {"text": "x"}
        response = await d.client.request(
            method, base + path, json=body if method == "POST" else None
        )
        assert response.status_code == 403, (method, path, response.text)
        assert response.json()["code"] == "feature_disabled"
    state = (await d.client.get(f"{base}/features/standing-agents")).json()
    assert state == {
        "tenant": tenant,
        "feature": "standing-agents",
        "enabled": False,
        "soaInstanceId": None,
        "deploymentEnabled": True,
    }


async def test_mutations_need_a_configured_token(agents: AgentsFactory) -> None:
    d = await agents(token=None)
    tenant = d.tenant()
    base = d.base(tenant)
    for method, path, body in [
        ("PUT", "/features/standing-agents", {"enabled": True}),
        ("POST", "/agents", {"agentType": "Compliance"}),
        ("POST", "/agents/x/start", None),
        ("POST", "/agents/x/stop", None),
        ("POST", "/agents/x/reset", None),
        ("POST", "/agents/x/messages", {"text": "hi"}),
        ("POST", "/agents/x/events", {"kind": "MissionStateChanged", "payload": {}}),
        ("POST", "/agents/x/mode", {"mode": "Incident"}),
        ("POST", "/decisions/x/respond", {"resolution": "approve"}),
        ("POST", "/registry", {"agentId": "a", "role": "Developer", "capabilities": []}),
        ("POST", "/registry/a/heartbeat", None),
        ("PUT", "/config/AgentDispatcher:TickMaxTurns", {"value": 3}),
    ]:
        response = await d.client.request(method, base + path, json=body)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["code"] == "token_required"
    # Reads stay open on a tokenless loopback daemon.
    assert (await d.client.get(f"{base}/features/standing-agents")).status_code == 200


async def test_enabling_bootstraps_the_tenant_soa(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    state = await d.enable(tenant)
    soa = state["soaInstanceId"]
    assert soa == soa_instance_id(tenant)
    again = await d.enable(tenant)  # idempotent: the same singleton
    assert again["soaInstanceId"] == soa
    listed = (await d.client.get(f"{d.base(tenant)}/agents")).json()["agents"]
    assert [agent["instanceId"] for agent in listed] == [soa]
    agent = (await d.client.get(f"{d.base(tenant)}/agents/{soa}")).json()
    assert agent["status"] == "Active"
    assert agent["agentType"] == "Soa"
    assert agent["activeMode"] == "Strategic"
    assert agent["foundational"] is True
    assert agent["workflowId"] == f"agent/{tenant}/{soa}"
    for field in ("worksetDeadline", "consecutiveIdleTicks", "consecutiveBlockedTurns"):
        assert field in agent
    assert "nextTickAt" in agent
    kinds = [row.event_kind for row in d.events(soa)]
    assert kinds[0] == EventKind.AGENT_INITIALIZED.value
    assert len([k for k in kinds if k == EventKind.AGENT_INITIALIZED.value]) == 1


async def test_bootstrap_paused_when_not_idle_by_default(agents: AgentsFactory) -> None:
    d = await agents(standing_agents_idle_by_default=False)
    tenant = d.tenant()
    soa = await d.soa(tenant)
    assert d.instance(soa).status == AgentStatus.PAUSED.value
    assert d.events(soa) == []


async def test_create_start_stop(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.soa(tenant)
    base = d.base(tenant)
    second = await d.client.post(f"{base}/agents", json={"agentType": "Soa"})
    assert second.status_code == 409
    assert second.json()["code"] == "soa_already_exists"
    bad = await d.client.post(f"{base}/agents", json={"agentType": "Nope"})
    assert bad.status_code == 400
    created = await d.client.post(f"{base}/agents", json={"agentType": "Compliance"})
    assert created.status_code == 201, created.text
    agent = created.json()
    iid = agent["instanceId"]
    assert (agent["status"], agent["activeMode"]) == ("Paused", "Cadence")
    started = await d.client.post(f"{base}/agents/{iid}/start")
    assert started.json()["status"] == "Active"

    def seeds() -> int:
        return [r.event_kind for r in d.events(iid)].count("AgentInitialized")

    assert seeds() == 1
    again = await d.client.post(f"{base}/agents/{iid}/start")  # already Active: no new seed
    assert again.json()["status"] == "Active"
    assert seeds() == 1
    stopped = await d.client.post(f"{base}/agents/{iid}/stop")
    assert stopped.json()["status"] == "Paused"
    d.set_instance(iid, status="Closed", consecutive_blocked_turns=3)
    reopened = (await d.client.post(f"{base}/agents/{iid}/start")).json()
    assert (reopened["status"], reopened["consecutiveBlockedTurns"]) == ("Active", 0)
    unknown = await d.client.post(f"{base}/agents/nope/start")
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "agent_not_found"
    assert (await d.client.get(f"{base}/agents/bad%20id")).status_code == 400


async def test_an_agent_of_another_tenant_is_404(agents: AgentsFactory) -> None:
    d = await agents()
    one, two = d.tenant(), d.tenant()
    soa_one = await d.soa(one)
    await d.enable(two)
    response = await d.client.get(f"{d.base(two)}/agents/{soa_one}")
    assert response.status_code == 404


async def test_reset_refused_while_a_tick_runs(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    # Quiesce the real workflow (a Paused agent begins no tick), let a running tick end,
    # then hold the tick lease as the workflow's begin-tick activity does.
    await d.client.post(f"{d.base(tenant)}/agents/{soa}/stop")
    await d.wait_until(lambda: not d.instance(soa).tick_in_progress, "the tick to end")
    d.set_instance(soa, tick_in_progress=True)
    refused = await d.client.post(f"{d.base(tenant)}/agents/{soa}/reset")
    assert refused.status_code == 409
    assert refused.json()["code"] == "tick_in_progress"
    assert d.instance(soa).generation == 0
    d.set_instance(soa, tick_in_progress=False, consecutive_idle_ticks=7)
    reset = await d.client.post(f"{d.base(tenant)}/agents/{soa}/reset")
    assert reset.status_code == 200, reset.text
    body = reset.json()
    assert (body["generation"], body["consecutiveIdleTicks"], body["foundational"]) == (1, 0, True)
    events = d.events(soa)
    # Generation 0 is drained; generation 1 starts with its own AgentInitialized.
    assert all(r.consumed_at is not None for r in events if r.generation == 0)
    fresh = [r.event_kind for r in events if r.generation == 1]
    assert fresh.count("AgentInitialized") == 1


async def test_messages_transcript_and_retry(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    url = f"{d.base(tenant)}/agents/{soa}/messages"
    posted = await d.client.post(url, json={"text": "hello agent", "messageId": "m-1"})
    assert posted.status_code == 202, posted.text
    assert posted.json() == {"messageId": "m-1", "duplicate": False}
    retried = await d.client.post(url, json={"text": "hello agent", "messageId": "m-1"})
    assert retried.json() == {"messageId": "m-1", "duplicate": True}
    messages = (await d.client.get(url)).json()["messages"]
    operator = [m for m in messages if m["direction"] == "operator"]
    assert [(m["messageId"], m["text"]) for m in operator] == [("m-1", "hello agent")]
    queued = [r for r in d.events(soa) if r.event_kind == "OperatorMessage"]
    assert len(queued) == 1
    assert queued[0].payload == {"messageId": "m-1", "text": "hello agent"}
    for bad in ({}, {"text": ""}, {"text": "x", "extra": 1}, {"text": 5}):
        response = await d.client.post(url, json=bad)
        assert response.status_code == 400, (bad, response.text)


async def test_external_events(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    url = f"{d.base(tenant)}/agents/{soa}/events"
    for kind in ("MissionStateChanged", "DecisionResolved", "DependencyCompleted"):
        response = await d.client.post(url, json={"kind": kind, "payload": {"n": 1}})
        assert response.status_code == 202, response.text
    signal = {"kind": "ExternalSignalReceived", "payload": {"signalKind": "HumanRequest"}}
    # The SOA never receives a signal (spec §3.1, issue 21 item 5): a Compliance agent does.
    refused_soa = await d.client.post(url, json={**signal, "eventId": "sig-1"})
    assert refused_soa.status_code == 400, refused_soa.text
    created = await d.client.post(f"{d.base(tenant)}/agents", json={"agentType": "Compliance"})
    assert created.status_code in (200, 201), created.text
    other = f"{d.base(tenant)}/agents/{created.json()['instanceId']}/events"
    first = await d.client.post(other, json={**signal, "eventId": "sig-1"})
    second = await d.client.post(other, json={**signal, "eventId": "sig-1"})
    assert first.json()["eventId"] == second.json()["eventId"]
    assert second.json()["duplicate"] is True
    for kind in ("OperatorMessage", "AgentTick", "AgentInitialized", "Whatever"):
        refused = await d.client.post(url, json={"kind": kind, "payload": {}})
        assert refused.status_code == 400, (kind, refused.text)
    assert "ExternalSignalReceived" not in [r.event_kind for r in d.events(soa)]
    kinds = [r.event_kind for r in d.events(created.json()["instanceId"])]
    assert kinds.count("ExternalSignalReceived") == 1


async def test_mode_change_from_the_ui_is_audited(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = f"{d.base(tenant)}/agents/{soa}"
    unknown = await d.client.post(f"{base}/mode", json={"mode": "Research"})
    assert unknown.status_code == 400
    body = unknown.json()
    assert body["code"] == "unknown_mode"
    assert set(body["allowed"]) == {
        "Strategic",
        "Incident",
        "Dialogue",
        "Housekeeping",
        "Idle",
        "Discovery",
    }
    changed = await d.client.post(f"{base}/mode", json={"mode": "Incident", "actor": "ops"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["activeMode"] == "Incident"
    assert d.instance(soa).active_mode == "Incident"
    changes = (await d.client.get(f"{base}/mode-changes")).json()["changes"]
    assert [(c["from"], c["to"], c["source"], c["actor"]) for c in changes] == [
        ("Strategic", "Incident", "ui", "ops")
    ]
    stream = d.journal.read(f"agent/{tenant}/{soa}").entries
    assert "agent.mode_changed" in [entry.type for entry in stream]


async def test_registry_ttl_isolation_and_the_soa(agents: AgentsFactory) -> None:
    d = await agents()
    one, two = d.tenant(), d.tenant()
    soa = await d.soa(one)
    await d.enable(two)
    url = f"{d.base(one)}/registry"
    created = await d.client.post(
        url,
        json={
            "agentId": "coder-1",
            "role": "Developer",
            "capabilities": ["python", "review"],
            "endpoint": "http://127.0.0.1:9/hook",
        },
    )
    assert created.status_code == 201, created.text
    listed = (await d.client.get(url)).json()["agents"]
    assert [a["agentId"] for a in listed] == [soa, "coder-1"]
    assert listed[0]["role"] == "Coordinator"
    assert [
        a["agentId"]
        for a in (await d.client.get(url, params={"capability": "python"})).json()["agents"]
    ] == ["coder-1"]
    # Strictly per tenant: the other tenant sees only its own SOA.
    other = (await d.client.get(f"{d.base(two)}/registry")).json()["agents"]
    assert [a["agentId"] for a in other] == [soa_instance_id(two)]
    assert (await d.client.post(f"{d.base(two)}/registry/coder-1/heartbeat")).status_code == 404
    beat = await d.client.post(f"{url}/coder-1/heartbeat")
    assert beat.status_code == 200
    # Age the entry past the TTL (rows, not clocks: tests never wait on timing).
    with d.store.session() as db:
        row = db.get(RegistryEntry, (one, "coder-1"))
        assert row is not None
        row.last_heartbeat_at = datetime.now(UTC) - timedelta(
            milliseconds=d.settings.registry_ttl_ms + 1000
        )
        db.add(row)
        db.commit()
    assert (await d.client.post(f"{url}/coder-1/heartbeat")).status_code == 404
    assert [a["agentId"] for a in (await d.client.get(url)).json()["agents"]] == [soa]
    bad = await d.client.post(url, json={"agentId": "x", "role": "Dev", "capabilities": [""]})
    assert bad.status_code == 400


async def test_llm_calls_and_empty_ledger(agents: AgentsFactory) -> None:
    from runtime.llm.models import LlmCallAttempt

    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    now = datetime.now(UTC)
    with d.store.session() as db:
        for ordinal, outcome in enumerate(["rate_limited", "ok"]):
            db.add(
                LlmCallAttempt(
                    attempt_id=f"a-{uuid.uuid4().hex}",
                    call_id="c-1",
                    ordinal=ordinal,
                    tenant=tenant,
                    owner_kind="agent",
                    owner_id=soa,
                    site="Agent:Planning",
                    provider="openai",
                    requested_model="gpt-x",
                    served_model=None if outcome != "ok" else "gpt-x-2",
                    outcome=outcome,
                    tokens_in=10,
                    tokens_out=5 if outcome == "ok" else 0,
                    cost_usd=0.01 if outcome == "ok" else 0.0,
                    price_source="default" if outcome == "ok" else None,
                    usage_source="estimated" if outcome == "ok" else None,
                    duration_ms=120,
                    created_at=now + timedelta(seconds=ordinal),
                )
            )
        db.commit()
    calls = (await d.client.get(f"{d.base(tenant)}/agents/{soa}/llm-calls")).json()["calls"]
    assert [(c["outcome"], c["servedModel"]) for c in calls] == [
        ("rate_limited", None),
        ("ok", "gpt-x-2"),
    ]
    assert calls[1]["requestedModel"] == "gpt-x"
    assert calls[1]["tokensOut"] == 5
    assert calls[1]["durationMs"] == 120
    assert (calls[1]["priceSource"], calls[1]["usageSource"]) == ("default", "estimated")
    assert (calls[0]["priceSource"], calls[0]["usageSource"]) == (None, None)
    ledger = await d.client.get(f"{d.base(tenant)}/agents/{soa}/ledger", params={"limit": 0})
    assert ledger.status_code == 400


async def test_the_stream_replays_the_agent_journal(agents: AgentsFactory) -> None:
    d = await agents(port=free_port())
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = f"{d.base(tenant)}/agents/{soa}"
    await d.client.post(f"{base}/messages", json={"text": "streamed hello"})
    frames: list[dict[str, Any]] = []

    async def read(client: httpx.AsyncClient) -> None:
        async with client.stream(
            "GET", f"{base}/stream", headers={"Last-Event-ID": "0"}
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            event = None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: ") and event == "agent.message":
                    frames.append(json.loads(line[len("data: ") :]))
                    if frames[-1]["data"]["text"] == "streamed hello":
                        return

    async with served(d) as client:
        await asyncio.wait_for(read(client), 30)
    # The operator's message, replayed from the start of the journal. The agent's own
    # greeting (its first tick, which runs on its own) may come before it or after it.
    texts = [frame["data"]["text"] for frame in frames]
    assert texts[-1] == "streamed hello"
    assert set(texts[:-1]) <= {GREETING}
    assert (await d.client.get(f"{d.base(tenant)}/agents/nope/stream")).status_code == 404


async def test_bad_input_is_a_clear_400(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    cases: list[tuple[str, str, Any]] = [
        ("PUT", "/features/standing-agents", {"enabled": "maybe"}),
        ("PUT", "/features/standing-agents", {}),
        ("POST", "/agents", {}),
        ("POST", f"/agents/{soa}/mode", {"mode": ""}),
        ("POST", f"/agents/{soa}/events", {"kind": "MissionStateChanged", "payload": []}),
        ("GET", f"/agents/{soa}/ledger?after=abc", None),
        ("GET", "/decisions?status=sideways", None),
    ]
    for method, path, body in cases:
        response = await d.client.request(method, base + path, json=body)
        assert response.status_code == 400, (method, path, response.text)
        assert "error" in response.json()
    raw = await d.client.post(
        f"{base}/agents/{soa}/messages",
        content=b'{"text": NaN}',
        headers={"Content-Type": "application/json"},
    )
    assert raw.status_code == 400
    bad_tenant = await d.client.get("/api/v1/tenants/-bad-/agents")
    assert bad_tenant.status_code == 400
