"""Signed webhooks that trigger a standing agent (issue 21, item 11).

Management (strict, bearer): `POST`/`GET .../agents/{id}/webhooks`,
`DELETE .../agents/{id}/webhooks/{webhookId}`, `GET /api/v1/tenants/{tenant}/webhooks`.
Delivery: `POST /api/v1/webhooks/{webhookId}`, authenticated by its Standard Webhooks
signature, not by the API token (the bearer middleware lets it through; a deployment
without a token serves no webhook: 401 `token_required`, as every strict route). See
runtime/standing_agents/webhooks.py.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Path, Request, Response

from api.deps import StoreDep
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.deps import EnabledTenant, InstancePath
from api.standing_agents.models import (
    EventAccepted,
    WebhookBody,
    WebhookCreated,
    WebhookList,
    WebhookView,
)
from api.standing_agents.temporal_calls import WakerDep
from runtime.standing_agents import control, webhooks
from runtime.standing_agents.contracts import AgentType, EventKind
from runtime.standing_agents.models import AgentWebhook
from runtime.timestamps import iso_ms

router = APIRouter(prefix="/api/v1/tenants/{tenant}", route_class=StrictJsonRoute)
delivery = APIRouter(prefix="/api/v1/webhooks")
MUTATION = [Depends(require_configured_token)]
WEBHOOK_ID = r"^wh_[0-9a-f]{24}$"


def _url(request: Request, webhook_id: str) -> str:
    return str(request.url_for("deliver_webhook", webhook_id=webhook_id))


def _view(request: Request, row: AgentWebhook) -> WebhookView:
    return WebhookView(
        webhook_id=row.webhook_id,
        instance_id=row.instance_id,
        kind=row.event_kind,
        url=_url(request, row.webhook_id),
        created_at=iso_ms(row.created_at),
        last_delivery_at=iso_ms(row.last_delivery_at) if row.last_delivery_at else None,
    )


@router.post(
    "/agents/{instance_id}/webhooks",
    status_code=201,
    dependencies=MUTATION,
    responses=errors(400, 401, 403, 404, 409),
)
async def create_webhook(
    body: WebhookBody,
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    request: Request,
) -> WebhookCreated:
    """A trigger URL that enqueues `kind` with the request's JSON body; the secret is
    shown here only."""
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    allowed = webhooks.kinds_for(AgentType(instance.agent_type))
    if body.kind not in allowed:
        raise webhooks.WebhookKindRefused(event_kind=body.kind, allowed=allowed).application_error()
    row = await asyncio.to_thread(
        webhooks.create, store, instance, EventKind(body.kind), datetime.now(UTC)
    )
    view = _view(request, row)
    return WebhookCreated(**view.model_dump(by_alias=False), secret=row.secret)


@router.get("/agents/{instance_id}/webhooks", responses=errors(400, 403, 404))
async def list_agent_webhooks(
    tenant: EnabledTenant, instance_id: InstancePath, store: StoreDep, request: Request
) -> WebhookList:
    await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    rows = await asyncio.to_thread(webhooks.list_for, store, tenant, instance_id)
    return WebhookList(webhooks=[_view(request, r) for r in rows])


@router.get("/webhooks", responses=errors(400, 403))
async def list_tenant_webhooks(
    tenant: EnabledTenant, store: StoreDep, request: Request
) -> WebhookList:
    rows = await asyncio.to_thread(webhooks.list_tenant, store, tenant)
    return WebhookList(webhooks=[_view(request, r) for r in rows])


@router.delete(
    "/agents/{instance_id}/webhooks/{webhook_id}",
    status_code=204,
    dependencies=MUTATION,
    responses=errors(400, 401, 403, 404),
)
async def delete_webhook(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    webhook_id: str = Path(pattern=WEBHOOK_ID),
) -> Response:
    if not await asyncio.to_thread(webhooks.remove, store, tenant, instance_id, webhook_id):
        raise webhooks.WebhookNotFound(webhook_id=webhook_id).application_error()
    return Response(status_code=204)


@delivery.post(
    "/{webhook_id}",
    status_code=202,
    name="deliver_webhook",
    dependencies=MUTATION,
    responses=errors(400, 401, 413),
)
async def deliver_webhook(
    request: Request,
    store: StoreDep,
    waker: WakerDep,
    webhook_id: str = Path(pattern=WEBHOOK_ID),
) -> EventAccepted:
    """A delivery signed with the Standard Webhooks scheme (headers `webhook-id`,
    `webhook-timestamp`, `webhook-signature`); a retry with the same `webhook-id`
    enqueues nothing (`duplicate`)."""
    body = await request.body()
    done = await asyncio.to_thread(
        webhooks.deliver, store, webhook_id, dict(request.headers), body, datetime.now(UTC)
    )
    instance = await asyncio.to_thread(
        control.get_instance, store, done.webhook.tenant, done.webhook.instance_id
    )
    await waker(instance)
    return EventAccepted(
        event_id=done.event.event_id,
        kind=done.event.kind.value,
        sequence_number=done.event.sequence_number,
        duplicate=done.duplicate,
    )
