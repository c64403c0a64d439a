"""Outbound webhooks' endpoints and their deliveries, as the routes manage them; the
refusals a client can get (WireError, one place each)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, Literal

from sqlalchemy import select as core_select
from sqlalchemy import update
from sqlmodel import col, select

from runtime.egress import url_refusal
from runtime.failures import WireError
from runtime.notifications import outbox
from runtime.notifications.models import NotificationDelivery, NotificationEndpoint
from runtime.store import Store

ENDPOINT_ID_PATTERN: Final = r"^ep_[0-9a-f]{16}$"
DELIVERY_ID_PATTERN: Final = r"^msg_[0-9a-f]{40}$"
MAX_ENDPOINTS: Final = 50


class EndpointNotFound(WireError):
    kind: Literal["notification_endpoint_not_found"] = "notification_endpoint_not_found"
    endpoint_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No notification endpoint "{self.endpoint_id}"',
            "code": self.kind_name,
            "endpointId": self.endpoint_id,
        }


class DeliveryNotFound(WireError):
    kind: Literal["notification_delivery_not_found"] = "notification_delivery_not_found"
    delivery_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No delivery "{self.delivery_id}" for this endpoint',
            "code": self.kind_name,
            "deliveryId": self.delivery_id,
        }


class DeliveryNotDead(WireError):
    """Only a dead delivery (the dead-letter list) is sent again on request: 409."""

    kind: Literal["notification_delivery_not_dead"] = "notification_delivery_not_dead"
    delivery_id: str
    state: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Delivery {self.delivery_id} is {self.state}, not dead",
            "code": self.kind_name,
            "deliveryId": self.delivery_id,
            "state": self.state,
        }


class InvalidEndpoint(WireError):
    kind: Literal["invalid_notification_endpoint"] = "invalid_notification_endpoint"
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind_name}


def create(
    store: Store,
    url: str,
    event_types: list[str],
    tenant: str | None,
    description: str | None,
) -> NotificationEndpoint:
    """Register a receiver; its secret is in the row returned (shown this once)."""
    refusal = url_refusal(url, "url", base=False)
    if refusal is not None:
        raise InvalidEndpoint(message=refusal.message).application_error()
    with store.transaction() as db:
        live = db.exec(
            select(NotificationEndpoint).where(col(NotificationEndpoint.disabled_at).is_(None))
        ).all()
        if len(live) >= MAX_ENDPOINTS:
            message = f"At most {MAX_ENDPOINTS} endpoints; remove one first"
            raise InvalidEndpoint(message=message).application_error()
        row = NotificationEndpoint(
            endpoint_id=outbox.new_endpoint_id(),
            url=url,
            event_types=sorted(set(event_types)),
            tenant=tenant,
            description=description,
            secret=outbox.new_secret(),
            created_at=datetime.now(UTC),
        )
        db.add(row)
        db.flush()
        db.refresh(row)  # as stored: what a later read of it gives
        return row


def listed(store: Store) -> list[NotificationEndpoint]:
    with store.session() as db:
        return list(
            db.exec(
                select(NotificationEndpoint)
                .where(col(NotificationEndpoint.disabled_at).is_(None))
                .order_by(col(NotificationEndpoint.created_at))
            ).all()
        )


def remove(store: Store, endpoint_id: str) -> None:
    """Stop delivering to it (its workflow ends at its next pass); idempotent."""
    with store.transaction() as db:
        row = db.get(NotificationEndpoint, endpoint_id)
        if row is None:
            raise EndpointNotFound(endpoint_id=endpoint_id).application_error()
        if row.disabled_at is None:
            db.exec(
                update(NotificationEndpoint)
                .where(col(NotificationEndpoint.endpoint_id) == endpoint_id)
                .values(disabled_at=datetime.now(UTC))
            )


def _live(store: Store, endpoint_id: str) -> None:
    with store.session() as db:
        row = db.get(NotificationEndpoint, endpoint_id)
    if row is None or row.disabled_at is not None:
        raise EndpointNotFound(endpoint_id=endpoint_id).application_error()


def deliveries(
    store: Store, endpoint_id: str, state: str | None, limit: int
) -> list[NotificationDelivery]:
    """The endpoint's deliveries, newest first (`state`: pending, delivered or dead)."""
    _live(store, endpoint_id)
    with store.session() as db:
        statement = select(NotificationDelivery).where(
            col(NotificationDelivery.endpoint_id) == endpoint_id
        )
        if state is not None:
            statement = statement.where(col(NotificationDelivery.state) == state)
        statement = statement.order_by(col(NotificationDelivery.created_at).desc()).limit(limit)
        return list(db.exec(statement).all())


def resend(store: Store, endpoint_id: str, delivery_id: str) -> None:
    """A dead delivery owed again (woken at once)."""
    _live(store, endpoint_id)
    with store.transaction() as db:
        connection = db.connection()
        owed = outbox.resend(connection, endpoint_id, delivery_id, datetime.now(UTC))
        row = connection.execute(
            core_select(outbox.DELIVERIES.c.state).where(
                outbox.DELIVERIES.c.delivery_id == delivery_id,
                outbox.DELIVERIES.c.endpoint_id == endpoint_id,
            )
        ).first()
    if owed:
        outbox.wake([endpoint_id])  # after the commit: the woken sender sees it owed
        return
    if row is None:
        raise DeliveryNotFound(delivery_id=delivery_id).application_error()
    raise DeliveryNotDead(delivery_id=delivery_id, state=row.state).application_error()
