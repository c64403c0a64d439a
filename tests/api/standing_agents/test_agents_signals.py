"""The Prompt Engineer's signal path (issue 21, item 5; spec §3.1, §3.9), over HTTP with a
real worker: a redactor signal ensure-creates the call site's PromptRedactor, Paused,
and queues the signal, delivered off; AgentSignalKind is validated; a HumanRequest asks
a human at once; the SOA refuses ExternalSignalReceived."""

from __future__ import annotations

from typing import Any

from runtime.standing_agents.models import AgentEventRow
from tests.agents_helpers import AgentsDaemon, AgentsFactory

SITE = "PromptRedactor:Redact"


def _queued(d: AgentsDaemon, instance_id: str) -> list[AgentEventRow]:
    return [e for e in d.events(instance_id) if e.consumed_at is None]


async def test_a_signal_ensures_a_paused_redactor_bound_to_its_call_site(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.enable(tenant)
    base = d.base(tenant)
    body: dict[str, Any] = {
        "callSite": SITE,
        "signalKind": "NewCouple",
        "payload": {"couple": "c-1"},
        "signalId": "s-1",
    }
    first = await d.client.post(f"{base}/redactor-signals", json=body)
    assert first.status_code == 202, first.text
    raised = first.json()
    assert raised["instanceCreated"] is True and raised["duplicate"] is False
    assert raised["decisionId"] is None
    redactor = raised["instanceId"]
    again = (await d.client.post(f"{base}/redactor-signals", json=body)).json()
    assert (again["instanceId"], again["eventId"]) == (redactor, raised["eventId"])
    assert again["instanceCreated"] is False and again["duplicate"] is True
    other = await d.client.post(
        f"{base}/redactor-signals",
        json={**body, "signalKind": "GuidanceUpdated", "signalId": "s-2"},
    )
    assert other.json()["instanceId"] == redactor  # one redactor per call site
    view = (await d.client.get(f"{base}/agents/{redactor}")).json()
    assert (view["agentType"], view["status"], view["callSite"]) == (
        "PromptRedactor",
        "Paused",
        SITE,
    )
    queued = _queued(d, redactor)
    assert [e.event_kind for e in queued] == ["ExternalSignalReceived"] * 2
    assert queued[0].payload == {"couple": "c-1", "signalKind": "NewCouple", "callSite": SITE}
    assert d.turns(redactor) == []  # delivered off: queued, not ticked
    # Another site, another redactor.
    elsewhere = await d.client.post(
        f"{base}/redactor-signals", json={**body, "callSite": "Session:Default", "signalId": "s-3"}
    )
    assert elsewhere.json()["instanceId"] != redactor


async def test_signal_kinds_and_call_sites_are_validated_and_the_soa_refuses_signals(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    kinds = ["NewCouple", "GuidanceUpdated", "RegressionDetected", "HumanRequest"]
    bad = await d.client.post(
        f"{base}/redactor-signals", json={"callSite": SITE, "signalKind": "Gossip"}
    )
    assert bad.status_code == 400
    assert (bad.json()["code"], bad.json()["allowed"]) == ("invalid_signal_kind", kinds)
    site = await d.client.post(
        f"{base}/redactor-signals", json={"callSite": "Nowhere:Else", "signalKind": "NewCouple"}
    )
    assert site.status_code == 400 and site.json()["code"] == "unknown_call_site"
    assert SITE in site.json()["allowed"]
    refused = await d.client.post(
        f"{base}/agents/{soa}/events",
        json={"kind": "ExternalSignalReceived", "payload": {"signalKind": "NewCouple"}},
    )
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_event_kind"
    assert "ExternalSignalReceived" not in refused.json()["allowed"]
    redactor = (
        await d.client.post(
            f"{base}/redactor-signals", json={"callSite": SITE, "signalKind": "NewCouple"}
        )
    ).json()["instanceId"]
    unkinded = await d.client.post(
        f"{base}/agents/{redactor}/events",
        json={"kind": "ExternalSignalReceived", "payload": {"text": "no kind"}},
    )
    assert unkinded.status_code == 400 and unkinded.json()["code"] == "invalid_signal_kind"
    posted = await d.client.post(
        f"{base}/agents/{redactor}/events",
        json={"kind": "ExternalSignalReceived", "payload": {"signalKind": "RegressionDetected"}},
    )
    assert posted.status_code == 202, posted.text


async def test_a_human_request_asks_a_human_at_once(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.enable(tenant)
    base = d.base(tenant)
    raised = (
        await d.client.post(
            f"{base}/redactor-signals",
            json={
                "callSite": SITE,
                "signalKind": "HumanRequest",
                "payload": {"question": "Is this prompt leaking the customer's name?"},
                "signalId": "ask-1",
            },
        )
    ).json()
    decision = raised["decisionId"]
    assert decision is not None
    listed = (await d.client.get(f"{base}/decisions?status=open")).json()["decisions"]
    [asked] = [x for x in listed if x["decisionId"] == decision]
    assert asked["source"] == "prompt_engineer" and asked["soaInstanceId"] == raised["instanceId"]
    assert asked["body"] == "Is this prompt leaking the customer's name?"
    answer = await d.client.post(
        f"{base}/decisions/{decision}/respond",
        json={"resolution": "yes, redact it", "resolutionNotes": None, "respondedBy": "alice"},
    )
    assert answer.status_code == 200, answer.text
    # The answer waits for the redactor, Paused, beside the signal.
    kinds = [e.event_kind for e in _queued(d, raised["instanceId"])]
    assert kinds == ["ExternalSignalReceived", "OperatorAnsweredEscalation"]
