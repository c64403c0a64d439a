"""The session and agent-tools model steps as single attempts through the gateway: an
attempt's report, the stored answer a repeated attempt returns without paying again, and
steps sent without an attempt (their prompt or turn began before the chain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import col, select
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.agent_tools.turn import AgentToolsActivities
from activities.llm import ScriptedModel
from activities.sessions.session import SessionActivities
from runtime.agent_tools.contracts import ModelStepInput as TurnStepInput
from runtime.llm.contracts import (
    SESSION_SITE,
    SETTINGS_PRESET,
    AttemptOutcome,
    AttemptSpec,
    PriceSource,
    UsageSource,
)
from runtime.llm.models import LlmCallAttempt
from runtime.sessions.contracts import ModelStepInput as SessionStepInput
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import NewEvent
from runtime.streams import session_stream, session_transcript_stream
from tests.fakes.openai_server import FakeOpenAI


def _attempts(store: Store) -> list[LlmCallAttempt]:
    with store.session() as db:
        query = select(LlmCallAttempt).order_by(col(LlmCallAttempt.ordinal))
        return list(db.exec(query).all())


def _openai(tmp_path: Path, fake: FakeOpenAI) -> Settings:
    return Settings(
        data_dir=tmp_path,
        workspace=tmp_path,
        model_provider="openai",
        openai_base_url=fake.base_url,
        openai_model="qwen-test",
    )


def _turn_step(step: int = 0, attempt: AttemptSpec | None = None) -> TurnStepInput:
    return TurnStepInput(
        instance="local",
        workspace="demo",
        turn_id="t1",
        transcript_stream="test/turn/t1",
        step=step,
        attempt=attempt,
    )


async def test_a_turn_step_without_an_attempt_makes_the_first_of_the_live_plan(
    store: Store, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, workspace=tmp_path)
    activities = AgentToolsActivities(
        store, EventJournal(store), ScriptedModel(), settings=settings
    )
    result = await ActivityEnvironment().run(activities.model_step, _turn_step())
    assert result.report is not None and result.report.outcome is AttemptOutcome.OK
    [row] = _attempts(store)
    assert (row.owner_kind, row.owner_id, row.tenant) == ("turn", "t1", "demo")
    assert (row.site, row.preset_id, row.outcome) == ("Turn:Model", "settings", "ok")


async def test_a_turn_step_without_an_attempt_fails_as_before(store: Store, tmp_path: Path) -> None:
    """Temporal retries the one activity of such a step: a 5xx may be retried, a 401 not."""
    with FakeOpenAI() as fake:
        settings = _openai(tmp_path, fake)
        activities = AgentToolsActivities(
            store, EventJournal(store), ScriptedModel(), settings=settings
        )
        fake.queue_error(503)
        with pytest.raises(ApplicationError) as server:
            await ActivityEnvironment().run(activities.model_step, _turn_step(0))
        fake.queue_error(401)
        with pytest.raises(ApplicationError) as refused:
            await ActivityEnvironment().run(activities.model_step, _turn_step(1))
    assert not server.value.non_retryable
    assert refused.value.non_retryable


async def test_a_repeated_session_attempt_returns_the_stored_answer_without_paying(
    store: Store, tmp_path: Path
) -> None:
    with FakeOpenAI() as fake:
        settings = _openai(tmp_path, fake)
        journal = EventJournal(store)
        activities = SessionActivities(store, journal, ScriptedModel(), settings)
        user = {"role": "user", "content": "hello", "promptId": "p1", "disabledTools": []}
        journal.append_many(session_transcript_stream("s1"), [NewEvent(type="message", data=user)])
        spec = AttemptSpec(
            call_id="session/s1/p1/s0",
            attempt_index=0,
            site=SESSION_SITE,
            preset_id=SETTINGS_PRESET,
            fallback_step=0,
            provider="settings",
            credential_alias=None,
            model="qwen-test",
        )
        request = SessionStepInput(
            session_id="s1", prompt_id="p1", step=0, run_id="r1", model_id="qwen-test"
        )
        request.attempt = spec
        request.tenant = str(tmp_path)
        fake.queue_text("Hello back.")
        first = await ActivityEnvironment().run(activities.model_step, request)
        # The same attempt again (a worker lost after the answer was stored), then the
        # chain's next attempt: neither calls the provider.
        again = await ActivityEnvironment().run(activities.model_step, request)
        request.attempt = spec.model_copy(update={"attempt_index": 1})
        later = await ActivityEnvironment().run(activities.model_step, request)
        requests = len(fake.requests)
    assert requests == 1
    assert first.content == again.content == later.content == "Hello back."
    assert first.report is not None and first.report.outcome is AttemptOutcome.OK
    assert later.report is not None and later.report.outcome is AttemptOutcome.OK
    [row] = _attempts(store)
    assert (row.owner_kind, row.owner_id, row.outcome) == ("session", "s1", "ok")
    streamed = journal.read(session_stream("s1"), 0, 1000).entries
    chunks = [e for e in streamed if e.type == "session_update"]
    text = "".join(e.data["data"]["update"]["content"]["text"] for e in chunks)
    assert text == "Hello back."  # streamed once
    # `qwen-test` has no price and the fake reported usage: the price was a guess, once.
    assert [e.type for e in streamed if e.type != "session_update"] == ["model_cost_warning"]


async def test_text_of_an_attempt_lost_mid_stream_is_marked_before_the_next(
    store: Store, tmp_path: Path
) -> None:
    """A worker killed while its attempt streamed could not say the text was void: the
    next attempt marks it (`model_attempt_failed`) before its own text."""
    with FakeOpenAI() as fake:
        settings = _openai(tmp_path, fake)
        journal = EventJournal(store)
        activities = SessionActivities(store, journal, ScriptedModel(), settings)
        user = {"role": "user", "content": "hello", "promptId": "p1", "disabledTools": []}
        journal.append_many(session_transcript_stream("s1"), [NewEvent(type="message", data=user)])
        for n, piece in enumerate(("Half ", "an an"), start=1):
            update = {"sessionUpdate": "agent_message_chunk", "content": {"text": piece}}
            chunk = NewEvent(type="session_update", data={"sessionId": "s1", "update": update})
            journal.append_many(session_stream("s1"), [chunk], dedupe_key=f"r1/p1/s0/a0/c{n}")
        spec = AttemptSpec(
            call_id="session/s1/p1/s0",
            attempt_index=1,
            site=SESSION_SITE,
            preset_id=SETTINGS_PRESET,
            fallback_step=0,
            provider="settings",
            credential_alias=None,
            model="qwen-test",
        )
        request = SessionStepInput(
            session_id="s1", prompt_id="p1", step=0, run_id="r1", model_id="qwen-test"
        )
        request.attempt = spec
        fake.queue_text("Whole.")
        result = await ActivityEnvironment().run(activities.model_step, request)
    assert result.content == "Whole."
    events = journal.read(session_stream("s1"), 0, 1000).entries
    kinds = [e.type for e in events]
    marker = kinds.index("model_attempt_failed")
    assert kinds[:marker] == ["session_update", "session_update"]
    data = events[marker].data["data"]
    assert data["attemptId"] == "session/s1/p1/s0/a0"
    assert data["discardedChunks"] == 2
    after = [e for e in events[marker + 1 :] if e.type == "session_update"]
    assert "".join(e.data["data"]["update"]["content"]["text"] for e in after) == "Whole."


async def test_a_server_like_llama_cpp_is_charged_and_the_session_is_warned(
    store: Store, tmp_path: Path
) -> None:
    """No usage streamed (even asked with include_usage) and a served model no price table
    knows: the attempt has estimated tokens at the default price, never $0, and the
    session's stream says so."""
    with FakeOpenAI() as fake:
        settings = _openai(tmp_path, fake)
        journal = EventJournal(store)
        activities = SessionActivities(store, journal, ScriptedModel(), settings)
        user = {"role": "user", "content": "hello " * 40, "promptId": "p1", "disabledTools": []}
        journal.append_many(session_transcript_stream("s1"), [NewEvent(type="message", data=user)])
        request = SessionStepInput(
            session_id="s1", prompt_id="p1", step=0, run_id="r1", model_id="qwen-test"
        )
        request.attempt = AttemptSpec(
            call_id="session/s1/p1/s0",
            attempt_index=0,
            site=SESSION_SITE,
            preset_id=SETTINGS_PRESET,
            fallback_step=0,
            provider="settings",
            credential_alias=None,
            model="qwen-test",
        )
        served = "qwen2.5-0.5b-instruct-q4_k_m.gguf"
        fake.queue_text("Hello back, " * 10, send_usage=False, model=served)
        result = await ActivityEnvironment().run(activities.model_step, request)
        assert fake.requests[0].body["stream_options"] == {"include_usage": True}
    assert result.report is not None
    assert result.report.price_source is PriceSource.DEFAULT
    assert result.report.usage_source is UsageSource.ESTIMATED
    [row] = _attempts(store)
    assert row.served_model == served
    assert row.tokens_in > 60 and row.tokens_out == 30  # "Hello back, " is 12 characters
    expected = (row.tokens_in * 10.0 + row.tokens_out * 30.0) / 1e6
    assert row.cost_usd == pytest.approx(expected) and row.cost_usd > 0
    assert (row.price_source, row.usage_source) == ("default", "estimated")
    assert row.price_version == "default:10/30"
    [warning] = [
        e for e in journal.read(session_stream("s1"), 0, 1000).entries if e.type != "session_update"
    ]
    assert warning.type == "model_cost_warning" and warning.data["promptId"] == "p1"
    body = warning.data["data"]
    assert (body["sessionId"], body["attemptId"]) == ("s1", "session/s1/p1/s0/a0")
    assert (body["servedModel"], body["requestedModel"]) == (served, "qwen-test")
    assert body["reasons"] == ["price_unknown", "usage_not_reported"]
    assert body["costUsd"] == pytest.approx(row.cost_usd)
    assert fake.base_url not in json.dumps(body)
