"""A model call's pause on a device flow (workflows/device_flow/pause.py), driven by a
probe workflow that calls `await_device_flow` as the chain does, on a real Temporal dev
server, against a real RFC 8628 IdP on loopback: start or attach, the announcement on
the paused session, approval, denial, expiry, a worker restart while paused (also a
graceful one while a read of the flow's state hangs)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities import build_activities
from activities.llm import provider_from_settings
from runtime.device_flow.contracts import DeviceFlowOutcome
from runtime.device_flow.credentials import credentials_record, store_credentials
from runtime.device_flow.tokens import usable_token
from runtime.sessions import registry
from runtime.sessions.streams import envelope
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import session_stream
from tests.device_flow_helpers import HangReads
from tests.fakes.device_idp import FakeIdP
from worker import workflow_runner
from workflows import all_workflows
from workflows.device_flow.pause import await_device_flow

PROVIDER = "test-idp"


class ProbeInput(BaseModel):
    provider_id: str
    workspace_cwd: str
    session_id: str | None = None


@workflow.defn(name="DeviceFlowPauseProbe")
class DeviceFlowPauseProbe:
    """A model call's workflow, reduced to its pause."""

    @workflow.run
    async def run(self, request: ProbeInput) -> DeviceFlowOutcome:
        return await await_device_flow(
            request.provider_id, request.workspace_cwd, request.session_id
        )


class CancelProbeInput(ProbeInput):
    # True: the probe cancels the pause's task, as the session does; False: it only sets
    # the pause's `cancelled` predicate, which is all a task cancel the SDK swallowed
    # (one landing in the activation where a read completed) leaves the pause to go on.
    cancel_task: bool = True


@workflow.defn(name="DeviceFlowPauseCancelProbe")
class DeviceFlowPauseCancelProbe:
    """A paused call its caller cancels (a session's POST cancel): the pause must end."""

    def __init__(self) -> None:
        self._cancel = False

    @workflow.signal
    def cancel(self) -> None:
        self._cancel = True

    @workflow.run
    async def run(self, request: CancelProbeInput) -> str:
        pause = asyncio.create_task(
            await_device_flow(
                request.provider_id,
                request.workspace_cwd,
                request.session_id,
                cancelled=lambda: self._cancel,
            )
        )
        await workflow.wait_condition(lambda: pause.done() or self._cancel)
        if request.cancel_task:
            pause.cancel()
        try:
            outcome = await pause
        except (asyncio.CancelledError, ActivityError):
            return "cancelled"
        return f"not cancelled: authorized={outcome.authorized}"


@dataclass
class Rig:
    env: WorkflowEnvironment
    settings: Settings
    store: Store
    idp: FakeIdP
    stack: AsyncExitStack

    def worker(
        self,
        client: Client | None = None,
        graceful_shutdown_timeout: timedelta = timedelta(),
    ) -> Worker:
        return Worker(
            client or self.env.client,
            task_queue=self.settings.task_queue,
            graceful_shutdown_timeout=graceful_shutdown_timeout,
            workflows=[*all_workflows(), DeviceFlowPauseProbe, DeviceFlowPauseCancelProbe],
            activities=build_activities(
                self.store,
                EventJournal(self.store),
                provider_from_settings(self.settings),
                self.settings,
            ),
            workflow_runner=workflow_runner(),
        )

    async def pause(
        self, session_id: str | None = None, provider_id: str = PROVIDER
    ) -> WorkflowHandle[Any, DeviceFlowOutcome]:
        return await self.env.client.start_workflow(
            DeviceFlowPauseProbe.run,
            ProbeInput(
                provider_id=provider_id,
                workspace_cwd=self.settings.workspace_cwd,
                session_id=session_id,
            ),
            id=f"probe-{uuid.uuid4()}",
            task_queue=self.settings.task_queue,
        )

    def session(self) -> str:
        record, _ = registry.create_or_attach(self.store, self.settings.workspace_cwd, "thread", 20)
        return record.session_id

    def events(self, session_id: str) -> list[dict[str, Any]]:
        page = EventJournal(self.store).read(session_stream(session_id), 0, 10_000)
        return [envelope(e) for e in page.entries]

    async def until(self, check: Callable[[], bool], what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{what} never happened")

    async def device(self, count: int = 1) -> str:
        """The user code of the `count`-th device authorization the IdP gave."""
        await self.until(lambda: len(self.idp.devices) >= count, f"device code #{count}")
        return self.idp.devices[count - 1].user_code


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    with FakeIdP(interval=1) as fake:
        yield fake


@pytest.fixture
async def rig(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, idp: FakeIdP
) -> AsyncIterator[Rig]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(
        data_dir=tmp_path / ".data",
        task_queue=task_queue,
        workspace=workspace,
        database_url=f"sqlite:///{tmp_path / 'agentrt.db'}",
        device_flow_providers=json.dumps({PROVIDER: idp.provider_config()}),
    )
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    stack = AsyncExitStack()
    yield Rig(dev_env, settings, store, idp, stack)
    await stack.aclose()
    store.dispose()


def _started(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "auth_device_flow_started"]


async def test_a_pause_starts_the_flow_announces_it_once_and_ends_authorized(rig: Rig) -> None:
    await rig.stack.enter_async_context(rig.worker())
    sid = rig.session()
    handle = await rig.pause(sid)
    user_code = await rig.device()
    await rig.until(lambda: bool(_started(rig.events(sid))), "auth_device_flow_started")
    rig.idp.approve(user_code)
    outcome = await handle.result()
    assert outcome.authorized and outcome.error_kind is None
    (started,) = _started(rig.events(sid))  # the flow's broadcast and the pause's: one
    assert started == {
        "deviceFlowId": outcome.device_flow_id,
        "providerId": PROVIDER,
        "expiresAt": started["expiresAt"],
    }
    assert "userCode" not in json.dumps(rig.events(sid))  # never on the stream
    token = await usable_token(rig.settings.resolved_data_dir, rig.settings, PROVIDER)
    assert token == rig.idp.issued[-1]


async def test_pauses_attach_to_the_running_flow(rig: Rig) -> None:
    """A second call (here a session created after the flow started, so the flow's own
    broadcast missed it) joins the same flow, and its session is told."""
    await rig.stack.enter_async_context(rig.worker())
    first = await rig.pause(None)
    user_code = await rig.device()
    late = rig.session()
    second = await rig.pause(late)
    await rig.until(lambda: bool(_started(rig.events(late))), "the late session's announcement")
    rig.idp.approve(user_code)
    one, two = await first.result(), await second.result()
    assert one.authorized and two.authorized
    assert one.device_flow_id == two.device_flow_id
    assert len(rig.idp.devices) == 1
    assert _started(rig.events(late))[0]["deviceFlowId"] == one.device_flow_id


async def test_a_denied_flow_ends_the_call_with_its_error_kind(rig: Rig) -> None:
    await rig.stack.enter_async_context(rig.worker())
    handle = await rig.pause(rig.session())
    rig.idp.deny(await rig.device())
    outcome = await handle.result()
    assert not outcome.authorized and outcome.error_kind == "access_denied"
    # The next call does not inherit the ended flow: a new one starts.
    again = await rig.pause(None)
    rig.idp.approve(await rig.device(2))
    assert (await again.result()).authorized
    assert len(rig.idp.devices) == 2


async def test_an_expired_flow_ends_the_call_with_expired_token(rig: Rig, idp: FakeIdP) -> None:
    idp.expires_in = 2
    await rig.stack.enter_async_context(rig.worker())
    handle = await rig.pause(None)
    outcome = await handle.result()
    assert not outcome.authorized and outcome.error_kind == "expired_token"


async def test_an_unconfigured_provider_ends_the_call(rig: Rig) -> None:
    await rig.stack.enter_async_context(rig.worker())
    outcome = await (await rig.pause(None, provider_id="nowhere")).result()
    assert not outcome.authorized and outcome.error_kind == "unsupported_provider"


async def test_the_pause_spans_a_worker_restart(rig: Rig) -> None:
    sid = rig.session()
    async with rig.worker():
        handle = await rig.pause(sid)
        user_code = await rig.device()
        await rig.until(lambda: bool(_started(rig.events(sid))), "auth_device_flow_started")
    rig.idp.approve(user_code)  # while no worker runs
    async with rig.worker():
        outcome = await handle.result()
    assert outcome.authorized
    assert len(rig.idp.devices) == 1
    assert len(_started(rig.events(sid))) == 1


async def test_the_pause_spans_a_graceful_restart_while_a_read_hangs(rig: Rig) -> None:
    """A deploy: the worker shuts down gracefully (as worker.py's does) while the pause
    reads the flow's state and the read never answers. The next worker carries the
    pause on, replaying what the first recorded without a non-determinism error."""
    sid = rig.session()
    hang = HangReads()
    async with rig.worker(hang.client(rig.env.client), timedelta(seconds=10)):
        handle = await rig.pause(sid)
        user_code = await rig.device()
        await rig.until(lambda: bool(_started(rig.events(sid))), "auth_device_flow_started")
        hang.hang.set()
        await rig.until(hang.hung.is_set, "a read in flight")
    rig.idp.approve(user_code)  # while no worker runs
    async with rig.worker():
        # Bounded: a non-determinism error would retry the workflow task forever.
        outcome = await asyncio.wait_for(handle.result(), timeout=120)
    history = await handle.fetch_history()
    failed = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    assert [e for e in history.events if e.event_type == failed] == []
    assert outcome.authorized
    assert len(rig.idp.devices) == 1
    assert len(_started(rig.events(sid))) == 1


async def _cancel_probe(
    rig: Rig, hang: HangReads, *, cancel_task: bool
) -> WorkflowHandle[Any, str]:
    await rig.stack.enter_async_context(rig.worker(hang.client(rig.env.client)))
    return await rig.env.client.start_workflow(
        DeviceFlowPauseCancelProbe.run,
        CancelProbeInput(
            provider_id=PROVIDER, workspace_cwd=rig.settings.workspace_cwd, cancel_task=cancel_task
        ),
        id=f"probe-{uuid.uuid4()}",
        task_queue=rig.settings.task_queue,
    )


async def test_a_cancel_that_lands_during_a_read_ends_the_pause(rig: Rig) -> None:
    """The cancel of a paused prompt reaches the pause while it reads the flow's state
    (the read is an activity, cancelled with it): the pause ends at once instead of
    taking the cancelled read for a failed one and waiting on for the flow's end."""
    hang = HangReads()
    handle = await _cancel_probe(rig, hang, cancel_task=True)
    user_code = await rig.device()
    hang.hang.set()
    await rig.until(hang.hung.is_set, "a read in flight")
    await handle.signal(DeviceFlowPauseCancelProbe.cancel)
    rig.idp.approve(user_code)  # were the cancel lost, the pause would end authorized
    # Bounded: a lost cancel leaves the pause waiting on reads that never answer.
    assert await handle.result(rpc_timeout=timedelta(seconds=60)) == "cancelled"


async def test_the_cancel_predicate_alone_ends_the_pause(rig: Rig) -> None:
    """A task cancel the SDK swallowed (it landed in the activation where a read
    completed: the result wins, the task is un-cancelled; recorded in the history
    session-device-flow-cancel-swallowed) leaves only the caller's `cancelled`: the pause
    ends on it, between reads or after one, never waiting for the flow's end."""
    handle = await _cancel_probe(rig, HangReads(), cancel_task=False)
    user_code = await rig.device()
    await handle.signal(DeviceFlowPauseCancelProbe.cancel)
    outcome = await handle.result(rpc_timeout=timedelta(seconds=60))
    rig.idp.approve(user_code)
    assert outcome == "cancelled"


async def test_a_token_stored_meanwhile_ends_the_pause_without_a_flow(rig: Rig) -> None:
    """Another call's flow ended between this call's attempt and its pause."""
    body = rig.idp.issue()
    data_dir = rig.settings.resolved_data_dir
    store_credentials(data_dir, PROVIDER, credentials_record(PROVIDER, body, _now_ms()))
    await rig.stack.enter_async_context(rig.worker())
    outcome = await (await rig.pause(rig.session())).result()
    assert outcome.authorized and outcome.device_flow_id is None
    assert rig.idp.devices == []


def _now_ms() -> int:
    return int(time.time() * 1000)
