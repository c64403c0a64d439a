"""A standing agent's tick whose planning provider's credential arrives by device flow
(issue 11): the tick pauses on the flow (the worker's workspace: an agent has no
session) and plans with the new token once the user approves at the IdP, also when its
worker is killed (`kill -9`) or shut down gracefully, mid-read, while the tick waits.

Real HTTP on loopback for the IdP and the model (which accepts only the tokens the IdP
issued), a real Temporal dev server, the worker in process or as a process to kill.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from runtime.llm import config_store
from runtime.llm.contracts import CredentialConfig
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.device_flow_helpers import HangReads
from tests.e2e.device_flow.test_llm_device_flow import TokenGatedOpenAI
from tests.fakes.device_idp import FakeIdP
from tests.fakes.openai_server import FakeOpenAI, FakeReply
from tests.workflows import standing_agent_support as sa

IDP = "test-idp"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAN = FakeReply(
    tool_calls=[{"name": "phase_complete", "arguments": {"summary": "done"}}],
    finish_reason="tool_calls",
    model="served-device",
    usage=(100, 10),
)


def _plan_with_the_device_flow(store: Store, settings: Settings, model: FakeOpenAI) -> None:
    """Agent:Planning bound to a preset whose provider's one credential is the device flow
    of the fake IdP; the model's next answer is the plan."""
    credential = CredentialConfig(alias="device", deviceFlow=IDP)
    config_store.put_provider(store, settings, "oauth", model.base_url, [credential], NOW)
    config_store.put_preset(store, settings, "plan", "m-device", "oauth", None, [], NOW)
    config_store.bind_site(store, settings, "Agent:Planning", "plan", NOW)
    model.queue(PLAN)


async def _until(predicate: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def _until_async(predicate: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + 60
    while not await predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def _timers(handle: WorkflowHandle[Any, Any]) -> bool:
    """The tick waits on the flow: its workflow is on a durable timer between reads."""
    history = await handle.fetch_history()
    return any(e.event_type == EventType.EVENT_TYPE_TIMER_STARTED for e in history.events)


async def test_an_agent_tick_pauses_on_the_device_flow_and_resumes(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, store: Store
) -> None:
    with FakeIdP(interval=1) as idp, TokenGatedOpenAI(idp) as model:
        providers = json.dumps({IDP: idp.provider_config()})
        settings = Settings(data_dir=tmp_path, workspace=tmp_path, device_flow_providers=providers)
        _plan_with_the_device_flow(store, settings, model)
        now = await dev_env.get_current_time()
        agent = sa.create_instance(store, now)
        async with sa.running(
            dev_env, store, tmp_path, task_queue, device_flow_providers=providers
        ):
            handle = await sa.start(dev_env.client, agent, task_queue)
            await _until(lambda: idp.devices, "the tick to start the device flow")
            # Paused: nothing sent without a token, no turn yet; the attempt stands as
            # an auth_error until it is made again with the token.
            assert model.requests == [] and sa.turns(store, agent) == []
            assert [a.outcome for a in sa.llm_attempts(store, agent)] == ["auth_error"]
            idp.approve(idp.latest().user_code)
            await sa.wait_turns(store, agent, 1, timeout=120, handle=handle)
            await handle.terminate("test over")
    assert len(idp.devices) == 1
    (request,) = model.requests
    assert request.authorization == f"Bearer {idp.issued[-1]}"
    (turn,) = sa.turns(store, agent)
    assert turn.served_model == "served-device" and turn.reasoning_summary == "done"
    attempts = sa.llm_attempts(store, agent)
    assert [(a.ordinal, a.outcome, a.credential_alias) for a in attempts] == [(0, "ok", "device")]


async def test_a_paused_agent_tick_spans_kill_9_of_the_worker(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / ".data"
    with FakeIdP(interval=1) as idp, TokenGatedOpenAI(idp) as model:
        providers = json.dumps({IDP: idp.provider_config()})
        settings = Settings(data_dir=data_dir, workspace=tmp_path, device_flow_providers=providers)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        workers: list[subprocess.Popen[bytes]] = []
        try:
            _plan_with_the_device_flow(store, settings, model)
            workers.append(
                sa.worker_process(
                    dev_env, task_queue, data_dir, AGENTRT_DEVICE_FLOW_PROVIDERS=providers
                )
            )
            now = await dev_env.get_current_time()
            agent = sa.create_instance(store, now)
            handle = await sa.start(dev_env.client, agent, task_queue)
            await _until(lambda: idp.devices, "the tick to start the device flow")
            await _until_async(lambda: _timers(handle), "the pause's first timer")
            os.kill(workers[-1].pid, signal.SIGKILL)
            workers[-1].wait()
            idp.approve(idp.latest().user_code)
            workers.append(
                sa.worker_process(
                    dev_env, task_queue, data_dir, AGENTRT_DEVICE_FLOW_PROVIDERS=providers
                )
            )
            await sa.wait_turns(store, agent, 1, timeout=120, handle=handle)
            await handle.terminate("test over")
            (turn,) = sa.turns(store, agent)
            assert turn.served_model == "served-device", (turn.decision, turn.wait_condition)
            (request,) = model.requests
            assert request.authorization == f"Bearer {idp.issued[-1]}"
            assert len(idp.devices) == 1
        finally:
            for process in workers:
                if process.poll() is None:
                    process.kill()
                process.wait()
            store.dispose()


async def _task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def test_a_paused_agent_tick_spans_a_graceful_restart_during_a_read(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, store: Store
) -> None:
    """A deploy's graceful shutdown while the paused tick reads the flow's state, the
    read hanging until the worker gives up on it: the next worker carries the tick on
    (a local activity's timeout used to replay as another error, failing the tick)."""
    hang = HangReads()
    with FakeIdP(interval=1) as idp, TokenGatedOpenAI(idp) as model:
        providers = json.dumps({IDP: idp.provider_config()})
        settings = Settings(data_dir=tmp_path, workspace=tmp_path, device_flow_providers=providers)
        _plan_with_the_device_flow(store, settings, model)
        now = await dev_env.get_current_time()
        agent = sa.create_instance(store, now)
        env = WorkflowEnvironment.from_client(hang.client(dev_env.client))
        async with sa.running(env, store, tmp_path, task_queue, device_flow_providers=providers):
            handle = await sa.start(dev_env.client, agent, task_queue)
            await _until(lambda: idp.devices, "the tick to start the device flow")
            await _until_async(lambda: _timers(handle), "the pause's first timer")
            hang.hang.set()
            await _until(hang.hung.is_set, "a read in flight")
        # The first worker is gone (gracefully); the user approves; a new worker.
        idp.approve(idp.latest().user_code)
        async with sa.running(
            dev_env, store, tmp_path, task_queue, device_flow_providers=providers
        ):
            await sa.wait_turns(store, agent, 1, timeout=120, handle=handle)
            failures = await _task_failures(handle)
            await handle.terminate("test over")
    assert failures == []
    (turn,) = sa.turns(store, agent)
    assert turn.served_model == "served-device", (turn.decision, turn.wait_condition)
    (request,) = model.requests
    assert request.authorization == f"Bearer {idp.issued[-1]}"
    assert len(idp.devices) == 1
