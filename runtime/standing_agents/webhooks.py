"""Signed webhooks that trigger a standing agent (issue 21, item 11, its webhook half).

A webhook is a URL per agent and trigger (`POST /api/v1/webhooks/{webhookId}`) that
enqueues one event of the kind it was created for (`MissionStateChanged`,
`DecisionResolved`, `DependencyCompleted`, or `ExternalSignalReceived` for an agent that
takes it) with the request's JSON object as the payload. A sender authenticates with the
Standard Webhooks scheme (the `standardwebhooks` package): HMAC-SHA256 over
`{webhook-id}.{webhook-timestamp}.{body}` under the webhook's secret (`whsec_...`, shown
once, at creation), a timestamp more than five minutes old or ahead refused. The event's
id derives from the `webhook-id` header, so a retried delivery (same id, a sender's
retry after a lost answer) is enqueued once.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from sqlmodel import col, delete, select
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from runtime.failures import WireError
from runtime.notifications.outbox import new_secret
from runtime.standing_agents import queue
from runtime.standing_agents.contracts import (
    EXTERNAL_EVENT_KINDS,
    AgentEvent,
    AgentType,
    EventKind,
)
from runtime.standing_agents.models import AgentInstance, AgentWebhook
from runtime.standing_agents.signals import parse_signal_kind
from runtime.store.engine import Store

ID_PREFIX: Final = "wh_"
MAX_PER_AGENT: Final = 20
# The sender's message id becomes part of the event id (at most 200 characters).
MESSAGE_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


def kinds_for(agent_type: AgentType) -> list[str]:
    """The kinds a webhook of an agent of `agent_type` may enqueue (a SOA takes no signal)."""
    kinds = sorted(k.value for k in EXTERNAL_EVENT_KINDS)
    if agent_type is AgentType.SOA:
        kinds.remove(EventKind.EXTERNAL_SIGNAL_RECEIVED.value)
    return kinds


def create(store: Store, instance: AgentInstance, kind: EventKind, now: datetime) -> AgentWebhook:
    """A new webhook of `instance` for `kind` (checked by the caller against `kinds_for`).

    Raises:
        ApplicationError: `too_many_webhooks` (409), the agent has MAX_PER_AGENT already.
    """
    row = AgentWebhook(
        webhook_id=ID_PREFIX + secrets.token_hex(12),
        tenant=instance.tenant,
        instance_id=instance.instance_id,
        event_kind=kind.value,
        secret=new_secret(),
        created_at=now,
    )
    with store.transaction() as db:
        if len(_of(db, instance.tenant, instance.instance_id)) >= MAX_PER_AGENT:
            raise TooManyWebhooksRefusal().application_error()
        db.add(row)
        db.flush()
        db.refresh(row)
    return row


def _of(db: Any, tenant: str, instance_id: str) -> list[AgentWebhook]:
    return list(
        db.exec(
            select(AgentWebhook)
            .where(
                col(AgentWebhook.tenant) == tenant,
                col(AgentWebhook.instance_id) == instance_id,
            )
            .order_by(col(AgentWebhook.created_at), col(AgentWebhook.webhook_id))
        ).all()
    )


def list_for(store: Store, tenant: str, instance_id: str) -> list[AgentWebhook]:
    with store.session() as db:
        return _of(db, tenant, instance_id)


def list_tenant(store: Store, tenant: str) -> list[AgentWebhook]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentWebhook)
                .where(col(AgentWebhook.tenant) == tenant)
                .order_by(col(AgentWebhook.created_at), col(AgentWebhook.webhook_id))
            ).all()
        )


def remove(store: Store, tenant: str, instance_id: str, webhook_id: str) -> bool:
    with store.transaction() as db:
        result = db.exec(
            delete(AgentWebhook).where(
                col(AgentWebhook.webhook_id) == webhook_id,
                col(AgentWebhook.tenant) == tenant,
                col(AgentWebhook.instance_id) == instance_id,
            )
        )
    return bool(result.rowcount)


@dataclass(frozen=True)
class Delivered:
    webhook: AgentWebhook
    event: AgentEvent
    duplicate: bool


def deliver(
    store: Store, webhook_id: str, headers: dict[str, str], body: bytes, now: datetime
) -> Delivered:
    """Verify a delivery and enqueue its event, once per `webhook-id`.

    Raises:
        ApplicationError: `webhook_delivery_refused`: an unknown webhook or a bad signature
            (401, alike: an id is not
            probed), a stale or future timestamp (401), a body that is not a JSON object
            or a bad signal (400).
    """
    with store.session() as db:
        hook = db.get(AgentWebhook, webhook_id) if webhook_id.startswith(ID_PREFIX) else None
    if hook is None:
        raise WebhookDeliveryRefused(
            status=401, code="invalid_signature", message="The webhook signature is not valid"
        ).application_error()
    try:
        Webhook(hook.secret).verify(body, headers, json_parse=False)
    except (WebhookVerificationError, ValueError, UnicodeDecodeError) as err:
        # standardwebhooks' own message says whether the timestamp or the signature failed.
        raise WebhookDeliveryRefused(
            status=401,
            code="invalid_signature",
            message=f"The webhook signature is not valid: {err}",
        ).application_error() from None
    message_id = {k.lower(): v for k, v in headers.items()}.get("webhook-id", "")
    if not MESSAGE_ID.match(message_id):
        raise WebhookDeliveryRefused(
            status=400,
            code="invalid_webhook_id",
            message="webhook-id must be 1-100 of [A-Za-z0-9._:-]",
        ).application_error()
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        payload = None
    if not isinstance(payload, dict):
        raise WebhookDeliveryRefused(
            status=400, code="invalid_payload", message="The webhook body must be a JSON object"
        ).application_error()
    kind = EventKind(hook.event_kind)
    if kind is EventKind.EXTERNAL_SIGNAL_RECEIVED and parse_signal_kind(payload) is None:
        raise WebhookDeliveryRefused(
            status=400,
            code="invalid_signal_kind",
            message="payload.signalKind is not an AgentSignalKind",
        ).application_error()
    with store.session() as db:
        instance = db.get(AgentInstance, hook.instance_id)
    if instance is None:
        raise WebhookDeliveryRefused(
            status=401, code="invalid_signature", message="The webhook signature is not valid"
        ).application_error()
    event, created = queue.enqueue(
        store,
        tenant=hook.tenant,
        instance_id=hook.instance_id,
        kind=kind,
        payload=payload,
        event_id=f"webhook/{hook.webhook_id}/{message_id}",
        generation=instance.generation,
    )
    # Its own unit of work, after the event's (`queue.enqueue` committed it).
    with store.transaction() as db:
        row = db.get(AgentWebhook, webhook_id)
        if row is not None:
            row.last_delivery_at = now
            db.add(row)
    return Delivered(hook, event, duplicate=not created)


class WebhookDeliveryRefused(WireError):
    """A delivery not taken (`deliver`): `status` 401 (unknown webhook, bad or stale
    signature: alike) or 400 (bad webhook-id, body, signal)."""

    kind: Literal["webhook_delivery_refused"] = "webhook_delivery_refused"
    status: Literal[400, 401]
    code: str
    message: str

    @property
    def http_status(self) -> int:
        return self.status

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code}


class WebhookKindRefused(WireError):
    """A webhook for a kind the agent does not take: 400 `invalid_event_kind`."""

    kind: Literal["webhook_kind_refused"] = "webhook_kind_refused"
    event_kind: str
    allowed: list[str]

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'A webhook of this agent cannot enqueue "{self.event_kind}"',
            "code": "invalid_event_kind",
            "allowed": self.allowed,
        }


class TooManyWebhooksRefusal(WireError):
    kind: Literal["too_many_webhooks"] = "too_many_webhooks"

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"An agent has at most {MAX_PER_AGENT} webhooks",
            "code": "too_many_webhooks",
            "limit": MAX_PER_AGENT,
        }


class WebhookNotFound(WireError):
    kind: Literal["webhook_not_found"] = "webhook_not_found"
    webhook_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {"error": f'No webhook "{self.webhook_id}"', "code": "webhook_not_found"}
