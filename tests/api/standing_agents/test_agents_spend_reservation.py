"""Reserve before you spend (issue 21, item 8) over HTTP, with a real worker and Temporal dev
server: ten Compliance agents of one tenant, whose planning is bound to a priced
OpenAI-compatible endpoint on loopback, get an event at once against a weekly credit that
covers three and a half of their calls. Each call reserves its worst case under the
tenant's lock before it is sent, so at most three are paid, every other agent pauses on
the credit, and the spend passes the credit by no more than what the admitted calls cost
beyond their reservations: the loopback server bills more prompt tokens than agentrt's
estimate (it counts the whole JSON of the tool definitions, as a real tokenizer counts
what the estimate does not), which is the overshoot the README states."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from sqlmodel import col, select

from bench.llm_provider import GOOD_KEY, LoopbackProvider
from bench.standing_agents import KEY_ENV, bind_priced_model
from bench.standing_agents_cap import CREDIT_KEY, tenant_agents
from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.contracts import AgentStatus, EventKind
from runtime.standing_agents.models import AgentLedgerTurn
from runtime.store import Store
from tests.agents_helpers import AgentsDaemon, AgentsFactory

AGENTS = 10
COVERED = 3.5


def _attempts(store: Store, tenant: str, since: datetime) -> list[LlmCallAttempt]:
    with store.session() as db:
        return list(
            db.exec(
                select(LlmCallAttempt).where(
                    col(LlmCallAttempt.tenant) == tenant,
                    col(LlmCallAttempt.created_at) >= since,
                )
            ).all()
        )


def _spent(store: Store, tenant: str) -> float:
    return sum(a.cost_usd for a in _attempts(store, tenant, datetime.min))


def _answered(store: Store, ids: Sequence[str], event_id: str) -> int:
    with store.session() as db:
        return len(
            db.exec(
                select(AgentLedgerTurn).where(
                    col(AgentLedgerTurn.instance_id).in_(ids),
                    col(AgentLedgerTurn.event_id) == event_id,
                )
            ).all()
        )


async def _event(d: AgentsDaemon, tenant: str, instance_id: str, label: str) -> str:
    body = {"kind": EventKind.MISSION_STATE_CHANGED.value, "payload": {"mission": label}}
    response = await d.client.post(f"{d.base(tenant)}/agents/{instance_id}/events", json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["eventId"])


async def test_ten_agents_against_a_credit_for_three_calls_make_three_paid_calls(
    agents: AgentsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, GOOD_KEY)  # the worker reads the key from its environment
    with LoopbackProvider() as provider:
        d = await agents(max_concurrent_instances_per_tenant=4)
        await bind_priced_model(d.client, provider.base_url)
        tenant = d.tenant()
        # The SOA and ten Compliance agents, greeted and idle; the burst goes to the ten.
        ids = (await tenant_agents(d.client, d.store, tenant, AGENTS + 1))[1:]
        # What one of their calls reserves: one agent's event first, alone.
        since = datetime.now(UTC)
        probe = await _event(d, tenant, ids[0], "probe")
        await d.wait_until(lambda: _answered(d.store, ids[:1], probe), "the probe's turn")
        await d.wait_until(
            lambda: not d.instance(ids[0]).tick_in_progress, "the probe's tick to end"
        )
        [probed] = _attempts(d.store, tenant, since)
        credit = _spent(d.store, tenant) + COVERED * probed.reserved_usd
        put = await d.client.put(f"{d.base(tenant)}/config/{CREDIT_KEY}", json={"value": credit})
        assert put.status_code == 200, put.text
        burst_at = datetime.now(UTC)
        events = await asyncio.gather(*(_event(d, tenant, i, "burst") for i in ids))

        def settled() -> bool:
            answered = sum(_answered(d.store, [i], e) for i, e in zip(ids, events, strict=True))
            paused = sum(
                1
                for i in ids
                if d.instance(i).status == AgentStatus.PAUSED.value
                and not d.instance(i).tick_in_progress
            )
            return answered + paused == AGENTS

        await d.wait_until(settled, "every agent answered or paused on the credit", 120)
    paid = [a for a in _attempts(d.store, tenant, burst_at) if a.cost_usd > 0]
    assert 1 <= len(paid) <= 3
    paused = [i for i in ids if d.instance(i).status == AgentStatus.PAUSED.value]
    assert len(paused) == AGENTS - len(paid)
    assert [(d.instance(i).budget_pause or {}).get("axis") for i in paused] == [
        "weekly_credit"
    ] * len(paused)
    # The overshoot: at most what the admitted calls cost beyond what they reserved.
    beyond = sum(max(0.0, a.cost_usd - (a.reserved_usd or 0.0)) for a in paid)
    assert _spent(d.store, tenant) - credit <= beyond + 1e-9
