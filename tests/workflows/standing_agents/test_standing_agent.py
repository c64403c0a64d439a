"""StandingAgentWorkflow on the time-skipping server: cadence, idle ticks, forced replan,
STUCK, the foundational deadline, the credit window and continue-as-new."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from activities.llm.contracts import (
    ChatMessage,
    DeltaCallback,
    ModelReply,
    ToolSpec,
    Usage,
)
from activities.standing_agents.scripted_model import ScriptedAgentModel
from runtime.search_attributes import KIND, MODE, STATUS, TENANT
from runtime.standing_agents.contracts import (
    ActionOutcome,
    AgentStatus,
    AttentionKind,
    DecisionKind,
    EventKind,
)
from runtime.standing_agents.models import AgentEventRow, SystemConfig
from runtime.store import Store
from runtime.windows.lease_contracts import SETTLE_SIGNAL, agent_holder, lease_workflow_id
from tests.workflows import standing_agent_support as sa
from tests.workflows.standing_agent_support import agent_env
from workflows.standing_agents.agent import StandingAgentWorkflow

DAY = timedelta(hours=24)


__all__ = ["agent_env"]


async def _advance_to_next_tick(env: WorkflowEnvironment, store: Store, instance_id: str) -> None:
    """Skip time just past the pending heartbeat, and wait for its turn."""
    before = len(sa.turns(store, instance_id))
    pending = sa.pending_ticks(store, instance_id)
    assert len(pending) == 1
    now = await env.get_current_time()
    await env.sleep(max(sa.aware(pending[0].visible_at) - now, timedelta(0)) + timedelta(seconds=1))
    await sa.wait_turns(store, instance_id, before + 1)


async def _wait_event(
    store: Store, event_id: str, ready: Callable[[AgentEventRow], bool], timeout: float = 60
) -> AgentEventRow:
    """Poll the queued event until `ready` holds (the workflow works asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        with store.session() as db:
            row = db.exec(
                select(AgentEventRow).where(col(AgentEventRow.event_id) == event_id)
            ).first()
        if row is not None and ready(row):
            return row
        if time.monotonic() > deadline:
            raise AssertionError(f"event {event_id} never reached the expected state: {row}")
        await asyncio.sleep(0.05)


async def test_heartbeat_every_24h_and_an_unchanged_tick_calls_no_model(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        first = sa.turns(store, agent)[0]
        assert first.event_kind == EventKind.AGENT_INITIALIZED.value
        assert first.decision_kind == DecisionKind.INITIALIZED.value
        greeting = sa.messages(store, agent)
        assert [m.direction for m in greeting] == ["agent"]
        # Exactly one future heartbeat, 24 h after the turn.
        pending = sa.pending_ticks(store, agent)
        assert len(pending) == 1
        assert sa.aware(pending[0].visible_at) - sa.aware(first.created_at) == DAY
        described = await handle.describe()
        attributes = described.typed_search_attributes
        assert attributes.get(KIND) == "agent" and attributes.get(TENANT) == sa.TENANT
        assert attributes.get(STATUS) == "Active" and attributes.get(MODE) == "Strategic"
        # Nothing happens in 23 hours.
        await agent_env.sleep(timedelta(hours=23))
        assert len(sa.turns(store, agent)) == 1
        await _advance_to_next_tick(agent_env, store, agent)
        second = sa.turns(store, agent)[1]
        assert second.event_kind == EventKind.AGENT_TICK.value
        assert second.llm_call_id is not None  # a new hash: it plans
        calls = len(sa.llm_attempts(store, agent))
        await _advance_to_next_tick(agent_env, store, agent)
        third = sa.turns(store, agent)[2]
        assert third.plan_input_hash == second.plan_input_hash
        assert third.llm_call_id is None
        assert third.decision_kind == DecisionKind.HEARTBEAT.value
        assert len(sa.llm_attempts(store, agent)) == calls  # zero LLM calls
        assert sa.instance(store, agent).consecutive_idle_ticks == 1
        pending = sa.pending_ticks(store, agent)
        assert len(pending) == 1
        assert sa.aware(pending[0].visible_at) - sa.aware(third.created_at) == DAY
        await sa.stop(handle)


async def test_backoff_is_capped_when_the_idle_heartbeat_is_disabled(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    settings: dict[str, Any] = {
        "agent_idle_heartbeat_enabled": False,
        "agent_backoff_base_ms": 60_000,
        "agent_backoff_factor": 2.0,
        "agent_max_backoff_ms": 1_800_000,
    }
    async with sa.running(agent_env, store, tmp_path, task_queue, **settings):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        delays: list[timedelta] = []
        for _ in range(8):
            last = sa.turns(store, agent)[-1]
            pending = sa.pending_ticks(store, agent)
            assert len(pending) == 1
            delays.append(sa.aware(pending[0].visible_at) - sa.aware(last.created_at))
            await _advance_to_next_tick(agent_env, store, agent)
        await sa.stop(handle)
    # Planned turns (init, first tick) restart the backoff; idle ticks grow it to the cap.
    assert delays[0] == timedelta(minutes=1)
    assert max(delays) == timedelta(minutes=30)
    assert all(d <= timedelta(minutes=30) for d in delays)
    assert delays[-1] == timedelta(minutes=30)


async def test_forced_replan_after_20_idle_ticks(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue, agent_heartbeat_ms=60_000):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        for _ in range(22):
            await _advance_to_next_tick(agent_env, store, agent)
        await sa.stop(handle)
    ledger = sa.turns(store, agent)
    planned = [t.seq for t in ledger if t.llm_call_id is not None]
    # init, the first heartbeat (new hash), then 20 idle ticks, then the forced replan.
    assert planned == [ledger[0].seq, ledger[1].seq, ledger[22].seq]
    assert all(t.llm_call_id is None for t in ledger[2:22])


async def test_three_blocked_turns_close_the_agent_as_stuck(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        blocked = {"text": '/call phase_blocked {"reason": "the build is red"}'}
        for n in range(3):
            now = await agent_env.get_current_time()
            await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, blocked, now)
            await sa.wait_turns(store, agent, 2 + n)
        row = sa.instance(store, agent)
        assert row.status == AgentStatus.CLOSED.value
        assert row.consecutive_blocked_turns == 3
        assert row.tick_in_progress is False
        assert sa.pending_ticks(store, agent) == []
        stuck = [a for a in sa.attention(store, agent) if a.kind == AttentionKind.STUCK.value]
        assert len(stuck) == 1
        assert stuck[0].source == "soa" and stuck[0].status == "open"
        # Closed as STUCK is stopped: the agent settles its Windows lease (signal `settle`
        # to windows-lease/{tenant}/agent-{id}; with no lease running, nothing to do).
        # The store shows the close (the tick's activity) before the workflow's next task
        # issues the signal: read the history until it does.
        lease_id = lease_workflow_id(row.tenant, agent_holder(agent))
        settles: list[tuple[str, str]] = []
        for _ in range(200):
            history = await handle.fetch_history()
            settles = [
                (attrs.workflow_execution.workflow_id, attrs.signal_name)
                for attrs in (
                    e.signal_external_workflow_execution_initiated_event_attributes
                    for e in history.events
                    if e.HasField("signal_external_workflow_execution_initiated_event_attributes")
                )
            ]
            if settles:
                break
            await asyncio.sleep(0.05)
        assert settles == [(lease_id, SETTLE_SIGNAL)]
        # Closed: a day later nothing ticks.
        await agent_env.sleep(DAY * 2)
        assert len(sa.turns(store, agent)) == 4
        await sa.stop(handle)


async def test_the_foundational_phase_ends_at_its_24h_deadline(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now, foundational=True)
        with store.session() as db:
            db.add(
                SystemConfig(
                    tenant=sa.TENANT,
                    key="AgentDispatcher:TickMaxToolCalls",
                    value=1,
                    updated_at=now,
                )
            )
            db.commit()
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        two_messages = {
            "text": '/call soa_send_message {"text": "one"}\n/call soa_send_message {"text": "two"}'
        }
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, two_messages, now)
        await sa.wait_turns(store, agent, 2)
        inside = sa.turns(store, agent)[1]
        assert [a.outcome for a in sa.actions(store, agent, inside.seq)] == ["ok", "ok", "ok"]
        await agent_env.sleep(DAY + timedelta(minutes=5))
        count = len(sa.turns(store, agent))
        now = await agent_env.get_current_time()
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, two_messages, now)
        await sa.wait_turns(store, agent, count + 1)
        after = sa.turns(store, agent)[-1]
        # The settings' envelope again: one tool call, then the budget ends the episode.
        outcome = sa.actions(store, agent, after.seq)
        assert [a.outcome for a in outcome] == [ActionOutcome.OK.value]
        assert after.wait_condition == "budget_exhausted:tool_calls"
        await sa.stop(handle)


class PricedModel(ScriptedAgentModel):
    """The scripted agent planner, served as a priced model: each call costs ~$75."""

    name = "priced"

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        reply = await super().complete(messages, tools, on_delta=on_delta)
        return reply.model_copy(
            update={
                "served_model": "gpt-4o",
                "usage": Usage(prompt_tokens=30_000_000, completion_tokens=0),
            }
        )


async def test_an_exhausted_credit_skips_the_model_until_the_window_regenerates(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    """Issue 21, item 9: the credit spent, the agent pauses on it (one `budget_reached`
    request), ticks nothing in between whatever arrives, and resumes by itself when the
    window regenerates (a durable timer), answering what waited."""
    async with sa.running(agent_env, store, tmp_path, task_queue, provider=PricedModel()):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        first = sa.turns(store, agent)[0]
        assert first.cost_usd > 60  # over the $60 weekly credit in one call
        # The greeting's call spent the tick's dollar budget too: one call, then it ended.
        assert len(sa.llm_attempts(store, agent)) == 1
        spent_at = sa.aware(sa.llm_attempts(store, agent)[0].created_at)
        regenerates = spent_at + timedelta(days=7)
        paused = sa.instance(store, agent)
        assert paused.status == AgentStatus.PAUSED.value
        assert paused.budget_pause is not None
        pause = paused.budget_pause
        # Both the tick's dollars and the week's credit are spent: the credit holds it.
        assert (pause["axis"], pause["cap"]) == ("weekly_credit", 60.0)
        assert pause["spent"] == first.cost_usd
        assert sa.aware(datetime.fromisoformat(pause["resumeAt"])) == regenerates
        (request,) = sa.attention(store, agent)
        assert (request.kind, request.status) == (AttentionKind.BUDGET_REACHED.value, "open")
        assert request.decision_id == pause["decisionId"]
        assert request.payload["axis"] == "weekly_credit"
        hello = {"text": "are you there?"}
        sent = await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, hello, now)
        # Paused: the message waits, unconsumed, and nothing runs (no turn, no call).
        await sa.settled(handle, await agent_env.get_current_time())
        waiting = await _wait_event(store, sent, lambda e: e.consumed_at is None)
        assert waiting.consumed_at is None
        assert len(sa.turns(store, agent)) == 1
        assert len(sa.llm_attempts(store, agent)) == 1
        # The window regenerates: the workflow's timer resumes the agent, which answers.
        left = regenerates - await agent_env.get_current_time()
        await agent_env.sleep(left + timedelta(seconds=1))
        await sa.wait_turns(store, agent, 2)
        answered = next(t for t in sa.turns(store, agent) if t.event_id == sent)
        assert answered.event_payload == hello
        assert answered.llm_call_id is not None
        assert len(sa.llm_attempts(store, agent)) > 1
        # The first pause's request is resolved (the answers' $75 calls spent the new
        # window at once: the agent paused again, with a request of its own).
        first_request = next(
            r for r in sa.attention(store, agent) if r.decision_id == request.decision_id
        )
        assert (first_request.status, first_request.resolution) == ("resolved", "resumed")
        assert "regenerated" in (first_request.resolution_notes or "")
        await sa.stop(handle)


async def test_continue_as_new_carries_the_state(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue, agent_heartbeat_ms=60_000):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue, max_ticks_per_run=2)
        first_run = (await handle.describe()).run_id
        await sa.wait_turns(store, agent, 1)
        for _ in range(4):
            await _advance_to_next_tick(agent_env, store, agent)
        latest = agent_env.client.get_workflow_handle(handle.id)
        status = await latest.query(StandingAgentWorkflow.status)
        assert status is not None
        assert (await latest.describe()).run_id != first_run
        assert status.state.runs >= 3
        assert status.state.ticks_total == 5
        assert status.state.llm_calls_total >= 2
        assert len(sa.turns(store, agent)) == 5
        assert len(sa.pending_ticks(store, agent)) == 1
        await sa.stop(latest)
