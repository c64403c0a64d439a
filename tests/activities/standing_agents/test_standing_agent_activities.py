"""The standing agent's activities: retried tool calls and model steps act once; the
governance rail blocks (never raises); the scripted agent planner."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select
from temporalio.testing import ActivityEnvironment

from activities.llm import ChatMessage, OpenAIProvider, ScriptedModel, ToolCall
from activities.llm import record as llm_record
from activities.standing_agents import tool_calls as agent_tool_calls
from activities.standing_agents.agent import StandingAgentActivities
from activities.standing_agents.scripted_model import GREETING, next_call
from runtime.coding_tasks.models import CodingTask
from runtime.llm.contracts import OwnerKind, PriceSource
from runtime.sessions.models import DaemonSession
from runtime.settings import Settings
from runtime.standing_agents import catalog, configs, episode, modes, spend, ticks
from runtime.standing_agents.contracts import (
    ActionOutcome,
    AgentEvent,
    AgentType,
    DecisionKind,
    EventKind,
)
from runtime.standing_agents.episode import event_message
from runtime.standing_agents.ledger_chain import turn_hash
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AgentModeRow,
    SystemConfig,
)
from runtime.standing_agents.queue import enqueue
from runtime.standing_agents.workflow_contracts import (
    ACTION_SUMMARY_MAX,
    ActionRecord,
    CompleteTickInput,
    EventRef,
    ModelStepInput,
    RunToolInput,
)
from runtime.store import EventJournal, Store
from runtime.streams import agent_episode_stream, agent_stream
from tests.fakes.openai_server import FakeOpenAI
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _activities(store: Store, tmp_path: Path) -> StandingAgentActivities:
    settings = Settings(data_dir=tmp_path, workspace=tmp_path)
    return StandingAgentActivities(store, EventJournal(store), ScriptedModel(), settings)


def _agent_event(kind: EventKind, **payload: Any) -> AgentEvent:
    return AgentEvent(
        event_id=f"e/{kind.value}", sequence_number=1, kind=kind, payload=payload, visible_at=NOW
    )


def _event(
    store: Store, agent: str, kind: EventKind, event_id: str | None = None, **payload: Any
) -> EventRef:
    """The event queued (activities read its payload from the store) and its reference."""
    stored, _ = enqueue(
        store,
        tenant=sa.TENANT,
        instance_id=agent,
        kind=kind,
        payload=payload,
        event_id=event_id or f"e/{kind.value}",
        visible_at=NOW,
    )
    return EventRef(event_id=stored.event_id, sequence_number=stored.sequence_number, kind=kind)


def _tool(
    instance_id: str,
    call: ToolCall,
    *,
    agent_type: AgentType = AgentType.SOA,
    mode: str | None = None,
    op: str = "op-1",
) -> RunToolInput:
    resolved = catalog.resolve_mode(agent_type, mode)
    return RunToolInput(
        tenant=sa.TENANT,
        instance_id=instance_id,
        agent_type=agent_type,
        generation=0,
        event_id="e/1",
        op_id=f"agent/{sa.TENANT}/{instance_id}/e/1/tool1/{op}",
        call=call,
        mode_tools=resolved.tools,
        now=NOW,
    )


async def test_a_retried_tool_call_writes_its_message_once(store: Store, tmp_path: Path) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    call = ToolCall(id="call_1", name="soa_send_message", arguments={"text": "hello"})
    first = await env.run(activities.run_tool, _tool(agent, call))
    env.info = dataclasses.replace(env.info, attempt=2)
    again = await env.run(activities.run_tool, _tool(agent, call))
    assert first.action.outcome == again.action.outcome == "ok"
    assert first.action == again.action
    assert [m.text for m in sa.messages(store, agent)] == ["hello"]
    journal = EventJournal(store)
    events = journal.read(agent_stream(sa.TENANT, agent)).entries
    assert [e.type for e in events] == ["agent.message"]
    body = events[0].data["data"]  # the session stream's envelope
    assert body["direction"] == "agent" and body["text"] == "hello"
    transcript = journal.read(agent_episode_stream(sa.TENANT, agent, "e/1")).entries
    # The tool message and the full result (the ledger's copy), once each.
    assert [e.type for e in transcript] == ["message", "action"]
    assert transcript[1].data["result"] == {"messageId": sa.messages(store, agent)[0].message_id}
    # The same decision proposed twice (a retry) is one attention request.
    decision = ToolCall(
        id="call_2", name="soa_propose_decision", arguments={"title": "t", "body": "b"}
    )
    one = await env.run(activities.run_tool, _tool(agent, decision, op="op-2"))
    two = await env.run(activities.run_tool, _tool(agent, decision, op="op-2"))
    assert one.action == two.action
    assert len(sa.attention(store, agent)) == 1


async def test_a_retried_model_step_is_paid_once(store: Store, tmp_path: Path) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    request = ModelStepInput(
        tenant=sa.TENANT,
        instance_id=agent,
        agent_type=AgentType.SOA,
        generation=0,
        event=_event(store, agent, EventKind.AGENT_INITIALIZED),
        mode=catalog.resolve_mode(AgentType.SOA, None),
        call_id=f"agent/{sa.TENANT}/{agent}/init/llm1",
        step=1,
        now=NOW,
    )
    first = await env.run(activities.model_step, request)
    env.info = dataclasses.replace(env.info, attempt=2)
    again = await env.run(activities.model_step, request)
    assert first == again
    assert [c.name for c in first.tool_calls] == ["soa_send_message"]
    attempts = sa.llm_attempts(store, agent)
    assert len(attempts) == 1
    assert attempts[0].site == "Agent:Planning" and attempts[0].owner_kind == "agent"
    assert attempts[0].cost_usd == 0.0  # scripted is free
    transcript = EventJournal(store).read(
        agent_episode_stream(sa.TENANT, agent, "e/AgentInitialized")
    )
    roles = [e.data["role"] for e in transcript.entries]
    assert roles == ["system", "user", "user", "assistant"]  # opening once, answer once


async def test_the_rail_blocks_and_never_raises(store: Store, tmp_path: Path) -> None:
    agent = sa.create_instance(store, NOW, agent_type=AgentType.COMPLIANCE)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    task = ToolCall(id="c1", name="soa_propose_task", arguments={"title": "t", "prompt": "p"})
    outside = await env.run(
        activities.run_tool, _tool(agent, task, agent_type=AgentType.COMPLIANCE, op="a")
    )
    assert outside.action.outcome == "blocked"
    assert outside.action.blocked_reason == "tool_not_in_mode"
    with store.session() as db:
        rules = [{"id": "no-secrets", "pattern": "(?i)password", "tools": ["soa_send_message"]}]
        db.add(
            SystemConfig(tenant=sa.TENANT, key="constitution.rules", value=rules, updated_at=NOW)
        )
        db.commit()
    leak = ToolCall(id="c2", name="soa_send_message", arguments={"text": "the Password is 1234"})
    blocked = await env.run(
        activities.run_tool, _tool(agent, leak, agent_type=AgentType.COMPLIANCE, op="b")
    )
    assert blocked.action.outcome == "blocked"
    assert blocked.action.blocked_reason == "constitution_violation"
    assert blocked.action.violations == ["no-secrets"]
    assert sa.messages(store, agent) == []
    budget = _tool(
        agent,
        ToolCall(id="c3", name="soa_send_message", arguments={"text": "hi"}),
        agent_type=AgentType.COMPLIANCE,
        op="c",
    )
    spent = await env.run(
        activities.run_tool, budget.model_copy(update={"exhausted_axis": "tokens"})
    )
    assert spent.action.blocked_reason == "budget_exhausted:tokens"
    mode = ToolCall(
        id="c4", name="soa_propose_mode_change", arguments={"mode": "Nope", "reason": "r"}
    )
    bad = await env.run(
        activities.run_tool, _tool(agent, mode, agent_type=AgentType.COMPLIANCE, op="d")
    )
    assert bad.action.outcome == "error"  # validated against the catalogue, not applied
    good = ToolCall(
        id="c5", name="soa_propose_mode_change", arguments={"mode": "Research", "reason": "r"}
    )
    ok = await env.run(
        activities.run_tool, _tool(agent, good, agent_type=AgentType.COMPLIANCE, op="e")
    )
    assert ok.action.outcome == "ok" and ok.action.summary is not None
    assert '"applied": false' in ok.action.summary
    assert sa.instance(store, agent).active_mode is None
    # Arguments outside the schema the model was shown: an error outcome, told to the model.
    empty = ToolCall(id="c6", name="soa_send_message", arguments={"txt": "hi"})
    wrong = await env.run(
        activities.run_tool, _tool(agent, empty, agent_type=AgentType.COMPLIANCE, op="f")
    )
    assert wrong.action.outcome == "error" and wrong.action.summary is not None
    assert "text" in wrong.action.summary


def test_no_mode_outside_the_soa_offers_propose_task() -> None:
    for mode in catalog.MODES:
        if mode.agent_type != AgentType.SOA:
            assert "soa_propose_task" not in mode.tools


def _episode(event: AgentEvent, *answers: ChatMessage) -> list[ChatMessage]:
    return [ChatMessage(role="system", content="s"), event_message(event), *answers]


def _calls(messages: list[ChatMessage]) -> list[ToolCall]:
    """Drive the scripted planner to the end of its episode."""
    issued: list[ToolCall] = []
    while (call := next_call(messages)) is not None:
        issued.append(call)
        messages = [*messages, ChatMessage(role="assistant", tool_calls=[call])]
        messages.append(ChatMessage(role="tool", content="{}", tool_call_id=call.id))
    return issued


def test_the_scripted_planner_greets_answers_and_follows_call_lines() -> None:
    init = _calls(_episode(_agent_event(EventKind.AGENT_INITIALIZED)))
    assert [(c.name, c.arguments) for c in init] == [
        ("soa_send_message", {"text": GREETING}),
        ("phase_complete", {"summary": "done"}),
    ]
    chat = _calls(_episode(_agent_event(EventKind.OPERATOR_MESSAGE, text="how are you?")))
    assert chat[0].name == "soa_send_message" and "how are you?" in chat[0].arguments["text"]
    assert chat[1].name == "phase_complete"
    script = 'please\n/call agent_query_memory {"limit": 2}\n/call phase_blocked {"reason": "x"}'
    scripted = _calls(_episode(_agent_event(EventKind.OPERATOR_MESSAGE, text=script)))
    assert [c.name for c in scripted] == ["agent_query_memory", "phase_blocked"]
    answered = _agent_event(
        EventKind.OPERATOR_ANSWERED_ESCALATION,
        decisionId="d1",
        resolution="approve",
        resolutionNotes='/call soa_send_message {"text": "resuming"}',
    )
    resumed = _calls(_episode(answered))
    assert [c.name for c in resumed] == ["soa_send_message", "phase_complete"]
    heartbeat = _calls(_episode(_agent_event(EventKind.AGENT_TICK)))
    assert [c.name for c in heartbeat] == ["phase_complete"]
    assert len({c.id for c in scripted}) == len(scripted)


async def test_a_retried_complete_tick_records_one_turn_and_one_stuck_request(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    event = _event(store, agent, EventKind.OPERATOR_MESSAGE, text="x")
    request = CompleteTickInput(
        tenant=sa.TENANT,
        instance_id=agent,
        generation=0,
        event=event,
        now=NOW,
        decision_kind=DecisionKind.WAITING_FOR_EVENT,
        plan_hash="h",
        consecutive_blocked_turns=3,
        close_stuck=True,
        stuck_reason="blocked thrice",
    )
    first = await env.run(activities.complete_tick, request)
    again = await env.run(activities.complete_tick, request)
    assert first == again and first.closed and first.seq == 1
    assert len(sa.turns(store, agent)) == 1
    assert [a.kind for a in sa.attention(store, agent)] == ["stuck"]
    assert sa.pending_ticks(store, agent) == []
    stream = EventJournal(store).read(agent_stream(sa.TENANT, agent)).entries
    assert [e.type for e in stream] == ["agent.turn", "agent.status", "agent.decision"]
    turn = sa.turns(store, agent)[0]
    assert turn.prev_hash is None
    assert turn.hash == turn_hash(None, ticks.chained_turn(turn))


async def test_workset_complete_ends_the_foundational_phase(store: Store, tmp_path: Path) -> None:
    agent = sa.create_instance(store, NOW, foundational=True)
    activities = _activities(store, tmp_path)
    call = ToolCall(id="c1", name="agent_workset_complete", arguments={})
    done = await ActivityEnvironment().run(activities.run_tool, _tool(agent, call))
    assert done.action.outcome == "ok"
    assert sa.instance(store, agent).is_building_starting_workset is False


async def test_the_per_turn_output_cap_reaches_the_openai_endpoint(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW, foundational=True)
    with FakeOpenAI() as fake:
        fake.queue_tool_calls([{"name": "phase_complete", "arguments": {}}], model="gpt-4o")
        settings = Settings(
            data_dir=tmp_path,
            workspace=tmp_path,
            model_provider="openai",
            openai_base_url=fake.base_url,
        )
        provider = OpenAIProvider(base_url=fake.base_url, model="gpt-4o")
        activities = StandingAgentActivities(store, EventJournal(store), provider, settings)
        request = ModelStepInput(
            tenant=sa.TENANT,
            instance_id=agent,
            agent_type=AgentType.SOA,
            generation=0,
            event=_event(store, agent, EventKind.AGENT_INITIALIZED),
            mode=catalog.resolve_mode(AgentType.SOA, None),
            call_id="c/llm1",
            step=1,
            max_output_tokens=16_384,
            now=NOW,
        )
        step = await ActivityEnvironment().run(activities.model_step, request)
        assert fake.requests[0].body["max_tokens"] == 16_384
        assert "soa_propose_task" in [t["function"]["name"] for t in fake.requests[0].body["tools"]]
    assert [c.name for c in step.tool_calls] == ["phase_complete"]
    (attempt,) = sa.llm_attempts(store, agent)
    assert attempt.served_model == "gpt-4o" and attempt.cost_usd > 0
    assert attempt.price_version is not None and attempt.price_version.startswith("genai-prices")


async def test_telemetry_counts_the_last_24_hours(store: Store, tmp_path: Path) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    failed = ActionRecord(tool="compliance_dossier_list", outcome=ActionOutcome.ERROR, summary="x")
    for n, at in enumerate((NOW - timedelta(days=2), NOW - timedelta(hours=1))):
        request = CompleteTickInput(
            tenant=sa.TENANT,
            instance_id=agent,
            generation=0,
            event=_event(store, agent, EventKind.EXTERNAL_SIGNAL_RECEIVED, f"signal/{n}"),
            now=at,
            decision_kind=DecisionKind.WAITING_FOR_EVENT,
            plan_hash="h",
            actions=[failed],
        )
        await env.run(activities.complete_tick, request)
    call = ToolCall(id="t", name="soa_query_telemetry", arguments={})
    seen = await env.run(activities.run_tool, _tool(agent, call))
    assert seen.action.summary is not None
    seen_result = json.loads(seen.action.summary)
    assert seen_result["failedToolActions"] == 1  # the old one is out of the window
    assert seen_result["bucket"] == "degraded"


async def test_a_task_beyond_the_session_cap_is_blocked(store: Store, tmp_path: Path) -> None:
    agent = sa.create_instance(store, NOW)
    with store.session() as db:
        db.add(DaemonSession(session_id="s1", workspace_cwd="/w", scope="thread", created_at=NOW))
        db.commit()
    settings = Settings(data_dir=tmp_path, workspace=tmp_path, max_sessions=1)
    activities = StandingAgentActivities(store, EventJournal(store), ScriptedModel(), settings)
    call = ToolCall(id="c1", name="soa_propose_task", arguments={"title": "t", "prompt": "p"})
    refused = await ActivityEnvironment().run(activities.run_tool, _tool(agent, call))
    assert refused.action.outcome == "blocked"
    assert (refused.action.blocked_reason or "").startswith("outside_boundary")
    with store.session() as db:  # the boundary before the row: no open task in the roster
        assert db.exec(select(CodingTask).where(col(CodingTask.instance_id) == agent)).all() == []


async def test_a_large_tool_result_stays_out_of_history_and_reaches_the_ledger(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    for n in range(3):  # turns whose long summaries make agent_query_memory's result large
        earlier = _event(store, agent, EventKind.EXTERNAL_SIGNAL_RECEIVED, f"signal/{n}")
        await env.run(
            activities.complete_tick,
            CompleteTickInput(
                tenant=sa.TENANT,
                instance_id=agent,
                generation=0,
                event=earlier,
                now=NOW,
                decision_kind=DecisionKind.PLANNED,
                plan_hash="h",
                reasoning_summary="r" * 3000,
            ),
        )
    event = _event(store, agent, EventKind.OPERATOR_MESSAGE, "e/1", text="remember?")
    call = ToolCall(id="m", name="agent_query_memory", arguments={"kind": "turns"})
    ran = await env.run(activities.run_tool, _tool(agent, call))
    # What history carries is bounded, whatever the result's size.
    assert ran.action.summary is not None and len(ran.action.summary) <= ACTION_SUMMARY_MAX
    assert len(ran.model_dump_json()) < 2 * ACTION_SUMMARY_MAX
    done = await env.run(
        activities.complete_tick,
        CompleteTickInput(
            tenant=sa.TENANT,
            instance_id=agent,
            generation=0,
            event=event,
            now=NOW,
            decision_kind=DecisionKind.ACTED_WITH_TOOL,
            plan_hash="h2",
            actions=[ran.action],
        ),
    )
    (stored,) = sa.actions(store, agent, done.seq)
    assert stored.result is not None
    assert [t["summary"] for t in stored.result["turns"]] == ["r" * 3000] * 3
    # The turn's payload is read from the queue, not from history.
    assert sa.turns(store, agent)[-1].event_payload == {"text": "remember?"}


async def test_the_credit_is_rechecked_before_every_model_call(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW)
    settings = Settings(data_dir=tmp_path, workspace=tmp_path, agent_weekly_credit_usd=0.0)
    activities = StandingAgentActivities(store, EventJournal(store), ScriptedModel(), settings)
    request = ModelStepInput(
        tenant=sa.TENANT,
        instance_id=agent,
        agent_type=AgentType.SOA,
        generation=0,
        event=_event(store, agent, EventKind.AGENT_INITIALIZED),
        mode=catalog.resolve_mode(AgentType.SOA, None),
        call_id="c/llm7",
        step=7,
        now=NOW,
    )
    step = await ActivityEnvironment().run(activities.model_step, request)
    assert step.credit_exhausted and step.tool_calls == []
    assert sa.llm_attempts(store, agent) == []


async def test_an_attempt_killed_mid_call_is_recorded_as_a_timeout(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    call_id = f"agent/{sa.TENANT}/{agent}/init/llm1"
    owner = llm_record.CallOwner(
        call_id=call_id,
        tenant=sa.TENANT,
        owner_kind=OwnerKind.AGENT,
        owner_id=agent,
        site="Agent:Planning",
        provider="settings",
        requested_model="scripted",
        purpose=llm_record.AGENT_PURPOSE,
    )
    # The first attempt's worker died between its request and its answer.
    llm_record.begin_attempt(store, owner, attempt=1, now=NOW)
    assert [a.outcome for a in sa.llm_attempts(store, agent)] == ["in_flight"]
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=2)
    request = ModelStepInput(
        tenant=sa.TENANT,
        instance_id=agent,
        agent_type=AgentType.SOA,
        generation=0,
        event=_event(store, agent, EventKind.AGENT_INITIALIZED),
        mode=catalog.resolve_mode(AgentType.SOA, None),
        call_id=call_id,
        step=1,
        now=NOW,
    )
    await env.run(activities.model_step, request)
    attempts = sorted(sa.llm_attempts(store, agent), key=lambda a: a.ordinal)
    assert [(a.ordinal, a.outcome) for a in attempts] == [(1, "timeout"), (2, "ok")]


async def test_the_weekly_credit_trips_on_a_model_no_price_table_knows(
    store: Store, tmp_path: Path
) -> None:
    """A local server (llama.cpp's: no usage streamed) serving a model named nowhere: its
    calls were recorded at $0 and the week's credit never ran out. Now they are charged
    (estimated tokens at the default price), warned about, and the credit trips.

    The credit is large enough for the first call's reservation (its worst case at the
    default price, runtime/llm/reservation.py); the operator then lowers it to what was
    spent, which only a charged call can have reached."""
    agent = sa.create_instance(store, NOW)
    served = "llama-3.2-3b-instruct-q4_k_m.gguf"
    with FakeOpenAI() as fake:
        settings = Settings(
            data_dir=tmp_path,
            workspace=tmp_path,
            model_provider="openai",
            openai_base_url=fake.base_url,
            openai_model="llama3.2",
            agent_weekly_credit_usd=5.0,
        )
        provider = OpenAIProvider(base_url=fake.base_url, model="llama3.2")
        activities = StandingAgentActivities(store, EventJournal(store), provider, settings)
        env = ActivityEnvironment()
        request = ModelStepInput(
            tenant=sa.TENANT,
            instance_id=agent,
            agent_type=AgentType.SOA,
            generation=0,
            event=_event(store, agent, EventKind.AGENT_INITIALIZED),
            mode=catalog.resolve_mode(AgentType.SOA, None),
            call_id="c/llm1",
            step=1,
            now=NOW,
        )
        call = {"name": "soa_send_message", "arguments": {"text": "hello"}}
        fake.queue_tool_calls([call], model=served, send_usage=False)
        first = await env.run(activities.model_step, request)
        # The same step again (its worker was lost after the answer): paid and warned once.
        env.info = dataclasses.replace(env.info, attempt=2)
        again = await env.run(activities.model_step, request)
        assert (again.tool_calls, again.cost_usd) == (first.tool_calls, first.cost_usd)
        assert again.report is not None and again.report.price_source is PriceSource.DEFAULT
        assert len(fake.requests) == 1
        (charged,) = sa.llm_attempts(store, agent)
        assert charged.cost_usd > 0
        configs.put_config(store, sa.TENANT, "AgentDispatcher:WeeklyCreditUsd", charged.cost_usd)
        # The next call of the week finds the credit spent: no request is sent.
        following = request.model_copy(update={"call_id": "c/llm2", "step": 2})
        later = await env.run(activities.model_step, following)
        assert len(fake.requests) == 1
    assert [c.name for c in first.tool_calls] == ["soa_send_message"]
    (attempt,) = sa.llm_attempts(store, agent)
    assert attempt.served_model == served and attempt.requested_model == "llama3.2"
    assert (attempt.price_source, attempt.usage_source) == ("default", "estimated")
    assert attempt.tokens_in > 100 and attempt.tokens_out > 0
    assert attempt.cost_usd == first.cost_usd > 0
    assert first.tokens == attempt.tokens_in + attempt.tokens_out  # the tick's token budget
    assert later.credit_exhausted and later.tool_calls == []
    assert later.credit_regenerates_at == NOW + timedelta(days=7)
    gate = spend.credit_gate(store, settings, sa.TENANT, NOW)
    assert not gate.ok and gate.remaining_usd == 0.0
    events = EventJournal(store).read(agent_stream(sa.TENANT, agent)).entries
    [warning] = [e for e in events if e.type == "agent.cost_warning"]
    body = warning.data["data"]
    assert (body["instanceId"], body["callId"], body["attemptId"]) == (
        agent,
        "c/llm1",
        attempt.attempt_id,
    )
    assert (body["servedModel"], body["priceSource"], body["usageSource"]) == (
        served,
        "default",
        "estimated",
    )
    assert body["costUsd"] == pytest.approx(attempt.cost_usd)


async def test_a_catastrophic_constitution_pattern_blocks_instead_of_stalling(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_tool_calls, "CONSTITUTION_TIMEOUT_S", 0.2)
    agent = sa.create_instance(store, NOW)
    with store.session() as db:
        rules = [{"id": "redos", "pattern": "^(a+)+$", "tools": ["soa_send_message"]}]
        db.add(
            SystemConfig(tenant=sa.TENANT, key="constitution.rules", value=rules, updated_at=NOW)
        )
        db.commit()
    call = ToolCall(id="c", name="soa_send_message", arguments={"text": "a" * 30 + "!"})
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    # Minutes of backtracking in the check's own process, killed at the time bound.
    ran = await env.run(activities.run_tool, _tool(agent, call))
    assert ran.action.outcome == "blocked"
    assert ran.action.blocked_reason == "constitution_timeout"
    assert sa.messages(store, agent) == []
    # The next check gets a fresh process.
    fine = ToolCall(id="d", name="soa_send_message", arguments={"text": "bbb"})
    sent = await env.run(activities.run_tool, _tool(agent, fine, op="fine"))
    assert sent.action.outcome == "ok"


async def test_memory_and_open_items_start_over_with_a_new_generation(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW)
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()
    said = ToolCall(id="s", name="soa_send_message", arguments={"text": "old generation"})
    await env.run(activities.run_tool, _tool(agent, said, op="old-msg"))
    ask = ToolCall(id="d", name="soa_propose_decision", arguments={"title": "old", "body": "b"})
    await env.run(activities.run_tool, _tool(agent, ask, op="old-decision"))
    # A reset (as the API does it): the generation bumped, its AgentInitialized queued later.
    with store.session() as db:
        row = db.get(AgentInstance, agent)
        assert row is not None
        row.generation = 1
        db.add(row)
        db.commit()
    later = NOW + timedelta(minutes=1)
    enqueue(
        store,
        tenant=sa.TENANT,
        instance_id=agent,
        kind=EventKind.AGENT_INITIALIZED,
        payload={},
        event_id=f"init/{agent}/1",
        visible_at=later,
        generation=1,
    )
    with store.session() as db:  # queued after everything of generation 0
        event = db.exec(
            select(AgentEventRow).where(col(AgentEventRow.event_id) == f"init/{agent}/1")
        ).one()
        event.created_at = later
        db.add(event)
        db.commit()
    recall = ToolCall(id="q", name="agent_query_memory", arguments={"kind": "messages"})
    request = _tool(agent, recall, op="recall").model_copy(update={"generation": 1, "now": later})
    seen = await env.run(activities.run_tool, request)
    assert seen.action.summary is not None
    assert json.loads(seen.action.summary)["messages"] == []
    assert episode.roster(store, agent, 1) == {"tasks": [], "escalations": []}
    assert [a.title for a in sa.attention(store, agent)] == ["old"]  # still there, for humans


async def test_a_mode_proposal_is_validated_against_the_catalogue_approval_uses(
    store: Store, tmp_path: Path
) -> None:
    agent = sa.create_instance(store, NOW, agent_type=AgentType.COMPLIANCE)
    with store.session() as db:  # the type's stored catalogue, which replaces the code seed
        db.add(
            AgentModeRow(
                agent_type=AgentType.COMPLIANCE.value,
                name="Audit",
                description="d",
                prompt_fragment="p",
                tools=["soa_send_message"],
                is_default=True,
                system_seed=False,
            )
        )
        db.commit()
    assert [m.name for m in modes.catalogue(store, AgentType.COMPLIANCE)] == ["Audit"]
    activities = _activities(store, tmp_path)
    env = ActivityEnvironment()

    def propose(mode: str, op: str) -> RunToolInput:
        call = ToolCall(
            id=op, name="soa_propose_mode_change", arguments={"mode": mode, "reason": "r"}
        )
        return _tool(agent, call, agent_type=AgentType.COMPLIANCE, op=op)

    stored = await env.run(activities.run_tool, propose("Audit", "a"))
    assert stored.action.outcome == "ok"
    seed_only = await env.run(activities.run_tool, propose("Research", "b"))
    assert seed_only.action.outcome == "error"  # approval would refuse it too
