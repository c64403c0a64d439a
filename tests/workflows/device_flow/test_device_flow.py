"""DeviceFlowWorkflow on the time-skipping server: `slow_down` in both forms, the expiry
as a durable timer, and the 5-minute grace after a terminal state, against a real
RFC 8628 IdP on loopback."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.device_flow.provider import IdentityActivities
from runtime.device_flow.contracts import (
    DeviceFlowInput,
    FlowState,
    ForgetInput,
    PollInput,
    device_flow_workflow_id,
)
from runtime.device_flow.providers import DeviceFlowProvider
from runtime.sessions import registry
from runtime.sessions.streams import envelope
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import session_stream
from tests.fakes.device_idp import FakeIdP
from worker import build_worker
from workflows.device_flow.flow import DeviceFlowWorkflow


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
    env: WorkflowEnvironment, settings: Settings, idp: FakeIdP, *, pkce: bool = False
) -> WorkflowHandle[Any, FlowState]:
    provider = DeviceFlowProvider.model_validate(
        {**idp.provider_config(), "provider_id": "t", "pkce": pkce}
    )
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


def _payload_texts(node: Any) -> Iterator[str]:
    """Every payload's data in a history's JSON, decoded."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "data" and isinstance(value, str):
                with contextlib.suppress(ValueError):
                    yield base64.b64decode(value).decode("utf-8", "replace")
            else:
                yield from _payload_texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _payload_texts(item)


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


async def test_history_holds_neither_the_device_code_nor_the_verifier(
    time_env: WorkflowEnvironment, flows: tuple[Store, Settings], idp: FakeIdP
) -> None:
    """Whoever reads history (Web UI, `temporal workflow show`) could race the daemon for
    the token with them: they stay on the daemon's disk, 0600, until the flow ends."""
    _store, settings = flows
    handle = await _start(time_env, settings, idp, pkce=True)
    for _ in range(100):
        if idp.devices:
            break
        await time_env.sleep(0.05)
    secrets_dir = settings.resolved_data_dir / "device-flow"
    stored = secrets_dir / f"{handle.result_run_id}.json"
    for _ in range(100):
        if stored.exists():
            break
        await time_env.sleep(0.05)
    assert stored.stat().st_mode & 0o777 == 0o600
    idp.approve(idp.latest().user_code)
    final = await handle.result()
    assert final.status == "authorized"
    verifier = idp.token_requests[-1]["code_verifier"]
    assert verifier and idp.token_requests[-1]["device_code"] == idp.latest().device_code
    history = (await handle.fetch_history()).to_json()
    # The JSON holds payloads base64-encoded: read them decoded, as the Web UI shows them.
    readable = "\n".join([history, *_payload_texts(json.loads(history))])
    assert idp.latest().user_code in readable  # shown to the user anyway
    assert idp.latest().device_code not in readable
    assert verifier not in readable
    # The flow ended: its secrets are gone from the disk too.
    assert not stored.exists() and list(secrets_dir.iterdir()) == []


async def test_a_retried_code_request_returns_the_stored_code(
    flows: tuple[Store, Settings], idp: FakeIdP, tmp_path: Path
) -> None:
    """A worker lost between storing the device code and completing the activity: the
    retry answers the stored code (its time spent taken off) rather than a second one."""
    store, _settings = flows
    identity = IdentityActivities(store, EventJournal(store), tmp_path / "data")
    provider = DeviceFlowProvider.model_validate(
        {**idp.provider_config(), "provider_id": "t", "pkce": True}
    )
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_run_id="run-1")
    first = await env.run(identity.request_code, provider)
    again = await env.run(identity.request_code, provider)
    assert len(idp.devices) == 1 and first.code is not None and again.code is not None
    assert again.code.user_code == first.code.user_code == idp.latest().user_code
    assert again.code.expires_in <= first.code.expires_in
    stored = tmp_path / "data" / "device-flow" / "run-1.json"
    assert json.loads(stored.read_text())["device_code"] == idp.latest().device_code
    poll = PollInput(provider=provider, flow_id="run-1")
    assert (await env.run(identity.poll_token, poll)).outcome == "pending"
    assert idp.token_requests[-1]["device_code"] == idp.latest().device_code
    assert await env.run(identity.forget, ForgetInput(flow_id="run-1")) is True
    assert await env.run(identity.forget, ForgetInput(flow_id="run-1")) is False
    gone = await env.run(identity.poll_token, poll)
    assert gone.outcome == "failed" and gone.error_kind == "expired_token"
    assert len(idp.token_requests) == 1
    # A run terminated from outside never forgets: a later code request sweeps its
    # expired code (and leaves a live one alone).
    await env.run(identity.request_code, provider)
    expired = json.loads(stored.read_text()) | {"obtainedAt": 0}
    orphan = stored.with_name("orphan.json")
    orphan.write_text(json.dumps(expired))
    env.info = dataclasses.replace(env.info, workflow_run_id="run-2")
    await env.run(identity.request_code, provider)
    assert sorted(p.name for p in stored.parent.iterdir()) == ["run-1.json", "run-2.json"]


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
