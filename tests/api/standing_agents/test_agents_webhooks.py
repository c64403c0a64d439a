"""Signed webhooks that trigger a standing agent (issue 21, item 11), over HTTP with a real
worker: a delivery signed with the Standard Webhooks scheme enqueues its event and the
agent ticks it; the same `webhook-id` delivered twice enqueues once; a bad signature, a
replay older than five minutes, an unknown or deleted webhook are refused; the secret is
shown only at creation."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from standardwebhooks.webhooks import Webhook

from tests.agents_helpers import AgentsFactory


def _signed(
    secret: str, body: dict[str, Any], msg_id: str, at: datetime
) -> tuple[bytes, dict[str, str]]:
    data = json.dumps(body)
    signature = Webhook(secret).sign(msg_id, at, data)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
    return data.encode(), headers


async def test_a_signed_delivery_enqueues_once_and_the_agent_ticks_it(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    created = await d.client.post(
        f"{base}/agents/{soa}/webhooks", json={"kind": "MissionStateChanged"}
    )
    assert created.status_code == 201, created.text
    hook = created.json()
    assert hook["secret"].startswith("whsec_") and hook["kind"] == "MissionStateChanged"
    path = hook["url"].split("://", 1)[1].split("/", 1)[1]
    assert path == f"api/v1/webhooks/{hook['webhookId']}"
    listed = (await d.client.get(f"{base}/agents/{soa}/webhooks")).json()["webhooks"]
    assert [w["webhookId"] for w in listed] == [hook["webhookId"]]
    assert "secret" not in listed[0]
    tenant_wide = (await d.client.get(f"{base}/webhooks")).json()["webhooks"]
    assert [w["webhookId"] for w in tenant_wide] == [hook["webhookId"]]
    # The sender holds no API token: its signature is its credential.
    sender = {k: v for k, v in d.client.headers.items() if k.lower() != "authorization"}
    payload = {"mission": "m-7", "state": "blocked"}
    body, headers = _signed(hook["secret"], payload, "msg_1", datetime.now(UTC))
    url = f"/{path}"
    first = await d.client.post(url, content=body, headers={**sender, **headers})
    assert first.status_code == 202, first.text
    assert first.json()["duplicate"] is False and first.json()["kind"] == "MissionStateChanged"
    # The sender retries (it lost the answer): same webhook-id, enqueued once.
    again = await d.client.post(url, content=body, headers={**sender, **headers})
    assert again.json() == {**first.json(), "duplicate": True}
    turns = await d.wait_until(
        lambda: [t for t in d.turns(soa) if t.event_id.startswith("webhook/")],
        "the webhook event's turn",
    )
    assert len(turns) == 1 and turns[0].event_payload == payload
    # Refused: a bad signature, a replay older than five minutes, a body not an object.
    forged = {**headers, "webhook-signature": "v1,AAAA"}
    bad = await d.client.post(url, content=body, headers={**sender, **forged})
    assert bad.status_code == 401 and bad.json()["code"] == "invalid_signature"
    old_body, old = _signed(
        hook["secret"], payload, "msg_2", datetime.now(UTC) - timedelta(minutes=6)
    )
    stale = await d.client.post(url, content=old_body, headers={**sender, **old})
    assert stale.status_code == 401 and stale.json()["code"] == "invalid_signature"
    data = b"[1, 2]"
    array_headers = {
        "webhook-id": "msg_3",
        "webhook-timestamp": str(int(datetime.now(UTC).timestamp())),
        "webhook-signature": Webhook(hook["secret"]).sign(
            "msg_3", datetime.now(UTC), data.decode()
        ),
    }
    array = await d.client.post(url, content=data, headers={**sender, **array_headers})
    assert array.status_code == 400 and array.json()["code"] == "invalid_payload"
    # Deleted: its deliveries are refused like an unknown one's.
    gone = await d.client.delete(f"{base}/agents/{soa}/webhooks/{hook['webhookId']}")
    assert gone.status_code == 204
    body4, headers4 = _signed(hook["secret"], payload, "msg_4", datetime.now(UTC))
    after = await d.client.post(url, content=body4, headers={**sender, **headers4})
    assert after.status_code == 401
    unknown = await d.client.post(
        "/api/v1/webhooks/wh_" + "1" * 24, content=body4, headers={**sender, **headers4}
    )
    assert unknown.status_code == 401 and unknown.json()["code"] == "invalid_signature"


async def test_a_webhook_kind_is_one_the_agent_takes(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    base = d.base(tenant)
    refused = await d.client.post(
        f"{base}/agents/{soa}/webhooks", json={"kind": "ExternalSignalReceived"}
    )
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_event_kind"
    assert refused.json()["allowed"] == [
        "DecisionResolved",
        "DependencyCompleted",
        "MissionStateChanged",
    ]
    assert (
        await d.client.post(f"{base}/agents/{soa}/webhooks", json={"kind": "OperatorMessage"})
    ).status_code == 400
