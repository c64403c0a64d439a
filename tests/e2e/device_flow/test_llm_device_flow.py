"""A session prompt whose model provider's credential arrives by device flow (issue 11,
"Credentials that arrive by device flow, as a pause inside the work"): the prompt pauses,
`auth_device_flow_started` is announced on its stream, the user approves at the IdP, and
the prompt completes with the new token; a denied flow ends the prompt with its
errorKind; a pause spans `kill -9` of the worker.

Everything is real HTTP on loopback: the API in process, workers as processes a test can
kill, an RFC 8628 IdP (tests/fakes/device_idp.py) and an OpenAI-compatible server that
accepts only the tokens that IdP issued.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from temporalio.testing import WorkflowEnvironment

from runtime.device_flow.credentials import credentials_record, store_credentials
from runtime.device_flow.providers import credentials_path
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from tests.conftest import ApiFactory
from tests.fakes.device_idp import FakeIdP
from tests.fakes.openai_server import FakeOpenAI
from tests.session_helpers import Daemon
from tests.worker_processes import WorkerProcesses

TOKEN = "llm-device-flow"
IDP = "test-idp"
MODEL = "device-model"


class TokenGatedOpenAI(FakeOpenAI):
    """A model server that accepts only the access tokens the IdP issued."""

    def __init__(self, idp: FakeIdP) -> None:
        super().__init__()
        self.idp = idp
        self.refused: list[str | None] = []

    async def _handle(self, request: Request) -> Response:
        given = request.headers.get("authorization")
        if given not in {f"Bearer {t}" for t in self.idp.issued}:
            self.refused.append(given)
            error = {"message": "invalid access token", "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=401)
        return await super()._handle(request)


WorkerFactory = Callable[[], Awaitable[subprocess.Popen[bytes]]]


@dataclass
class Rig:
    daemon: Daemon
    idp: FakeIdP
    model: TokenGatedOpenAI
    data_dir: Path
    start_worker: WorkerFactory

    async def configure(self) -> None:
        """A provider whose only credential is the IdP's device flow, bound to prompts."""
        client = self.daemon.client
        provider = await client.put(
            "/api/v1/llm/providers/oauth-llm",
            json={
                "baseUrl": self.model.base_url,
                "credentials": [{"alias": "device", "deviceFlow": IDP}],
            },
        )
        assert provider.status_code == 200, provider.text
        preset = await client.put(
            "/api/v1/llm/presets/device", json={"model": MODEL, "provider": "oauth-llm"}
        )
        assert preset.status_code == 200, preset.text
        bound = await client.put(
            "/api/v1/llm/sites/Session:Default/preset", json={"presetId": "device"}
        )
        assert bound.status_code == 200, bound.text

    async def paused_prompt(self, text: str) -> tuple[str, str, dict[str, Any]]:
        """(session id, prompt id, the announcement) of a prompt paused on the flow."""
        sid = (await self.daemon.create())["sessionId"]
        response = await self.daemon.prompt(sid, text)
        assert response.status_code in (200, 202), response.text
        prompt_id = response.json()["promptId"]
        events = await self.daemon.wait_for(sid, "auth_device_flow_started", timeout=60)
        started = next(e for e in events if e["type"] == "auth_device_flow_started")
        return sid, prompt_id, started["data"]

    async def user_code(self) -> str:
        deadline = time.monotonic() + 30
        while not self.idp.devices:
            assert time.monotonic() < deadline, "no device code was asked for"
            await asyncio.sleep(0.05)
        return self.idp.latest().user_code


def _providers(idp: FakeIdP) -> str:
    return json.dumps({IDP: idp.provider_config()})


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    with FakeIdP(interval=1) as fake:
        yield fake


@pytest.fixture
async def rig(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, idp: FakeIdP
) -> AsyncIterator[Rig]:
    data_dir = tmp_path / ".data"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = Store(Settings(data_dir=data_dir).resolved_database_url)
    upgrade_to_head(store.engine)
    workers = WorkerProcesses(
        dev_env, task_queue, data_dir, workspace, AGENTRT_DEVICE_FLOW_PROVIDERS=_providers(idp)
    )
    client = await api(
        data_dir=data_dir,
        task_queue=task_queue,
        workspace=workspace,
        token=TOKEN,
        device_flow_providers=_providers(idp),
    )
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    model = TokenGatedOpenAI(idp)
    with model:
        daemon = Daemon(client=client, workspace=workspace.resolve(), journal=EventJournal(store))
        yield Rig(daemon, idp, model, data_dir, workers.start)
    workers.close()
    store.dispose()


def _answer(events: list[dict[str, Any]], prompt_id: str) -> str:
    return "".join(
        e["data"]["update"]["content"]["text"]
        for e in events
        if e["type"] == "session_update"
        and e.get("promptId") == prompt_id
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_a_prompt_pauses_on_the_device_flow_and_completes_with_the_new_token(
    rig: Rig,
) -> None:
    await rig.start_worker()
    await rig.configure()
    rig.model.queue_text("answered with the device token")
    sid, prompt_id, started = await rig.paused_prompt("hello")
    assert set(started) == {"deviceFlowId", "providerId", "expiresAt"}
    assert started["providerId"] == IDP
    # Paused: no model call was made without a token.
    assert rig.model.requests == [] and rig.model.refused == []
    # The user reads the code where a client would, and approves it at the IdP.
    flow = await rig.daemon.client.get(f"/workspace/auth/device-flow/{started['deviceFlowId']}")
    assert flow.status_code == 200, flow.text
    user_code = flow.json()["userCode"]
    assert user_code == await rig.user_code()
    rig.idp.approve(user_code)
    events = await rig.daemon.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=60)
    assert _answer(events, prompt_id) == "answered with the device token"
    (request,) = rig.model.requests
    assert request.authorization == f"Bearer {rig.idp.issued[-1]}"
    assert request.body["model"] == MODEL
    assert [e["type"] for e in events].count("auth_device_flow_started") == 1
    assert "turn_error" not in [e["type"] for e in events]
    stored = json.loads(credentials_path(rig.data_dir, IDP).read_text())
    assert stored["access_token"] == rig.idp.issued[-1]
    # The next prompt uses the stored token at once: no second flow.
    rig.model.queue_text("again")
    second = (await rig.daemon.prompt(sid, "again")).json()["promptId"]
    events = await rig.daemon.wait_for(sid, "turn_complete", prompt_id=second, timeout=60)
    assert _answer(events, second) == "again"
    assert len(rig.idp.devices) == 1


async def test_a_denied_flow_ends_the_prompt_with_its_error_kind(rig: Rig) -> None:
    await rig.start_worker()
    await rig.configure()
    sid, prompt_id, _started = await rig.paused_prompt("hello")
    rig.idp.deny(await rig.user_code())
    events = await rig.daemon.wait_for(sid, "turn_error", prompt_id=prompt_id, timeout=60)
    (error,) = [e["data"] for e in events if e["type"] == "turn_error"]
    assert error["errorKind"] == "access_denied"
    assert "access_denied" in error["error"]
    assert rig.model.requests == [] and rig.model.refused == []


async def test_a_paused_prompt_spans_kill_9_of_the_worker(rig: Rig) -> None:
    worker = await rig.start_worker()
    await rig.configure()
    rig.model.queue_text("after the restart")
    sid, prompt_id, _started = await rig.paused_prompt("hello")
    user_code = await rig.user_code()
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    rig.idp.approve(user_code)  # while no worker runs
    await rig.start_worker()
    events = await rig.daemon.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=90)
    assert _answer(events, prompt_id) == "after the restart"
    assert len(rig.idp.devices) == 1  # the same flow, polled by the new worker
    assert rig.model.requests[-1].authorization == f"Bearer {rig.idp.issued[-1]}"
    assert [e["type"] for e in events].count("auth_device_flow_started") == 1


async def test_a_token_near_expiry_is_refreshed_without_a_flow(rig: Rig) -> None:
    """A stored token about to expire is refreshed (RFC 6749 refresh_token grant) before
    the attempt: no pause, no device code, the model sees the refreshed token."""
    rig.idp.token_expires_in = 30  # inside the refresh margin
    store_credentials(rig.data_dir, IDP, credentials_record(IDP, rig.idp.issue(), _now_ms()))
    rig.idp.token_expires_in = 3600
    await rig.start_worker()
    await rig.configure()
    rig.model.queue_text("with a refreshed token")
    sid = (await rig.daemon.create())["sessionId"]
    prompt_id = (await rig.daemon.prompt(sid, "hello")).json()["promptId"]
    events = await rig.daemon.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=60)
    assert _answer(events, prompt_id) == "with a refreshed token"
    assert len(rig.idp.refreshes()) == 1 and rig.idp.devices == []
    assert rig.model.requests[0].authorization == f"Bearer {rig.idp.issued[-1]}"
    assert "auth_device_flow_started" not in [e["type"] for e in events]


def _now_ms() -> int:
    return int(time.time() * 1000)


async def test_a_paused_prompt_can_be_cancelled_and_the_flow_serves_the_next(rig: Rig) -> None:
    """Cancelling the prompt ends its wait, not the flow: approved later, the flow's token
    serves the next prompt with no second device code."""
    await rig.start_worker()
    await rig.configure()
    sid, prompt_id, _started = await rig.paused_prompt("hello")
    assert (await rig.daemon.client.post(f"/session/{sid}/cancel")).status_code == 204
    events = await rig.daemon.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=60)
    (done,) = [e["data"] for e in events if e["type"] == "turn_complete"]
    assert done["stopReason"] == "cancelled"
    rig.idp.approve(await rig.user_code())
    deadline = time.monotonic() + 30
    while not credentials_path(rig.data_dir, IDP).exists():
        assert time.monotonic() < deadline, "the flow never stored its token"
        await asyncio.sleep(0.1)
    rig.model.queue_text("next one")
    second = (await rig.daemon.prompt(sid, "next")).json()["promptId"]
    events = await rig.daemon.wait_for(sid, "turn_complete", prompt_id=second, timeout=60)
    assert _answer(events, second) == "next one"
    assert len(rig.idp.devices) == 1 and rig.model.requests
