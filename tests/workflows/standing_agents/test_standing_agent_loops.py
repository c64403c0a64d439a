"""The loop guards on the time-skipping server (issue 21, item 10): an agent whose planned
turns keep ending with the same decision is closed, and so is one that keeps waking
itself to plan; each closes with a `stuck` request naming its rule. An operator's event
restarts the self-wake count."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from runtime.standing_agents.contracts import AgentStatus, AttentionKind, EventKind
from runtime.store import Store
from tests.workflows import standing_agent_support as sa
from tests.workflows.standing_agent_support import agent_env

__all__ = ["agent_env"]
# Every other heartbeat plans (the forced replan after one idle tick), a minute apart.
CADENCE: dict[str, Any] = {"agent_heartbeat_ms": 60_000, "forced_replan_every_n_idle_ticks": 1}


async def _advance(env: WorkflowEnvironment, store: Store, agent: str) -> None:
    pending = sa.pending_ticks(store, agent)
    assert len(pending) == 1, [p.event_id for p in pending]
    before = len(sa.turns(store, agent))
    now = await env.get_current_time()
    await env.sleep(max(sa.aware(pending[0].visible_at) - now, timedelta(0)) + timedelta(seconds=1))
    await sa.wait_turns(store, agent, before + 1)


def _stuck(store: Store, agent: str) -> list[dict[str, object]]:
    return [
        {"rule": a.payload.get("rule"), "title": a.title, "body": a.body}
        for a in sa.attention(store, agent)
        if a.kind == AttentionKind.STUCK.value
    ]


async def test_five_planned_turns_with_the_same_decision_close_the_agent(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue, **CADENCE):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        while sa.instance(store, agent).status != AgentStatus.CLOSED.value:
            assert len(sa.turns(store, agent)) < 20, "the loop guard never fired"
            await _advance(agent_env, store, agent)
        ledger = sa.turns(store, agent)
        planned = [t for t in ledger if t.llm_call_id is not None]
        # The greeting decided otherwise; then five planned heartbeats decided the same
        # (the idle ticks between them, no model call, do not count).
        assert [t.event_kind for t in planned[1:]] == [EventKind.AGENT_TICK.value] * 5
        assert len({str(t.decision) for t in planned[1:]}) == 1
        assert any(t.llm_call_id is None for t in ledger)
        (stuck,) = _stuck(store, agent)
        assert stuck["rule"] == "repeated_decision"
        assert "same decision" in str(stuck["body"])
        assert sa.pending_ticks(store, agent) == []
        assert sa.instance(store, agent).repeated_decision_turns == 5
        await sa.stop(handle)


async def test_an_agent_waking_itself_too_often_is_closed_and_an_operator_event_resets_it(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    settings: dict[str, Any] = {
        **CADENCE,
        "agent_max_self_wakes_per_hour": 3,
        "agent_max_repeated_decisions": 100,
    }
    async with sa.running(agent_env, store, tmp_path, task_queue, **settings):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)

        def planned_wakes() -> int:
            return sum(
                1
                for t in sa.turns(store, agent)
                if t.event_kind == EventKind.AGENT_TICK.value and t.llm_call_id is not None
            )

        while planned_wakes() < 3:
            await _advance(agent_env, store, agent)
        # An operator's message: the agent's own wakes count again from here.
        await sa.settled(handle, await agent_env.get_current_time())
        count = len(sa.turns(store, agent))
        now = await agent_env.get_current_time()
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, {"text": "hi"}, now)
        await sa.wait_turns(store, agent, count + 1)
        assert sa.instance(store, agent).status == AgentStatus.ACTIVE.value
        while sa.instance(store, agent).status != AgentStatus.CLOSED.value:
            assert len(sa.turns(store, agent)) < 40, "the self-wake guard never fired"
            await _advance(agent_env, store, agent)
        # Six planned wakes in all, all within the hour: only the four after the message
        # counted (more than three).
        assert planned_wakes() == 3 + 4
        (stuck,) = _stuck(store, agent)
        assert stuck["rule"] == "self_wake"
        assert "own heartbeat" in str(stuck["body"])
        await sa.stop(handle)
