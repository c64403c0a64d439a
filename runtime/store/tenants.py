"""Tenant features: per-tenant flags (`standing-agents`, ...), default off, live."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Column, DateTime
from sqlmodel import Field, SQLModel, col, select

from runtime.store.atomic import upsert
from runtime.store.engine import Store


class TenantFeature(SQLModel, table=True):
    __tablename__ = "tenant_feature"

    tenant: str = Field(primary_key=True, max_length=200)
    feature: str = Field(primary_key=True, max_length=80)
    enabled: bool = False
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


def feature_enabled(store: Store, tenant: str, feature: str) -> bool:
    with store.session() as db:
        row = db.get(TenantFeature, (tenant, feature))
        return bool(row and row.enabled)


def set_feature(store: Store, tenant: str, feature: str, enabled: bool) -> bool:
    """Set the flag; returns the previous value.

    An upsert: of two concurrent first writes of a flag, neither fails on the primary key
    (see runtime.store.atomic). The previous value is read under the row's lock when the
    row exists (PostgreSQL), in the write transaction (SQLite)."""
    with store.transaction() as db:
        row = db.get(TenantFeature, (tenant, feature), with_for_update=True)
        previous = bool(row and row.enabled)
        upsert(
            db,
            TenantFeature,
            {"tenant": tenant, "feature": feature, "enabled": enabled, "updated_at": _now()},
            key=("tenant", "feature"),
            update=("enabled", "updated_at"),
        )
        return previous


def enabled_tenants(store: Store, feature: str) -> list[str]:
    with store.session() as db:
        rows = db.exec(
            select(TenantFeature.tenant).where(
                col(TenantFeature.feature) == feature, col(TenantFeature.enabled).is_(True)
            )
        ).all()
        return sorted(rows)


def _now() -> datetime:
    return datetime.now(UTC)
