"""Outbound webhooks' delivery (`notifications.deliver_due`): every delivery the outbox
owes one endpoint and that is due, POSTed in order per subject, signed with the Standard
Webhooks scheme by its reference library, recorded delivered or failed (with its next
attempt) in the store.

At least once: a delivery is recorded delivered after its receiver answered 2xx, so a
worker lost in between sends it again, with the same `webhook-id`, which a receiver
deduplicates on. The URL is the egress rule's (no link-local or metadata address).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook
from temporalio import activity

from runtime.egress_client import egress_client
from runtime.notifications import outbox
from runtime.notifications.contracts import (
    DELIVER_DUE_CONTRACT,
    DeliverResult,
    EndpointRun,
)
from runtime.settings import Settings
from runtime.store import Store

# One pass delivers at most this many rows between two reads of the outbox.
BATCH = 100
TIMEOUT = httpx.Timeout(10.0)
# How long a woken pass waits for the rows its wake announced: 40 reads, 25 ms apart.
ANNOUNCED_POLLS = 40
ANNOUNCED_POLL_S = 0.025


class NotificationActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    def _backoff(self, attempts: int) -> timedelta:
        ms = self.settings.notification_retry_base_ms * 2 ** min(attempts - 1, 30)
        return timedelta(milliseconds=min(ms, self.settings.notification_retry_cap_ms))

    def _endpoint(self, endpoint_id: str) -> Any:
        with self.store.engine.connect() as connection:
            return connection.execute(
                outbox.ENDPOINTS.select().where(
                    outbox.ENDPOINTS.c.endpoint_id == endpoint_id,
                    outbox.ENDPOINTS.c.disabled_at.is_(None),
                )
            ).first()

    def _due(self, endpoint_id: str) -> list[Any]:
        with self.store.engine.connect() as connection:
            return outbox.due(connection, endpoint_id, datetime.now(UTC), BATCH)

    def _record(self, message: str, error: str | None) -> None:
        with self.store.transaction() as db:
            connection = db.connection()
            now = datetime.now(UTC)
            if error is None:
                outbox.delivered(connection, message, now)
            else:
                outbox.failed(
                    connection,
                    message,
                    error,
                    now,
                    max_attempts=self.settings.notification_max_attempts,
                    backoff=self._backoff,
                )

    def _next_due_ms(self, endpoint_id: str) -> int | None:
        with self.store.engine.connect() as connection:
            at = outbox.next_due(connection, endpoint_id)
        if at is None:
            return None
        return max(int((at - datetime.now(UTC)).total_seconds() * 1000), 0)

    async def _announced(self, endpoint_id: str) -> None:
        """A wake is sent while the transaction that wrote its rows is committing: wait,
        briefly, for something to be due (a wake whose rows were delivered already, or
        rolled back, costs this wait once)."""
        for _ in range(ANNOUNCED_POLLS):
            if await asyncio.to_thread(self._due, endpoint_id):
                return
            await asyncio.sleep(ANNOUNCED_POLL_S)

    @DELIVER_DUE_CONTRACT.defn
    async def deliver_due(self, request: EndpointRun) -> DeliverResult:
        endpoint = await asyncio.to_thread(self._endpoint, request.endpoint_id)
        if endpoint is None:
            return DeliverResult(gone=True)
        signer = Webhook(endpoint.secret)
        result = DeliverResult()
        if request.woken:
            await self._announced(request.endpoint_id)
        async with egress_client(timeout=TIMEOUT) as http:
            while rows := await asyncio.to_thread(self._due, request.endpoint_id):
                for row in rows:
                    error = await _post(http, signer, endpoint.url, row)
                    await asyncio.to_thread(self._record, row.delivery_id, error)
                    if error is None:
                        result.delivered += 1
                    else:
                        result.failed += 1
                    activity.heartbeat(result.delivered, result.failed)
        result.next_due_ms = await asyncio.to_thread(self._next_due_ms, request.endpoint_id)
        return result


async def _post(http: httpx.AsyncClient, signer: Webhook, url: str, row: Any) -> str | None:
    """POST one delivery; None when the receiver took it (2xx), else why not."""
    body = json.dumps(row.payload, separators=(",", ":"), sort_keys=True)
    at = datetime.now(UTC)
    headers = {
        "content-type": "application/json",
        "webhook-id": row.delivery_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signer.sign(row.delivery_id, at, body),
    }
    try:
        response = await http.post(url, content=body.encode(), headers=headers)
    except httpx.HTTPError as err:
        return f"{type(err).__name__}: {err}"[:500]
    if 200 <= response.status_code < 300:
        return None
    return f"HTTP {response.status_code}"
