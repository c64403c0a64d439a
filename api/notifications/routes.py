"""Outbound webhooks: endpoints an operator registers, and what was delivered to them.

- `POST /api/v1/notification-endpoints`: register a receiver (its URL, the event types it
  takes, optionally one tenant's events only); the answer shows its signing secret once;
- `GET /api/v1/notification-endpoints`, `DELETE .../{endpointId}`;
- `GET .../{endpointId}/deliveries?state=pending|delivered|dead`: what was sent, what is
  waiting for its next attempt, and the dead-letter list;
- `POST .../{endpointId}/deliveries/{deliveryId}/resend`: a dead delivery owed again.

The deployment token's (strict; a tenant token reaches none of it). Each delivery is
signed with the Standard Webhooks scheme (README, "Webhooks").
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import Field

from api.deps import TENANT_PATTERN, StoreDep
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from runtime.notifications import endpoints
from runtime.notifications.models import NotificationDelivery, NotificationEndpoint
from runtime.notifications.outbox import EVENT_TYPES, EventType
from runtime.timestamps import iso_ms
from runtime.wire import WireBody, WireModel

router = APIRouter(
    prefix="/api/v1/notification-endpoints",
    route_class=StrictJsonRoute,
    dependencies=[Depends(require_configured_token)],
    tags=["notifications"],
)

EndpointPath = Annotated[str, Path(pattern=endpoints.ENDPOINT_ID_PATTERN)]
DeliveryPath = Annotated[str, Path(pattern=endpoints.DELIVERY_ID_PATTERN)]


class EndpointBody(WireBody):
    url: str = Field(min_length=8, max_length=2000)
    event_types: list[EventType] = Field(min_length=1, max_length=len(EVENT_TYPES))
    tenant: str | None = Field(default=None, pattern=TENANT_PATTERN)
    description: str | None = Field(default=None, max_length=500)


class EndpointView(WireModel):
    endpoint_id: str
    url: str
    event_types: list[str]
    tenant: str | None
    description: str | None
    created_at: str


class RegisteredEndpoint(EndpointView):
    secret: str = Field(description="The signing secret (whsec_...): shown this once.")


class EndpointList(WireModel):
    endpoints: list[EndpointView]


class DeliveryView(WireModel):
    delivery_id: str
    event_type: str
    subject: str
    state: Literal["pending", "delivered", "dead"]
    attempts: int
    last_error: str | None
    created_at: str
    next_attempt_at: str | None
    delivered_at: str | None
    payload: dict[str, object]


class DeliveryList(WireModel):
    deliveries: list[DeliveryView]


class Resent(WireModel):
    delivery_id: str
    state: Literal["pending"]


def _view(row: NotificationEndpoint) -> EndpointView:
    return EndpointView(
        endpoint_id=row.endpoint_id,
        url=row.url,
        event_types=list(row.event_types),
        tenant=row.tenant,
        description=row.description,
        created_at=iso_ms(row.created_at),
    )


def _delivery(row: NotificationDelivery) -> DeliveryView:
    return DeliveryView(
        delivery_id=row.delivery_id,
        event_type=row.event_type,
        subject=row.subject,
        state=row.state,
        attempts=row.attempts,
        last_error=row.last_error,
        created_at=iso_ms(row.created_at),
        next_attempt_at=iso_ms(row.next_attempt_at) if row.state == "pending" else None,
        delivered_at=iso_ms(row.delivered_at) if row.delivered_at else None,
        payload=row.payload,
    )


@router.post("", status_code=201, responses=errors(400, 401))
async def register_endpoint(body: EndpointBody, store: StoreDep) -> RegisteredEndpoint:
    row = await asyncio.to_thread(
        endpoints.create, store, body.url, list(body.event_types), body.tenant, body.description
    )
    return RegisteredEndpoint(**_view(row).model_dump(by_alias=False), secret=row.secret)


@router.get("", responses=errors(401))
async def list_endpoints(store: StoreDep) -> EndpointList:
    rows = await asyncio.to_thread(endpoints.listed, store)
    return EndpointList(endpoints=[_view(row) for row in rows])


@router.delete("/{endpoint_id}", status_code=204, responses=errors(400, 401, 404))
async def remove_endpoint(endpoint_id: EndpointPath, store: StoreDep) -> Response:
    await asyncio.to_thread(endpoints.remove, store, endpoint_id)
    return Response(status_code=204)


@router.get("/{endpoint_id}/deliveries", responses=errors(400, 401, 404))
async def list_deliveries(
    endpoint_id: EndpointPath,
    store: StoreDep,
    state: Annotated[Literal["pending", "delivered", "dead"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> DeliveryList:
    rows = await asyncio.to_thread(endpoints.deliveries, store, endpoint_id, state, limit)
    return DeliveryList(deliveries=[_delivery(row) for row in rows])


@router.post(
    "/{endpoint_id}/deliveries/{delivery_id}/resend",
    status_code=202,
    responses=errors(400, 401, 404, 409),
)
async def resend_delivery(
    endpoint_id: EndpointPath, delivery_id: DeliveryPath, store: StoreDep
) -> Resent:
    await asyncio.to_thread(endpoints.resend, store, endpoint_id, delivery_id)
    return Resent(delivery_id=delivery_id, state="pending")
