"""The standing-agents benchmark's tenant phases (issue 21): one tenant's agents at its
concurrency cap, and the spend of a burst against the tenant's weekly credit.

Each runs on a tenant of
its own: its SOA and `agents - 1` Compliance agents, created and started over HTTP and
left idle once greeted. Then every agent of the tenant gets an external event at once
(`POST .../agents/{id}/events`, `MissionStateChanged`, a payload of its own: never an
idle tick), and the store is read every few milliseconds meanwhile.

1. cap: timed from the first event until each agent's turn for it is in the ledger; the
   figure is the tenant's ticks per second with at most `MaxConcurrentInstancesPerTenant`
   ticking, and the most agents seen ticking at once (never above the cap).
2. overshoot (last, the agents' model rebound to a priced OpenAI-compatible endpoint on
   loopback: the built-in scripted model is free and reserves nothing): the
   price is for input only, so a call's worst case is its prompt's estimate; one
   agent's event measures what one tick reserves, and the
   tenant's weekly credit is set to cover three and a half such ticks beyond what it
   spent. Then the burst: each call must reserve its worst case under the tenant's lock
   before it is sent, so the ticks that fit run and the others stop on the credit and
   pause their agents. The figure is the worst spend past the credit, as a percentage of
   it, over the rounds (target: none).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import func
from sqlmodel import SQLModel, col, select

from bench.client import expect
from bench.report import elapsed_ms
from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.contracts import STANDING_AGENTS_FEATURE, AgentStatus, EventKind
from runtime.standing_agents.models import AgentInstance, AgentLedgerTurn
from runtime.store import Store

SAMPLE_S = 0.02
TIMEOUT_S = 120.0
# The price of the overshoot rounds' model: input only, so a call's worst case is its
# prompt's estimate (a token per four characters, tool definitions included).
PRICE = {"inputPerMTokUsd": 1000.0, "outputPerMTokUsd": 0.0}
CREDIT_KEY = "AgentDispatcher:WeeklyCreditUsd"
TICKS_COVERED = 3.5


@dataclass(frozen=True)
class CapRound:
    agents: int
    ticks_s: float
    max_ticking: int

    @property
    def ticks_per_s(self) -> float:
        return self.agents / self.ticks_s


@dataclass(frozen=True)
class OvershootRound:
    agents: int
    credit_usd: float
    spent_usd: float
    tick_reservation_usd: float
    answered: int  # agents whose event got its turn
    paused: int  # agents stopped on the credit
    max_ticking: int

    @property
    def overshoot_percent(self) -> float:
        return max(0.0, self.spent_usd - self.credit_usd) / self.credit_usd * 100


def _count(store: Store, table: type[SQLModel], *where: Any) -> int:
    """How many rows of `table` match every condition of `where`."""
    with store.session() as db:
        return int(db.exec(select(func.count()).select_from(table).where(*where)).one())


def _ticking(store: Store, tenant: str) -> int:
    return _count(
        store,
        AgentInstance,
        col(AgentInstance.tenant) == tenant,
        col(AgentInstance.tick_in_progress).is_(True),
    )


def _answered(store: Store, ids: Sequence[str], event_ids: Sequence[str]) -> int:
    return _count(
        store,
        AgentLedgerTurn,
        col(AgentLedgerTurn.instance_id).in_(ids),
        col(AgentLedgerTurn.event_id).in_(event_ids),
    )


def _paused(store: Store, ids: Sequence[str]) -> int:
    return _count(
        store,
        AgentInstance,
        col(AgentInstance.instance_id).in_(ids),
        col(AgentInstance.status) == AgentStatus.PAUSED.value,
        col(AgentInstance.tick_in_progress).is_(False),
    )


def _greeted_and_idle(store: Store, ids: Sequence[str]) -> bool:
    with store.session() as db:
        greeted = db.exec(
            select(func.count(func.distinct(AgentLedgerTurn.instance_id))).where(
                col(AgentLedgerTurn.instance_id).in_(ids),
                col(AgentLedgerTurn.event_kind) == EventKind.AGENT_INITIALIZED.value,
            )
        ).one()
    busy = _count(
        store,
        AgentInstance,
        col(AgentInstance.instance_id).in_(ids),
        col(AgentInstance.tick_in_progress).is_(True),
    )
    return int(greeted) == len(ids) and busy == 0


def _spend(store: Store, tenant: str) -> tuple[float, float]:
    """What the tenant's model calls cost, and the largest reservation one made."""
    with store.session() as db:
        spent, largest = db.exec(
            select(
                func.coalesce(func.sum(LlmCallAttempt.cost_usd), 0.0),
                func.coalesce(func.max(LlmCallAttempt.reserved_usd), 0.0),
            ).where(col(LlmCallAttempt.tenant) == tenant)
        ).one()
    return float(spent), float(largest)


def _reserved_since(store: Store, instance_id: str, since: datetime) -> float:
    """What the agent's model calls since `since` reserved, in all."""
    with store.session() as db:
        reserved = db.exec(
            select(func.coalesce(func.sum(LlmCallAttempt.reserved_usd), 0.0)).where(
                col(LlmCallAttempt.owner_id) == instance_id,
                col(LlmCallAttempt.created_at) >= since,
            )
        ).one()
    return float(reserved)


async def _wait(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not await asyncio.to_thread(check):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {TIMEOUT_S:.0f} s waiting for {what}")
        await asyncio.sleep(0.2)


async def tenant_agents(
    http: httpx.AsyncClient, store: Store, tenant: str, agents: int
) -> list[str]:
    """Enable `tenant` (its SOA), create and start `agents - 1` Compliance agents, and wait
    until every one has greeted and none is ticking. Returns their ids, the SOA first."""
    enabled = await http.put(
        f"/api/v1/tenants/{tenant}/features/{STANDING_AGENTS_FEATURE}", json={"enabled": True}
    )
    expect(enabled, 200)
    ids = [str(enabled.json()["soaInstanceId"])]
    for _ in range(agents - 1):
        created = await http.post(
            f"/api/v1/tenants/{tenant}/agents", json={"agentType": "Compliance"}
        )
        expect(created, 201)
        instance = str(created.json()["instanceId"])
        expect(await http.post(f"/api/v1/tenants/{tenant}/agents/{instance}/start"), 200)
        ids.append(instance)
    await _wait(lambda: _greeted_and_idle(store, ids), f"{agents} agents of {tenant} to greet")
    return ids


async def _burst(
    http: httpx.AsyncClient, tenant: str, ids: Sequence[str], label: str
) -> tuple[list[str], float]:
    """An event to every agent at once; returns their queue ids (what each turn records)
    and when the first was sent."""

    async def post(instance: str) -> str:
        body = {
            "kind": EventKind.MISSION_STATE_CHANGED.value,
            "payload": {"mission": label, "at": datetime.now(UTC).isoformat()},
            "eventId": f"bench-{label}",
        }
        response = await http.post(f"/api/v1/tenants/{tenant}/agents/{instance}/events", json=body)
        expect(response, 202)
        return str(response.json()["eventId"])

    started = time.perf_counter()
    return list(await asyncio.gather(*(post(i) for i in ids))), started


async def _sampled_until(store: Store, tenant: str, done: Callable[[], bool], what: str) -> int:
    """Sample how many of the tenant's agents tick until `done()`; returns the most seen."""
    most = 0
    deadline = time.monotonic() + TIMEOUT_S
    while not await asyncio.to_thread(done):
        most = max(most, await asyncio.to_thread(_ticking, store, tenant))
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {TIMEOUT_S:.0f} s waiting for {what}")
        await asyncio.sleep(SAMPLE_S)
    return most


async def cap_round(
    http: httpx.AsyncClient, store: Store, tenant: str, ids: Sequence[str], label: str
) -> CapRound:
    event_ids, started = await _burst(http, tenant, ids, label)
    most = await _sampled_until(
        store,
        tenant,
        lambda: _answered(store, ids, event_ids) == len(ids),
        f"{len(ids)} turns of {tenant}",
    )
    return CapRound(len(ids), elapsed_ms(started) / 1000, most)


async def overshoot_round(
    http: httpx.AsyncClient, store: Store, tenant: str, ids: Sequence[str]
) -> OvershootRound:
    """The tenant's credit set to cover TICKS_COVERED ticks, then an event to each agent."""
    # What one tick reserves at this price: one agent's event first, alone.
    since = datetime.now(UTC)
    [probe], _ = await _burst(http, tenant, ids[:1], "probe")
    await _wait(lambda: _answered(store, ids[:1], [probe]) == 1, "the probe tick")
    await _wait(lambda: _greeted_and_idle(store, ids), "the probe tick to end")
    reservation = await asyncio.to_thread(_reserved_since, store, ids[0], since)
    if reservation <= 0:
        raise RuntimeError("the probe tick reserved nothing: is its model priced?")
    spent_before, _ = await asyncio.to_thread(_spend, store, tenant)
    credit = spent_before + TICKS_COVERED * reservation
    expect(
        await http.put(f"/api/v1/tenants/{tenant}/config/{CREDIT_KEY}", json={"value": credit}), 200
    )
    event_ids, _ = await _burst(http, tenant, ids, "credit")

    def settled() -> bool:
        return _answered(store, ids, event_ids) + _paused(store, ids) >= len(ids)

    most = await _sampled_until(store, tenant, settled, f"{tenant}'s burst to settle")
    spent, _ = await asyncio.to_thread(_spend, store, tenant)
    return OvershootRound(
        agents=len(ids),
        credit_usd=credit,
        spent_usd=spent,
        tick_reservation_usd=reservation,
        answered=await asyncio.to_thread(_answered, store, ids, event_ids),
        paused=await asyncio.to_thread(_paused, store, ids),
        max_ticking=most,
    )


async def set_price(http: httpx.AsyncClient, model: str, price: dict[str, float]) -> None:
    expect(await http.put(f"/api/v1/llm/prices/{model}", json=price), 200)
