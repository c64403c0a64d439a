"""Dependency aliases for routes (`SettingsDep`, `StoreDep`, `JournalDep`, `TemporalDep`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from temporalio.client import Client

from api.temporal import TemporalConnector
from runtime.settings import Settings
from runtime.store import EventJournal, Store


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def get_journal(request: Request) -> EventJournal:
    journal: EventJournal = request.app.state.journal
    return journal


def get_connector(request: Request) -> TemporalConnector:
    connector: TemporalConnector = request.app.state.temporal
    return connector


async def get_temporal(request: Request) -> Client:
    return await get_connector(request).get()


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
JournalDep = Annotated[EventJournal, Depends(get_journal)]
ConnectorDep = Annotated[TemporalConnector, Depends(get_connector)]
TemporalDep = Annotated[Client, Depends(get_temporal)]


# A tenant in a path (`/api/v1/tenants/{tenant}/...`): every tenant route bounds it alike.
TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
TenantPath = Annotated[str, Path(pattern=TENANT_PATTERN)]
