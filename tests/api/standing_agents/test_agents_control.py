"""The control side's edges: disabling a tenant, strict bodies and bounds, one timestamp
format, the reserved SOA registry id, and journal entries written once per control
write, even across a retry (API in process with a real worker and Temporal dev server)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete

from api.standing_agents.temporal_calls import STALE_EVENT_AGE, WakeRetries, stale_instances
from runtime.standing_agents import control, decision_queue, messages
from runtime.standing_agents.agent_journal import DECISION, MESSAGE
from runtime.standing_agents.contracts import (
    EXTERNAL_EVENT_KINDS,
    AgentStatus,
    AgentType,
    AttentionKind,
)
from runtime.store.journal import EventJournal
from runtime.store.models import JournalEvent
from runtime.streams import agent_stream
from tests.agents_helpers import AgentsDaemon, AgentsFactory

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _entries(journal: EventJournal, tenant: str, instance_id: str, type: str) -> list[Any]:
    page = journal.read(agent_stream(tenant, instance_id))
    return [e for e in page.entries if e.type == type]


def _delete_journal(d: AgentsDaemon, tenant: str, instance_id: str) -> None:
    """What a crash between the store commit and the journal append leaves: no entry."""
    with d.store.engine.begin() as connection:
        connection.execute(
            delete(JournalEvent.__table__).where(  # type: ignore[attr-defined]
                JournalEvent.__table__.c.stream == agent_stream(tenant, instance_id)  # type: ignore[attr-defined]
            )
        )


async def test_a_disabled_tenant_can_stop_its_agents_and_enabling_wakes_them(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    # Its first tick over: a tick still running would take the event enqueued below when
    # it ends, and an agent in a tick is not stale.
    await d.wait_until(
        lambda: d.turns(soa) and not d.instance(soa).tick_in_progress, "the first tick's end"
    )
    off = await d.client.put(f"{base}/features/standing-agents", json={"enabled": False})
    assert off.status_code == 200
    # Stop stays reachable: an operator can always stop an agent.
    stopped = await d.client.post(f"{base}/agents/{soa}/stop")
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "Paused"
    for method, path in [
        ("POST", f"/agents/{soa}/start"),
        ("GET", f"/agents/{soa}"),
        ("GET", "/config"),
        ("GET", "/config/CreditEnforcementEnabled"),
    ]:
        refused = await d.client.request(method, base + path)
        assert refused.status_code == 403, (path, refused.text)
        assert refused.json()["code"] == "feature_disabled"
    # A disabled tenant's due events wake nobody.
    d.set_instance(soa, status="Active")
    messages.enqueue_external(
        d.store, tenant, soa, next(iter(EXTERNAL_EVENT_KINDS)), {"text": "waiting"}, "e1"
    )
    later = datetime.now(UTC) + STALE_EVENT_AGE + timedelta(seconds=60)
    assert soa not in {row.instance_id for row in stale_instances(d.store, later)}
    # Enabling again: the tenant's open agents are returned to be woken.
    to_wake = control.set_standing_agents(d.store, d.settings, tenant, True)
    assert soa in {row.instance_id for row in to_wake}
    assert soa in {row.instance_id for row in stale_instances(d.store, later)}


async def test_bodies_are_strict_and_bounded(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    for loose in ("no", 1, "off", "true"):
        answer = await d.client.put(f"{base}/features/standing-agents", json={"enabled": loose})
        assert answer.status_code == 400, (loose, answer.text)
    allowed = sorted(kind.value for kind in EXTERNAL_EVENT_KINDS)
    for kind in ("Nope", "OperatorMessage", "AgentInitialized"):
        answer = await d.client.post(
            f"{base}/agents/{soa}/events", json={"kind": kind, "payload": {}}
        )
        assert answer.status_code == 400
        assert answer.json()["code"] == "invalid_event_kind"
        assert answer.json()["allowed"] == allowed
    big = await d.client.post(
        f"{base}/agents/{soa}/events",
        json={"kind": "ExternalSignalReceived", "payload": {"text": "x" * 70_000}},
    )
    assert big.status_code == 413 and big.json()["code"] == "payload_too_large"
    # curl -d without a Content-Type: a form body, not JSON.
    form = await d.client.post(
        f"{base}/agents/{soa}/messages",
        content=b"text=hello",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 400
    assert "JSON object" in form.json()["error"]
    array = await d.client.post(f"{base}/agents/{soa}/messages", json=["hello"])
    assert array.status_code == 400 and "JSON object" in array.json()["error"]


async def test_timestamps_share_one_format_and_the_soa_id_is_reserved(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    posted = await d.client.post(f"{base}/agents/{soa}/messages", json={"text": "hi"})
    assert posted.status_code == 202
    agent = (await d.client.get(f"{base}/agents/{soa}")).json()
    assert ISO_MS.match(agent["createdAt"]) and ISO_MS.match(agent["worksetDeadline"])
    messages = (await d.client.get(f"{base}/agents/{soa}/messages")).json()["messages"]
    assert all(ISO_MS.match(m["createdAt"]) for m in messages)
    entry = _entries(d.journal, tenant, soa, MESSAGE)[0]
    assert ISO_MS.match(entry.data["data"]["createdAt"])
    registry = (await d.client.get(f"{base}/registry")).json()["agents"]
    assert registry[0]["agentId"] == soa and ISO_MS.match(registry[0]["lastHeartbeatAt"])
    for agent_id in (soa, "soa-mine"):
        shadow = await d.client.post(
            f"{base}/registry", json={"agentId": agent_id, "role": "Worker", "capabilities": []}
        )
        assert shadow.status_code == 409 and shadow.json()["code"] == "agent_id_reserved"


async def test_a_retried_control_call_journals_what_was_lost_and_nothing_twice(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.enable(tenant)
    # A Paused agent without a workflow: only the control side writes its journal here.
    soa = control.create_instance(
        d.store, tenant, AgentType.COMPLIANCE, AgentStatus.PAUSED
    ).instance_id
    row, created = messages.post_message(d.store, d.journal, tenant, soa, "hi", "m-1")
    assert created
    again, created = messages.post_message(d.store, d.journal, tenant, soa, "hi", "m-1")
    assert not created and again.message_id == row.message_id
    assert len(_entries(d.journal, tenant, soa, MESSAGE)) == 1
    decision = d.raise_decision(tenant, soa, AttentionKind.DECISION)
    decision_queue.respond(d.store, d.journal, tenant, decision, "approve", None, "me")
    # The crash: the store has both writes, the journal lost its entries.
    _delete_journal(d, tenant, soa)
    messages.post_message(d.store, d.journal, tenant, soa, "hi", "m-1")
    _, won = decision_queue.respond(d.store, d.journal, tenant, decision, "approve", None, "me")
    assert not won
    assert len(_entries(d.journal, tenant, soa, MESSAGE)) == 1
    assert len(_entries(d.journal, tenant, soa, DECISION)) == 1
    decision_queue.respond(d.store, d.journal, tenant, decision, "approve", None, "me")
    assert len(_entries(d.journal, tenant, soa, DECISION)) == 1
    # One resume per decision, one OperatorMessage per messageId.
    kinds = [row.event_kind for row in d.events(soa)]
    assert kinds.count("OperatorMessage") == 1
    assert kinds.count("OperatorAnsweredEscalation") == 1


async def test_concurrent_answers_commit_one_resolution(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    decision = d.raise_decision(tenant, soa, AttentionKind.DECISION)
    results = await asyncio.gather(
        *(
            asyncio.to_thread(
                decision_queue.respond, d.store, d.journal, tenant, decision, "approve", "ok", "me"
            )
            for _ in range(6)
        )
    )
    assert sum(1 for _, won in results if won) == 1
    assert [row.event_kind for row in d.events(soa)].count("OperatorAnsweredEscalation") == 1


def test_a_failed_wake_is_retried_with_backoff() -> None:
    retries = WakeRetries()
    now = datetime.now(UTC)
    retries.failed("a", now)
    assert retries.due(now) == []
    assert retries.due(now + timedelta(seconds=5)) == ["a"]
    retries.failed("a", now)
    assert retries.due(now + timedelta(seconds=5)) == []
    assert retries.due(now + timedelta(seconds=10)) == ["a"]
    retries.succeeded("a")
    assert retries.due(now + timedelta(days=1)) == []
