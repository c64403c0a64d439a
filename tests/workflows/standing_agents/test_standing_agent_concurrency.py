"""Spec §3.2 MaxConcurrentInstancesPerTenant: ten agents of one tenant woken at once
tick at most N at a time; the others wait, durably, and all tick in turn."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import col, func, select
from temporalio.testing import WorkflowEnvironment

from activities.llm import ChatMessage, ModelReply, ToolSpec
from activities.llm.contracts import DeltaCallback, Usage
from activities.llm.scripted import ScriptedModel
from activities.standing_agents.scripted_model import ScriptedAgentModel
from runtime.llm.pricing import Price, put_price
from runtime.standing_agents.models import AgentEventRow, AgentInstance
from runtime.store import Store
from tests.workflows import standing_agent_support as sa
from tests.workflows.standing_agent_support import agent_env

__all__ = ["agent_env"]
CAP = 3


class CountingModel:
    """The scripted model, slowed down, counting the tenant's tick leases at every call."""

    name = "counting"

    def __init__(self, store: Store) -> None:
        self.store = store
        self.inner = ScriptedModel()
        self.leases_seen: list[int] = []

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.leases_seen.append(await asyncio.to_thread(self._leases))
        await asyncio.sleep(0.3)  # long enough for the other agents to try their ticks
        return await self.inner.complete(messages, tools, on_delta=on_delta)

    def _leases(self) -> int:
        with self.store.session() as db:
            return int(
                db.exec(
                    select(func.count()).where(
                        col(AgentInstance.tenant) == sa.TENANT,
                        col(AgentInstance.tick_in_progress).is_(True),
                    )
                ).one()
            )


async def test_ten_agents_woken_at_once_tick_at_most_the_cap_at_a_time(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    model = CountingModel(store)
    async with sa.running(
        agent_env,
        store,
        tmp_path,
        task_queue,
        provider=model,
        max_concurrent_instances_per_tenant=CAP,
    ):
        now = await agent_env.get_current_time()
        agents = [sa.create_instance(store, now) for _ in range(10)]
        handles = await asyncio.gather(
            *(sa.start(agent_env.client, agent, task_queue) for agent in agents)
        )
        for agent in agents:  # every one ticks, in turn
            await sa.wait_turns(store, agent, 1, timeout=120)
        assert len(model.leases_seen) >= 10
        assert max(model.leases_seen) <= CAP
        for handle in handles:
            await sa.stop(handle)


class DearModel(ScriptedAgentModel):
    """The scripted planner as a priced model whose every call bills its whole output cap
    (8,192 tokens at $100/M, prompt free: $0.8192, exactly its reservation), slow enough
    that the agents' calls overlap."""

    name = "dear"

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        await asyncio.sleep(0.3)
        reply = await super().complete(messages, tools, on_delta=on_delta)
        usage = Usage(prompt_tokens=1000, completion_tokens=OUTPUT_CAP)
        return reply.model_copy(update={"usage": usage})


OUTPUT_CAP = 8192


async def test_ten_agents_against_a_credit_for_three_calls_make_three(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    """Issue 21, item 8: each call's worst case is reserved against the week's credit
    before it is sent, beside the calls in flight: at most three paid calls, and the
    spend never passes the cap (here the overshoot is nil: every call costs its
    reservation)."""
    now = await agent_env.get_current_time()
    requested = "scripted"  # the model the embedded site binding asks for
    put_price(store, requested, Price(input_per_mtok_usd=0, output_per_mtok_usd=100), now)
    per_call = OUTPUT_CAP * 100 / 1_000_000
    credit = 3 * per_call + per_call / 2
    async with sa.running(
        agent_env,
        store,
        tmp_path,
        task_queue,
        provider=DearModel(),
        agent_weekly_credit_usd=credit,
    ):
        agents = [sa.create_instance(store, now) for _ in range(10)]
        handles = await asyncio.gather(
            *(sa.start(agent_env.client, agent, task_queue) for agent in agents)
        )
        # Every greeting is answered (a paid turn) or deferred, unconsumed, to the week's
        # regeneration (spec §3.4.9: only a heartbeat is consumed unanswered).
        week = now + timedelta(days=6)
        deadline = time.monotonic() + 120
        while not all(
            sa.turns(store, agent) or sa.aware(_greeting(store, agent).visible_at) > week
            for agent in agents
        ):
            assert time.monotonic() < deadline, "some greeting was neither paid nor deferred"
            await asyncio.sleep(0.1)
        attempts = sa.llm_attempts_of_tenant(store, sa.TENANT)
        assert {a.requested_model for a in attempts} == {requested}
        paid = [a for a in attempts if a.cost_usd > 0]
        assert len(paid) == 3
        assert all(a.reserved_usd == pytest.approx(per_call) for a in paid)
        assert sum(a.cost_usd for a in paid) <= credit
        answered = [agent for agent in agents if sa.turns(store, agent)]
        assert len(answered) == 3
        assert {a.owner_id for a in paid} == set(answered)
        for handle in handles:
            await sa.stop(handle)


def _greeting(store: Store, instance_id: str) -> AgentEventRow:
    with store.session() as db:
        return db.exec(
            select(AgentEventRow).where(col(AgentEventRow.event_id) == f"init/{instance_id}/0")
        ).one()
