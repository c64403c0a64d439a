"""The fallback chain across `kill -9` of the worker: resumed at the next attempt, no
attempt that succeeded or failed made twice, and a lost attempt closed as a timeout.

A standing agent's planning site is bound to a preset over one provider with two keys
(FakeOpenAI answers per key); the worker is a real `cli worker` process on a real
Temporal dev server.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import col, select
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from runtime.llm import config_store
from runtime.llm.contracts import CredentialConfig
from runtime.llm.models import LlmCallAttempt
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.fakes.openai_server import FakeOpenAI, FakeReply
from tests.worker_processes import kill9
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAN = FakeReply(
    tool_calls=[{"name": "phase_complete", "arguments": {"summary": "done"}}],
    finish_reason="tool_calls",
    model="served-b",
    usage=(100, 10),
)


def _configure(store: Store, settings: Settings, fake: FakeOpenAI, keys: list[str]) -> None:
    credentials = [CredentialConfig(alias=k, apiKey=k) for k in keys]
    config_store.put_provider(store, settings, "pa", fake.base_url, credentials, NOW)
    config_store.put_preset(store, settings, "plan", "model-a", "pa", None, [], NOW)
    config_store.bind_site(store, settings, "Agent:Planning", "plan", NOW)


def _attempts(store: Store, agent: str) -> list[tuple[int, str, str | None]]:
    with store.session() as db:
        rows = db.exec(
            select(LlmCallAttempt)
            .where(col(LlmCallAttempt.owner_id) == agent)
            .order_by(col(LlmCallAttempt.ordinal))
        ).all()
    return [(r.ordinal, r.outcome, r.credential_alias) for r in rows]


async def _completed_activities(handle: WorkflowHandle[object, object]) -> int:
    history = await handle.fetch_history()
    return sum(
        1 for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    )


async def _completed_activities_at_least(handle: WorkflowHandle[object, object], n: int) -> bool:
    return await _completed_activities(handle) >= n


async def _until(predicate: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_worker_killed_between_attempts_resumes_at_the_next_attempt(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / ".data"
    settings = Settings(data_dir=data_dir, workspace=tmp_path)
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        with FakeOpenAI() as fake:
            # The first key is rate-limited for 5 s: the chain waits that long (a durable
            # timer) before the second key, and the worker dies during the wait.
            fake.answer_key("k-busy", FakeReply(status=429, retry_after="5"))
            fake.answer_key("k-plan", PLAN)
            _configure(store, settings, fake, ["k-busy", "k-plan"])
            workers.append(sa.worker_process(dev_env, task_queue, data_dir))
            now = await dev_env.get_current_time()
            agent = sa.create_instance(store, now)
            handle = await sa.start(dev_env.client, agent, task_queue)
            await _until(lambda: len(fake.requests_with_key("k-busy")) == 1, "the 429")
            # begin_tick, then the rate-limited attempt: both completed in history, so the
            # workflow is on the Retry-After timer, between its two attempts.
            await _until(
                lambda: _completed_activities_at_least(handle, 2), "the first attempt's end"
            )
            kill9(workers[-1])
            workers.append(sa.worker_process(dev_env, task_queue, data_dir))
            await sa.wait_turns(store, agent, 1, timeout=120)
            await handle.terminate("test over")
            assert len(fake.requests_with_key("k-busy")) == 1  # not made again
            assert len(fake.requests_with_key("k-plan")) == 1
        assert _attempts(store, agent) == [(0, "rate_limited", "k-busy"), (1, "ok", "k-plan")]
        (turn,) = sa.turns(store, agent)
        assert turn.served_model == "served-b" and turn.reasoning_summary == "done"
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
            process.wait()
        store.dispose()


async def test_an_attempt_lost_with_its_worker_is_made_again_once(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / ".data"
    settings = Settings(data_dir=data_dir, workspace=tmp_path)
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        with FakeOpenAI() as fake:
            # The only key's first answer stalls; the worker dies while it waits.
            fake.answer_key("k-slow", FakeReply(content="late", delay=120))
            _configure(store, settings, fake, ["k-slow"])
            workers.append(sa.worker_process(dev_env, task_queue, data_dir))
            now = await dev_env.get_current_time()
            agent = sa.create_instance(store, now)
            handle = await sa.start(dev_env.client, agent, task_queue)
            await _until(lambda: len(fake.requests) == 1, "the stalled request")
            assert _attempts(store, agent) == [(0, "in_flight", "k-slow")]
            kill9(workers[-1])
            fake.answer_key("k-slow", PLAN)  # the provider is quick again
            workers.append(sa.worker_process(dev_env, task_queue, data_dir))
            await sa.wait_turns(store, agent, 1, timeout=120)
            await handle.terminate("test over")
            assert len(fake.requests) == 2
        # The lost attempt is closed as a timeout (spend unknown) by the next one.
        assert _attempts(store, agent) == [(0, "timeout", "k-slow"), (1, "ok", "k-slow")]
        (turn,) = sa.turns(store, agent)
        assert turn.reasoning_summary == "done"
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
            process.wait()
        store.dispose()
