"""The governance rail and the humans, through the workflow: blocked calls on the ledger,
a bad mode fails closed, the nudge, escalate-and-resume, a task as a session prompt."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlmodel import select
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.llm import ChatMessage, ModelError, ModelReply, ToolCall, ToolSpec, Usage
from activities.llm.contracts import DeltaCallback
from runtime.coding_tasks.models import CodingTask
from runtime.search_attributes import MODE, STATUS
from runtime.sessions.models import DaemonSession
from runtime.standing_agents.contracts import (
    STANDING_AGENTS_FEATURE,
    AgentStatus,
    AgentType,
    DecisionKind,
    EventKind,
)
from runtime.standing_agents.models import AgentInstance, SystemConfig
from runtime.standing_agents.queue import drain, enqueue
from runtime.store import EventJournal, Store
from runtime.store.tenants import set_feature
from runtime.streams import agent_stream, session_stream
from tests.workflows import standing_agent_support as sa
from tests.workflows.standing_agent_support import agent_env
from workflows.standing_agents.agent import StandingAgentWorkflow

__all__ = ["agent_env"]


def _calls(*lines: tuple[str, dict[str, object]]) -> dict[str, str]:
    return {"text": "\n".join(f"/call {name} {json.dumps(args)}" for name, args in lines)}


async def test_blocked_calls_are_on_the_ledger_with_their_reasons(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        rules = [{"id": "no-prod", "pattern": "(?i)production", "tools": ["soa_propose_task"]}]
        with store.session() as db:
            db.add(
                SystemConfig(
                    tenant=sa.TENANT, key="constitution.rules", value=rules, updated_at=now
                )
            )
            db.commit()
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        script = _calls(
            ("soa_propose_task", {"title": "deploy", "prompt": "deploy to production"}),
            ("compliance_dossier_record", {"title": "t", "content": "c"}),
            ("soa_send_message", {"text": "I could not do either"}),
        )
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, script, now)
        await sa.wait_turns(store, agent, 2)
        turn = sa.turns(store, agent)[1]
        recorded = sa.actions(store, agent, turn.seq)
        assert [(a.tool, a.outcome) for a in recorded] == [
            ("soa_propose_task", "blocked"),
            ("compliance_dossier_record", "blocked"),
            ("soa_send_message", "ok"),
            ("phase_complete", "ok"),
        ]
        assert recorded[0].blocked_reason == "constitution_violation"
        assert recorded[0].violations == ["no-prod"]
        assert recorded[1].blocked_reason == "tool_not_in_mode"
        assert turn.decision["actions"][0]["violations"] == ["no-prod"]
        assert turn.decision["activeMode"] == "Strategic"
        assert turn.decision_kind == DecisionKind.MESSAGE_ACKNOWLEDGED.value
        with store.session() as db:
            assert db.exec(select(CodingTask)).all() == []
        await sa.stop(handle)


async def test_an_unknown_mode_fails_closed_without_a_model_call(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        with store.session() as db:
            row = db.get(AgentInstance, agent)
            assert row is not None
            row.active_mode = "Rogue"
            db.add(row)
            db.commit()
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        turn = sa.turns(store, agent)[0]
        assert turn.llm_call_id is None
        assert turn.wait_condition == "mode_unresolved"
        assert sa.llm_attempts(store, agent) == []
        # Blocked, but not by the agent: only phase_blocked counts towards STUCK.
        assert sa.instance(store, agent).consecutive_blocked_turns == 0
        await sa.stop(handle)


class SilentModel:
    """A model that only ever talks: the episode nudges it once, then ends."""

    name = "silent"

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        return ModelReply(
            content="I think all is well.",
            tool_calls=[],
            finish_reason="stop",
            requested_model="silent",
            served_model="silent",
            usage=Usage(prompt_tokens=10, completion_tokens=5),
        )


async def test_a_turn_without_tool_calls_gets_one_nudge(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue, provider=SilentModel()):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        assert len(sa.llm_attempts(store, agent)) == 2  # the answer, and one after the nudge
        turn = sa.turns(store, agent)[0]
        assert turn.wait_condition == "no tool call after the nudge"
        await sa.stop(handle)


async def test_an_escalation_is_answered_and_resumed(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        ask = _calls(("soa_propose_decision", {"title": "Ship?", "body": "Ready to ship."}))
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, ask, now)
        await sa.wait_turns(store, agent, 2)
        assert sa.turns(store, agent)[1].decision_kind == DecisionKind.ESCALATED.value
        (request,) = sa.attention(store, agent)
        assert (request.kind, request.source, request.status) == ("decision", "soa", "open")
        answer = {
            "decisionId": request.decision_id,
            "resolution": "approve",
            "resolutionNotes": "go ahead",
        }
        await sa.send(store, handle, agent, EventKind.OPERATOR_ANSWERED_ESCALATION, answer, now)
        await sa.wait_turns(store, agent, 3)
        assert sa.turns(store, agent)[2].decision_kind == DecisionKind.ESCALATION_RESUMED.value
        # The journal events follow the ledger's commit (same activity, just after).
        types: list[str] = []
        deadline = time.monotonic() + 30
        while types.count("agent.turn") < 3 and time.monotonic() < deadline:
            stream = EventJournal(store).read(agent_stream(sa.TENANT, agent)).entries
            types = [e.type for e in stream]
            await asyncio.sleep(0.05)
        assert types.count("agent.turn") == 3
        assert "agent.decision" in types and "agent.message" in types
        await sa.stop(handle)


async def test_a_proposed_task_is_a_session_prompt_in_the_workspace(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        task = _calls(("soa_propose_task", {"title": "Tidy", "prompt": "list the files"}))
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, task, now)
        await sa.wait_turns(store, agent, 2)
        turn = sa.turns(store, agent)[1]
        assert turn.decision_kind == DecisionKind.ACTED_WITH_TOOL.value
        # agentrt's coder starts through the task's workflow: a slot, its own directory.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with store.session() as db:
                (row,) = db.exec(select(CodingTask)).all()
            if row.session_id is not None:
                break
            await asyncio.sleep(0.1)
        assert row.session_id is not None and row.holder == "agentrt-coder"
        with store.session() as db:
            session = db.get(DaemonSession, row.session_id)
            assert session is not None
            assert session.workspace_cwd.endswith(f".agentrt-tasks/{row.task_id}")
        # The session ran the prompt (the scripted model echoes it) to its end.
        journal = EventJournal(store)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            types = [e.type for e in journal.read(session_stream(row.session_id)).entries]
            if "turn_complete" in types:
                break
            await asyncio.sleep(0.1)
        assert "turn_complete" in types
        session_handle = agent_env.client.get_workflow_handle(f"session/{row.session_id}")
        await session_handle.terminate("test over")
        await sa.stop(handle)


class RefusingModel:
    """A provider that refuses every call (a bad key): the agent must survive it."""

    name = "refusing"

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        raise ModelError("HTTP 401: invalid key", status=401)


async def test_a_refused_model_call_is_recorded_and_the_agent_lives_on(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue, provider=RefusingModel()):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        turn = sa.turns(store, agent)[0]
        # The chain's one entry refused: a blocked turn naming the attempt.
        assert turn.wait_condition == "blocked: all_providers_exhausted"
        assert "settings/-: auth_error (401)" in (turn.reasoning_summary or "")
        (attempt,) = sa.llm_attempts(store, agent)
        assert attempt.outcome == "auth_error" and attempt.http_status == 401
        assert len(sa.pending_ticks(store, agent)) == 1
        description = await handle.describe()
        assert description.status is not None and description.status.name == "RUNNING"
        # An operator message the model cannot answer: consumed with its turn, and its
        # text stays visible there (nothing silently lost).
        question = {"messageId": "m1", "text": "anyone home?"}
        sent = await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, question, now)
        await sa.wait_turns(store, agent, 2)
        answered = sa.turns(store, agent)[1]
        assert answered.event_id == sent
        assert answered.event_kind == EventKind.OPERATOR_MESSAGE.value
        assert answered.decision_kind == DecisionKind.WAITING_FOR_EVENT.value
        assert answered.event_payload == question
        assert answered.wait_condition == "blocked: all_providers_exhausted"
        await sa.stop(handle)


async def test_a_reset_starts_a_new_generation_and_a_new_chain(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        # The API's reset: CAS on the generation (no tick running), drain, reseed, wake.
        with store.session() as db:
            row = db.get(AgentInstance, agent)
            assert row is not None and row.tick_in_progress is False
            row.generation = 1
            row.last_plan_input_hash = None
            row.is_building_starting_workset = True
            db.add(row)
            db.commit()
        drain(store, agent, now)
        enqueue(
            store,
            tenant=sa.TENANT,
            instance_id=agent,
            kind=EventKind.AGENT_INITIALIZED,
            payload={},
            event_id=f"init/{agent}/1",
            generation=1,
            visible_at=now,
        )
        await handle.signal("wake")
        await sa.wait_turns(store, agent, 2)
        first, second = sa.turns(store, agent)
        assert (first.generation, second.generation) == (0, 1)
        assert second.prev_hash is None  # the chain starts over
        pending = sa.pending_ticks(store, agent)
        assert [p.generation for p in pending] == [1]
        assert len(sa.messages(store, agent)) == 2  # greeted again
        await sa.stop(handle)


async def test_a_paused_agent_waits_for_start_without_ticking(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now)
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        _set_status(store, agent, AgentStatus.PAUSED)
        await handle.signal("wake")
        await _wait_attribute(handle, "Paused")
        hello = {"text": "still there?"}
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, hello, now)
        await agent_env.sleep(timedelta(days=3))  # the heartbeat falls due, paused
        assert len(sa.turns(store, agent)) == 1
        _set_status(store, agent, AgentStatus.ACTIVE)
        await handle.signal("wake")
        # The message's turn; the overdue heartbeat is replaced by the next one, 24 h on.
        await sa.wait_turns(store, agent, 2)
        kinds = [t.event_kind for t in sa.turns(store, agent)]
        assert kinds == ["AgentInitialized", "OperatorMessage"]
        (pending,) = sa.pending_ticks(store, agent)
        turn = sa.turns(store, agent)[1]
        assert sa.aware(pending.visible_at) == sa.aware(turn.created_at) + timedelta(hours=24)
        await _wait_attribute(handle, "Active")
        await sa.stop(handle)


def _set_status(store: Store, agent: str, status: AgentStatus) -> None:
    with store.session() as db:
        row = db.get(AgentInstance, agent)
        assert row is not None
        row.status = status.value
        db.add(row)
        db.commit()


async def _wait_attribute(handle: WorkflowHandle[Any, Any], status: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        described = await handle.describe()
        if described.typed_search_attributes.get(STATUS) == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"AgentrtStatus never became {status}")


class LoopingModel:
    """A model that only ever reads its memory: nothing but the history guard stops it."""

    name = "looping"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.calls += 1
        call = ToolCall(id=f"c{self.calls}", name="agent_query_memory", arguments={})
        return ModelReply(
            content="",
            tool_calls=[call],
            finish_reason="tool_calls",
            requested_model="looping",
            served_model="looping",
            usage=Usage(prompt_tokens=10, completion_tokens=5),
        )


async def test_the_history_guard_ends_an_unbounded_foundational_episode_blocked(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue, provider=LoopingModel()):
        now = await agent_env.get_current_time()
        # The foundational phase: every per-tick axis unlimited.
        agent = sa.create_instance(store, now, foundational=True)
        handle = await sa.start(agent_env.client, agent, task_queue, max_model_turns=4)
        await sa.wait_turns(store, agent, 1)
        turn = sa.turns(store, agent)[0]
        assert turn.decision_kind == DecisionKind.WAITING_FOR_EVENT.value
        assert turn.reasoning_summary == "history_guard"
        assert len(sa.llm_attempts(store, agent)) == 4
        assert sa.instance(store, agent).consecutive_blocked_turns == 1
        await sa.stop(handle)


async def test_an_agent_of_a_tenant_without_the_feature_does_not_tick(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now, feature=False)
        handle = await sa.start(agent_env.client, agent, task_queue)
        deadline = time.monotonic() + 30
        while (status := await handle.query(StandingAgentWorkflow.status)) is None or (
            status.phase != "waiting"
        ):
            assert time.monotonic() < deadline, "the workflow never waited"
            await asyncio.sleep(0.05)
        assert sa.turns(store, agent) == []
        assert sa.llm_attempts(store, agent) == []
        # The flag back on (the API wakes the tenant's agents): the agent ticks.
        set_feature(store, sa.TENANT, STANDING_AGENTS_FEATURE, True)
        await handle.signal("wake")
        await sa.wait_turns(store, agent, 1)
        await sa.stop(handle)


async def test_no_agent_ticks_while_the_deployment_switch_is_off(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    """Spec §3.2's deployment level: with AGENTRT_STANDING_AGENTS_ENABLED off, an agent of
    an enabled tenant waits (no timer, no tick); a worker with it on ticks it."""
    now = await agent_env.get_current_time()
    agent = sa.create_instance(store, now)
    async with sa.running(agent_env, store, tmp_path, task_queue, standing_agents_enabled=False):
        handle = await sa.start(agent_env.client, agent, task_queue)
        deadline = time.monotonic() + 30
        while (status := await handle.query(StandingAgentWorkflow.status)) is None or (
            status.phase != "waiting"
        ):
            assert time.monotonic() < deadline, "the workflow never waited"
            await asyncio.sleep(0.05)
        assert sa.turns(store, agent) == []
        assert sa.llm_attempts(store, agent) == []
        assert sa.pending_ticks(store, agent) == []
        # The deployment restarts with the switch on; its sweeper brings every open agent
        # back (here: the workflow started again, as signal-with-start does).
        await sa.stop(handle)
    async with sa.running(agent_env, store, tmp_path, task_queue):
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        await sa.stop(handle)


async def test_a_compliance_agent_without_a_mode_shows_its_default_mode(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now, agent_type=AgentType.COMPLIANCE)
        handle = await sa.start(
            agent_env.client, agent, task_queue, agent_type=AgentType.COMPLIANCE
        )
        await sa.wait_turns(store, agent, 1)
        described = await handle.describe()
        assert described.typed_search_attributes.get(MODE) == "Cadence"
        await sa.stop(handle)


async def test_a_foundational_agent_ends_its_phase_and_proposes_leaving_from_any_mode(
    agent_env: WorkflowEnvironment, store: Store, task_queue: str, tmp_path: Path
) -> None:
    """A SOA moved to Discovery while foundational (seen black-box: blocked there before):
    `agent_workset_complete` ends the phase and `soa_propose_mode_change` raises its
    request, though the Discovery row lists neither."""
    async with sa.running(agent_env, store, tmp_path, task_queue):
        now = await agent_env.get_current_time()
        agent = sa.create_instance(store, now, foundational=True)
        with store.session() as db:
            row = db.get(AgentInstance, agent)
            assert row is not None
            row.active_mode = "Discovery"
            db.add(row)
            db.commit()
        handle = await sa.start(agent_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1)
        script = _calls(
            ("agent_workset_complete", {}),
            ("soa_propose_mode_change", {"mode": "Strategic", "reason": "the workset is built"}),
        )
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, script, now)
        await sa.wait_turns(store, agent, 2)
        turn = sa.turns(store, agent)[1]
        recorded = sa.actions(store, agent, turn.seq)
        assert [(a.tool, a.outcome) for a in recorded][:2] == [
            ("agent_workset_complete", "ok"),
            ("soa_propose_mode_change", "ok"),
        ]
        assert sa.instance(store, agent).is_building_starting_workset is False
        await sa.stop(handle)
