"""Outbound webhooks' order per subject (issue 22): events owed at one instant, in one
transaction (an approval's request and its device login's), go out in the order owed."""

from __future__ import annotations

from datetime import UTC, datetime

from runtime.notifications import endpoints, outbox
from runtime.store import Store


def test_events_owed_at_one_instant_go_out_in_the_order_owed(store: Store) -> None:
    endpoint = endpoints.create(
        store,
        "https://hooks.example.com/in",
        ["approval.requested", "device_flow.login_required"],
        None,
        None,
    ).endpoint_id
    now = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    owed = []
    with store.engine.begin() as connection:
        for n in range(20):
            for event_type in ("approval.requested", "device_flow.login_required"):
                outbox.enqueue(
                    connection,
                    event_type,
                    key=f"device_login:flow-{n}",
                    subject="device-flow/p",
                    tenant=None,
                    data={"n": n},
                    now=now,
                )
                owed.append(outbox.delivery_id(endpoint, event_type, f"device_login:flow-{n}"))
    sent = []
    with store.engine.begin() as connection:
        # The head of the subject goes first; once delivered, the next one.
        while heads := outbox.due(connection, endpoint, now, 100):
            (head,) = heads
            sent.append(head.delivery_id)
            outbox.delivered(connection, head.delivery_id, now)
    assert sent == owed
