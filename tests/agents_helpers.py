"""Helpers for standing-agent API tests: an in-process daemon (API + worker) and store rows."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from runtime.standing_agents.contracts import AttentionKind, AttentionStatus
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AgentLedgerTurn,
    AttentionRequest,
)
from runtime.store import EventJournal, Store, upgrade_to_head
from tests.conftest import ApiFactory
from worker import build_worker

TOKEN = "agents-test-token"


@dataclass
class AgentsDaemon:
    client: httpx.AsyncClient
    store: Store
    journal: EventJournal
    settings: Settings

    @staticmethod
    def tenant() -> str:
        """A fresh tenant per test: workflow ids (`agent/{tenant}/{id}`) are server-wide."""
        return f"t-{uuid.uuid4().hex[:10]}"

    def base(self, tenant: str) -> str:
        return f"/api/v1/tenants/{tenant}"

    async def enable(self, tenant: str) -> dict[str, Any]:
        response = await self.client.put(
            f"{self.base(tenant)}/features/standing-agents", json={"enabled": True}
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def soa(self, tenant: str) -> str:
        body = await self.enable(tenant)
        soa: str = body["soaInstanceId"]
        return soa

    def events(self, instance_id: str) -> list[AgentEventRow]:
        with self.store.session() as db:
            return list(
                db.exec(
                    select(AgentEventRow)
                    .where(col(AgentEventRow.instance_id) == instance_id)
                    .order_by(col(AgentEventRow.sequence_number))
                ).all()
            )

    def turns(self, instance_id: str) -> list[AgentLedgerTurn]:
        """The agent's ledger turns, in order."""
        with self.store.session() as db:
            return list(
                db.exec(
                    select(AgentLedgerTurn)
                    .where(col(AgentLedgerTurn.instance_id) == instance_id)
                    .order_by(col(AgentLedgerTurn.seq))
                ).all()
            )

    def instance(self, instance_id: str) -> AgentInstance:
        with self.store.session() as db:
            row = db.get(AgentInstance, instance_id)
            assert row is not None
            return row

    def set_instance(self, instance_id: str, **values: Any) -> None:
        with self.store.session() as db:
            row = db.get(AgentInstance, instance_id)
            assert row is not None
            for key, value in values.items():
                setattr(row, key, value)
            db.add(row)
            db.commit()

    def raise_decision(
        self,
        tenant: str,
        instance_id: str,
        kind: AttentionKind = AttentionKind.DECISION,
        payload: dict[str, Any] | None = None,
    ) -> str:
        """An open attention request, as the agent's propose tools write it."""
        decision_id = uuid.uuid4().hex
        with self.store.session() as db:
            db.add(
                AttentionRequest(
                    decision_id=decision_id,
                    tenant=tenant,
                    kind=kind.value,
                    source="soa",
                    soa_instance_id=instance_id,
                    title="Ship it?",
                    body="The agent asks.",
                    options=["approve", "reject"],
                    payload=payload or {},
                    status=AttentionStatus.OPEN.value,
                    created_at=datetime.now(UTC),
                )
            )
            db.commit()
        return decision_id

    async def wait_until(self, check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = await asyncio.to_thread(check)
            if value:
                return value
            await asyncio.sleep(0.1)
        raise AssertionError(f"{what} never happened")


def dependency_turn(store: Store, instance_id: str) -> AgentLedgerTurn | None:
    """The agent's first ledger turn on a `DependencyCompleted` (a coding task settled)."""
    with store.session() as db:
        return db.exec(
            select(AgentLedgerTurn).where(
                col(AgentLedgerTurn.instance_id) == instance_id,
                col(AgentLedgerTurn.event_kind) == "DependencyCompleted",
            )
        ).first()


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the test runner keeps its own."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def served(d: AgentsDaemon) -> AsyncIterator[httpx.AsyncClient]:
    """The daemon's app under uvicorn on its own port (ASGITransport buffers streams);
    create the daemon with `port=free_port()` so the Host allowlist names that port."""
    app = d.client.app  # type: ignore[attr-defined]
    server = _Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=d.settings.port, lifespan="off", log_level="warning"
        )
    )
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before starting")
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{d.settings.port}", headers=dict(d.client.headers)
        ) as client:
            yield client
    finally:
        server.should_exit = True
        await task


AgentsFactory = Callable[..., Awaitable[AgentsDaemon]]


@pytest.fixture
async def agents(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    database_url: str,
) -> AsyncIterator[AgentsFactory]:
    """The API (in process, bearer token set) and a real worker on a fresh task queue,
    on SQLite, and on PostgreSQL when AGENTRT_TEST_POSTGRES_URL is set."""
    stack = AsyncExitStack()

    async def make(*, token: str | None = TOKEN, **overrides: Any) -> AgentsDaemon:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        values: dict[str, Any] = {
            "data_dir": tmp_path / ".data",
            "task_queue": task_queue,
            "workspace": workspace,
            "database_url": database_url,
        }
        if token:
            values["token"] = token
        values.update(overrides)
        settings = Settings(**values)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        stack.callback(store.dispose)
        await stack.enter_async_context(build_worker(dev_env.client, settings, store))
        client = await api(**values)
        if token:
            client.headers["Authorization"] = f"Bearer {token}"
        return AgentsDaemon(
            client=client, store=store, journal=EventJournal(store), settings=settings
        )

    yield make
    await stack.aclose()
