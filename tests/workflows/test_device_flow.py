"""DeviceFlowWorkflow on the time-skipping server: `slow_down` in both forms, the expiry
as a durable timer, and the 5-minute grace after a terminal state, against a real
RFC 8628 IdP on loopback."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from runtime.device_flow.contracts import DeviceFlowInput, FlowState
from runtime.device_flow.providers import DeviceFlowProvider
from runtime.sessions import registry
from runtime.sessions.streams import envelope
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import session_stream
from tests.fakes.device_idp import FakeIdP
from worker import build_worker
from workflows.device_flow import DeviceFlowWorkflow, device_flow_workflow_id


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    with FakeIdP(interval=1) as fake:
        yield fake


@pytest.fixture
async def flows(
    time_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[Store, Settings]]:
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    upgrade_to_head(store.engine)
    settings = Settings(data_dir=tmp_path / ".data", task_queue=task_queue, workspace=tmp_path)
    async with build_worker(time_env.client, settings, store):
        yield store, settings
    store.dispose()


async def _start(
    env: WorkflowEnvironment, settings: Settings, idp: FakeIdP
) -> WorkflowHandle[Any, FlowState]:
    provider = DeviceFlowProvider.model_validate({**idp.provider_config(), "provider_id": "t"})
    return await env.client.start_workflow(
        DeviceFlowWorkflow.run,
        DeviceFlowInput(
            workspace_cwd=settings.workspace_cwd, provider=provider, request_id=str(uuid.uuid4())
        ),
        id=device_flow_workflow_id(settings.workspace_cwd, f"t-{uuid.uuid4()}"),
        task_queue=settings.task_queue,
    )


def _events(store: Store, sid: str) -> list[dict[str, Any]]:
    page = EventJournal(store).read(session_stream(sid), 0, 10_000)
    return [envelope(e) for e in page.entries]


@pytest.mark.parametrize("status", [400, 429])
async def test_slow_down_adds_five_seconds_each_time(
    time_env: WorkflowEnvironment, flows: tuple[Store, Settings], idp: FakeIdP, status: int
) -> None:
    store, settings = flows
    record, _ = registry.create_or_attach(store, settings.workspace_cwd, "thread", 20)
    idp.slow_downs = 2
    idp.slow_down_status = status
    handle = await _start(time_env, settings, idp)
    # The user approved at once; the IdP still asks to slow down twice first.
    for _ in range(100):
        if idp.devices:
            break
        await time_env.sleep(0.05)
    idp.approve(idp.latest().user_code)
    final = await handle.result()  # past the 5-minute grace, skipped
    assert final.status == "authorized" and final.user_code is None
    events = _events(store, record.session_id)
    throttled = [e["data"] for e in events if e["type"] == "auth_device_flow_throttled"]
    assert throttled == [
        {"deviceFlowId": final.device_flow_id, "intervalMs": 6000},
        {"deviceFlowId": final.device_flow_id, "intervalMs": 11000},
    ]
    assert [e["type"] for e in events] == [
        "auth_device_flow_started",
        "auth_device_flow_throttled",
        "auth_device_flow_throttled",
        "auth_device_flow_authorized",
    ]
    assert idp.latest().polls == 3


async def test_expiry_is_a_durable_timer(
    time_env: WorkflowEnvironment, flows: tuple[Store, Settings]
) -> None:
    store, settings = flows
    record, _ = registry.create_or_attach(store, settings.workspace_cwd, "thread", 20)
    # 15 minutes at one poll a minute: the IdP never sees a user; the timer ends it.
    with FakeIdP(expires_in=900, interval=60) as idp:
        handle = await _start(time_env, settings, idp)
        final = await handle.result()
        assert final.status == "failed" and final.error_kind == "expired_token"
        assert idp.latest().polls <= 15
    failed = [e for e in _events(store, record.session_id) if e["type"].endswith("_failed")]
    assert failed[0]["data"]["errorKind"] == "expired_token"


async def test_an_idp_gone_mid_flow_ends_it_at_expiry(
    time_env: WorkflowEnvironment, flows: tuple[Store, Settings]
) -> None:
    _store, settings = flows
    idp = FakeIdP(expires_in=30, interval=5)
    with idp:
        handle = await _start(time_env, settings, idp)
        for _ in range(100):
            if idp.devices:
                break
            await time_env.sleep(0.05)
    # The IdP is gone (connection refused): the poll retries until the code expires.
    final = await handle.result()
    assert final.status == "failed" and final.error_kind == "expired_token"
