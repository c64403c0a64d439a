"""Outbound webhooks' store: the endpoints operators register, and every delivery owed to
them (the outbox), written in the transaction of what it reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Index, Text
from sqlmodel import Field, SQLModel


def _ts(nullable: bool = False) -> Any:
    return Field(
        default=None if nullable else ...,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


class NotificationEndpoint(SQLModel, table=True):
    """A receiver: its URL, the event types it takes, and its signing secret (Standard
    Webhooks `whsec_...`, shown once at registration; the worker signs with it)."""

    __tablename__ = "notification_endpoints"

    endpoint_id: str = Field(primary_key=True, max_length=40)
    url: str = Field(max_length=2000)
    event_types: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    # Only this tenant's events (None: every event, the deployment's too).
    tenant: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=500)
    secret: str = Field(max_length=100)
    created_at: datetime = _ts()
    disabled_at: datetime | None = _ts(nullable=True)


class NotificationDelivery(SQLModel, table=True):
    """One event owed to one endpoint: pending until the receiver answers 2xx (delivered),
    or dead after the bounded number of attempts (the dead-letter list, re-sendable).
    `delivery_id` is the `webhook-id` the receiver deduplicates on."""

    __tablename__ = "notification_deliveries"
    __table_args__ = (
        Index("ix_notification_deliveries_due", "endpoint_id", "state", "created_at"),
    )

    delivery_id: str = Field(primary_key=True, max_length=80)
    endpoint_id: str = Field(max_length=40)
    event_type: str = Field(max_length=60)
    # Events of one subject reach an endpoint in the order they happened.
    subject: str = Field(max_length=400)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    state: str = Field(max_length=20)
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = _ts()
    # The order of events owed at one instant (`created_at` alike): the order they were
    # owed in, within the process that owed them (runtime/notifications/outbox.py).
    ordinal: int = Field(
        default=0, sa_column=Column(BigInteger, nullable=False, server_default="0")
    )
    next_attempt_at: datetime = _ts()
    delivered_at: datetime | None = _ts(nullable=True)
