"""A standing agent's episode spanning `kill -9` of the worker: resumed, nothing doubled."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from sqlmodel import select
from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from runtime.standing_agents.contracts import DecisionKind, EventKind
from runtime.standing_agents.models import AgentArtifact
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import agent_stream
from tests.fakes.openai_server import FakeOpenAI
from tests.worker_processes import kill9
from tests.workflows import standing_agent_support as sa


async def test_an_episode_spans_kill_9_of_the_worker(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / ".data"
    store = Store(Settings(data_dir=data_dir).resolved_database_url)
    upgrade_to_head(store.engine)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        with FakeOpenAI() as fake:
            # The greeting episode, then a chat episode whose second model call stalls.
            fake.queue_tool_calls([{"name": "soa_send_message", "arguments": {"text": "hello"}}])
            fake.queue_tool_calls([{"name": "phase_complete", "arguments": {}}])
            fake.queue_tool_calls([{"name": "soa_send_message", "arguments": {"text": "on it"}}])
            fake.queue_text("thinking very slowly", delay=60)
            fake.queue_tool_calls([{"name": "phase_complete", "arguments": {"summary": "ok"}}])
            workers.append(
                sa.worker_process(
                    dev_env,
                    task_queue,
                    data_dir,
                    AGENTRT_MODEL_PROVIDER="openai",
                    OPENAI_BASE_URL=fake.base_url,
                )
            )
            now = await dev_env.get_current_time()
            agent = sa.create_instance(store, now)
            handle = await sa.start(dev_env.client, agent, task_queue)
            await sa.wait_turns(store, agent, 1)
            await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, {"text": "go"}, now)
            deadline = time.monotonic() + 60
            while len(fake.requests) < 4 and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            assert len(fake.requests) == 4
            # Mid-episode: its message is sent, its second model call is in flight.
            assert [m.text for m in sa.messages(store, agent)] == ["hello", "on it"]
            kill9(workers[-1])
            workers.append(
                sa.worker_process(
                    dev_env,
                    task_queue,
                    data_dir,
                    AGENTRT_MODEL_PROVIDER="openai",
                    OPENAI_BASE_URL=fake.base_url,
                )
            )
            await sa.wait_turns(store, agent, 2, timeout=120)
            await handle.terminate("test over")
        turns = sa.turns(store, agent)
        assert [t.event_kind for t in turns] == ["AgentInitialized", "OperatorMessage"]
        assert turns[1].decision_kind == DecisionKind.MESSAGE_ACKNOWLEDGED.value
        assert [a.tool for a in sa.actions(store, agent, turns[1].seq)] == [
            "soa_send_message",
            "phase_complete",
        ]
        assert [m.text for m in sa.messages(store, agent)] == ["hello", "on it"]
        stream = EventJournal(store).read(agent_stream(sa.TENANT, agent)).entries
        assert [e.type for e in stream].count("agent.turn") == 2
        assert [e.type for e in stream].count("agent.message") == 2
        assert len(sa.pending_ticks(store, agent)) == 1
        assert sa.instance(store, agent).tick_in_progress is False
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
            process.wait()
        store.dispose()


async def _wait_messages(store: Store, agent: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(sa.messages(store, agent)) < count and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    assert len(sa.messages(store, agent)) >= count


# Long by design (about 25 s): a worker process is started three times and killed twice
# in the middle of one episode.
async def test_side_effects_happen_once_across_repeated_kill_9(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    """A long scripted episode of side effects, its worker killed twice mid-way."""
    data_dir = tmp_path / ".data"
    store = Store(Settings(data_dir=data_dir).resolved_database_url)
    upgrade_to_head(store.engine)
    workers = [sa.worker_process(dev_env, task_queue, data_dir)]
    try:
        now = await dev_env.get_current_time()
        # Foundational: no per-tick envelope, so the whole script runs in one episode.
        agent = sa.create_instance(store, now, foundational=True)
        handle = await sa.start(dev_env.client, agent, task_queue)
        await sa.wait_turns(store, agent, 1, timeout=60)
        lines = [f'/call soa_send_message {{"text": "m{i}"}}' for i in range(10)]
        lines[3:3] = ['/call soa_propose_decision {"title": "d", "body": "b"}']
        lines[7:7] = ['/call orchestrator_research_create {"title": "r", "question": "q"}']
        script = {"text": "\n".join(lines)}
        await sa.send(store, handle, agent, EventKind.OPERATOR_MESSAGE, script, now)
        for seen in (3, 7):
            await _wait_messages(store, agent, seen)
            kill9(workers[-1])
            workers.append(sa.worker_process(dev_env, task_queue, data_dir))
        await sa.wait_turns(store, agent, 2, timeout=120)
        await handle.terminate("test over")
        texts = [m.text for m in sa.messages(store, agent)]
        assert sorted(texts[1:]) == sorted(f"m{i}" for i in range(10))
        assert len(texts) == 11  # the greeting and each message once
        assert len(sa.attention(store, agent)) == 1
        turns = sa.turns(store, agent)
        assert len(turns) == 2
        recorded = sa.actions(store, agent, turns[1].seq)
        assert [a.outcome for a in recorded] == ["ok"] * 13
        assert recorded[-1].tool == "phase_complete"
        with store.session() as db:
            artifacts = db.exec(select(AgentArtifact)).all()
        assert len(artifacts) == 1
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
            process.wait()
        store.dispose()
