"""Spec §3.2 MaxConcurrentInstancesPerTenant: ten agents of one tenant woken at once
tick at most N at a time; the others wait, durably, and all tick in turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlmodel import col, func, select
from temporalio.testing import WorkflowEnvironment

from activities.llm import ChatMessage, ModelReply, ToolSpec
from activities.llm.contracts import DeltaCallback
from activities.llm.scripted import ScriptedModel
from runtime.standing_agents.models import AgentInstance
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
