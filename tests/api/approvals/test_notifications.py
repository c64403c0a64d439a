"""Outbound webhooks (issue 22): signed deliveries of what happens to approvals, at least
once, in order per subject, retried with backoff while the receiver fails, dead-lettered
after the bound and re-sendable. Over HTTP against the API with a real worker and
Temporal dev server; the receiver verifies signatures with `standardwebhooks`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from tests.agents_helpers import AgentsDaemon, AgentsFactory
from tests.fakes.webhook_receiver import Receiver, webhook_receiver

ENDPOINTS = "/api/v1/notification-endpoints"
APPROVALS = ["approval.requested", "approval.resolved"]


async def _register(
    d: AgentsDaemon, receiver: Receiver, types: list[str], **extra: Any
) -> dict[str, Any]:
    response = await d.client.post(
        ENDPOINTS, json={"url": receiver.url, "eventTypes": types, **extra}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    receiver.secret = body["secret"]
    return body


async def _until(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} never happened")


async def test_an_approval_reaches_the_receiver_signed_when_asked_and_when_answered(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    async with webhook_receiver() as receiver:
        endpoint = await _register(d, receiver, APPROVALS)
        assert endpoint["secret"].startswith("whsec_")
        listed = (await d.client.get(ENDPOINTS)).json()["endpoints"]
        assert [e["endpointId"] for e in listed] == [endpoint["endpointId"]]
        assert "secret" not in listed[0]
        decision_id = d.raise_decision(tenant, soa)
        [asked] = await _until(lambda: receiver.events("approval.requested"), "the request")
        assert asked["data"]["approvalId"] == f"decision:{decision_id}"
        assert asked["data"]["tenant"] == tenant and asked["data"]["state"] == "pending"
        assert asked["data"]["link"].endswith(f"/decisions/{decision_id}/respond")
        answered = await d.client.post(
            f"{d.base(tenant)}/decisions/{decision_id}/respond", json={"resolution": "approve"}
        )
        assert answered.status_code == 200
        [done] = await _until(lambda: receiver.events("approval.resolved"), "the answer")
        assert (done["data"]["state"], done["data"]["answeredBy"]) == ("approved", "admin")
        assert receiver.rejected == 0
        # The receiver answered before the worker recorded it: wait for the record.
        deliveries: list[dict[str, Any]] = []
        for _ in range(200):
            deliveries = (
                await d.client.get(f"{ENDPOINTS}/{endpoint['endpointId']}/deliveries")
            ).json()["deliveries"]
            if {x["state"] for x in deliveries} == {"delivered"}:
                break
            await asyncio.sleep(0.05)
        assert {x["state"] for x in deliveries} == {"delivered"}
        assert {x["deliveryId"] for x in deliveries} == {e["webhookId"] for e in receiver.received}


async def test_a_failing_receiver_gets_every_event_afterwards_in_order(
    agents: AgentsFactory,
) -> None:
    d = await agents(notification_retry_base_ms=20, notification_retry_cap_ms=200)
    tenant = d.tenant()
    soa = await d.soa(tenant)
    async with webhook_receiver() as receiver:
        receiver.failing = 5
        await _register(d, receiver, ["approval.requested"])
        decisions = [d.raise_decision(tenant, soa) for _ in range(4)]
        got = await _until(
            lambda: len(receiver.received) == 4 and receiver.received, "every event", 90
        )
        # One subject (the agent): in the order they were asked, each once.
        assert [e["data"]["approvalId"] for e in got] == [f"decision:{x}" for x in decisions]
        assert receiver.requests >= 4 + 5


async def test_a_delivery_dead_after_the_bound_is_listed_and_resent(
    agents: AgentsFactory,
) -> None:
    d = await agents(
        notification_max_attempts=2, notification_retry_base_ms=20, notification_retry_cap_ms=50
    )
    tenant = d.tenant()
    soa = await d.soa(tenant)
    async with webhook_receiver() as receiver:
        receiver.failing = -1  # down for good
        endpoint = await _register(d, receiver, ["approval.requested"], tenant=tenant)
        base = f"{ENDPOINTS}/{endpoint['endpointId']}/deliveries"
        d.raise_decision(tenant, soa)

        async def dead() -> list[dict[str, Any]]:
            body = (await d.client.get(base, params={"state": "dead"})).json()
            return list(body["deliveries"])

        deadline = time.monotonic() + 60
        while not (rows := await dead()):
            assert time.monotonic() < deadline, "the delivery never went dead"
            await asyncio.sleep(0.1)
        [row] = rows
        assert row["attempts"] == 2 and row["lastError"] == "HTTP 500"
        assert receiver.received == []
        again = await d.client.post(f"{base}/{row['deliveryId']}/resend", json={})
        assert (again.status_code, again.json()["state"]) == (202, "pending")
        receiver.failing = 0
        await _until(lambda: receiver.received, "the resent delivery")
        refused = await d.client.post(f"{base}/{row['deliveryId']}/resend", json={})
        assert refused.status_code == 409
        assert refused.json()["code"] == "notification_delivery_not_dead"
        # An endpoint of one tenant gets nothing of another's.
        other = d.tenant()
        d.raise_decision(other, await d.soa(other))
        await asyncio.sleep(0.5)
        assert len(receiver.received) == 1


async def test_endpoints_are_the_administrators_and_refuse_what_they_cannot_reach(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    for body in (
        {"url": "http://169.254.169.254/latest", "eventTypes": ["approval.requested"]},
        {"url": "http://127.0.0.1:9/hook", "eventTypes": ["approval.nothing"]},
        {"url": "http://127.0.0.1:9/hook", "eventTypes": []},
        {"url": "file:///etc/passwd", "eventTypes": ["approval.requested"]},
        {"url": "http://127.0.0.1:9/hook", "eventTypes": ["approval.requested"], "x": 1},
    ):
        refused = await d.client.post(ENDPOINTS, json=body)
        assert refused.status_code == 400, (body, refused.text)
    missing = await d.client.delete(f"{ENDPOINTS}/ep_0000000000000000")
    assert (missing.status_code, missing.json()["code"]) == (
        404,
        "notification_endpoint_not_found",
    )
    tenant = d.tenant()
    await d.soa(tenant)
    issued = await d.client.post(
        f"/api/v1/tenants/{tenant}/tokens", json={"name": "alice", "role": "operator"}
    )
    bearer = {"Authorization": f"Bearer {issued.json()['token']}"}
    assert (await d.client.get(ENDPOINTS, headers=bearer)).status_code == 403
