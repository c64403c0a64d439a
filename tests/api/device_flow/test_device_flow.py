"""The device-flow routes end to end: the API, a worker, and a real RFC 8628 IdP on
loopback (tests/fakes/device_idp.py). Nothing reaches the internet: the built-in
`qwen-oauth` provider points at the fake too."""

from __future__ import annotations

import asyncio
import json
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from runtime.sessions.streams import envelope
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import session_stream
from tests.conftest import ApiFactory
from tests.fakes.device_idp import FakeIdP
from worker import build_worker

TOKEN = "device-flow-token"
FLOW = "/workspace/auth/device-flow"


@dataclass
class Daemon:
    client: httpx.AsyncClient
    settings: Settings
    store: Store
    idp: FakeIdP
    stack: AsyncExitStack
    env: WorkflowEnvironment

    async def start_worker(self) -> Worker:
        worker = build_worker(self.env.client, self.settings, self.store)
        await self.stack.enter_async_context(worker)
        return worker

    def events(self, session_id: str) -> list[dict[str, Any]]:
        page = EventJournal(self.store).read(session_stream(session_id), 0, 10_000)
        return [envelope(e) for e in page.entries]

    async def session(self) -> str:
        response = await self.client.post("/session", json={})
        assert response.status_code == 200, response.text
        sid: str = response.json()["sessionId"]
        return sid

    async def until(self, flow_id: str, status: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body: dict[str, Any] = (await self.client.get(f"{FLOW}/{flow_id}")).json()
            if body.get("status") == status:
                return body
            await asyncio.sleep(0.1)
        raise AssertionError(f"{flow_id} never became {status}: {body} {self.idp.devices}")

    async def event(self, sid: str, event_type: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events(sid):
                if event["type"] == event_type:
                    return event
            await asyncio.sleep(0.1)
        raise AssertionError(f"{event_type} never arrived: {self.events(sid)}")


DaemonFactory = Callable[..., Awaitable[Daemon]]


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    with FakeIdP(interval=1) as fake:
        yield fake


@pytest.fixture
async def daemon(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path, idp: FakeIdP
) -> AsyncIterator[DaemonFactory]:
    stack = AsyncExitStack()

    async def make(*, worker: bool = True, extra: int = 0, **overrides: Any) -> Daemon:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        providers = {"test-idp": idp.provider_config()}
        providers |= {f"idp-{n}": idp.provider_config() for n in range(extra)}
        values: dict[str, Any] = {
            "data_dir": tmp_path / ".data",
            "task_queue": task_queue,
            "workspace": workspace,
            "database_url": f"sqlite:///{tmp_path / 'agentrt.db'}",
            "token": TOKEN,
            "qwen_oauth_base_url": idp.base_url,
            "device_flow_providers": json.dumps(providers),
        }
        values.update(overrides)
        settings = Settings(**values)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        stack.callback(store.dispose)
        client = await api(**values)
        if values.get("token"):
            client.headers["Authorization"] = f"Bearer {values['token']}"
        daemon = Daemon(client, settings, store, idp, stack, dev_env)
        if worker:
            await daemon.start_worker()
        return daemon

    yield make
    await stack.aclose()


async def test_post_needs_a_configured_token(daemon: DaemonFactory) -> None:
    d = await daemon(token=None, worker=False)
    response = await d.client.post(FLOW, json={"providerId": "test-idp"})
    assert response.status_code == 401
    assert response.json()["code"] == "token_required"


async def test_post_refuses_missing_and_unknown_providers(daemon: DaemonFactory) -> None:
    d = await daemon(worker=False)
    missing = await d.client.post(FLOW, json={})
    assert missing.status_code == 400
    assert missing.json() == {
        "error": "`providerId` must be a non-empty string",
        "code": "invalid_request",
    }
    bogus = await d.client.post(FLOW, json={"providerId": "bogus"})
    assert bogus.status_code == 400
    assert bogus.json() == {
        "error": "Unsupported device-flow provider: bogus",
        "code": "unsupported_provider",
        "supportedProviders": ["qwen-oauth", "test-idp"],
    }
    unknown = await d.client.get(f"{FLOW}/27c225a4-a61f-46e2-8ec2-6837a7e57565")
    assert unknown.status_code == 404
    assert unknown.json() == {
        "error": "Device-flow 27c225a4-a61f-46e2-8ec2-6837a7e57565 not found",
        "code": "device_flow_not_found",
    }
    assert (await d.client.delete(f"{FLOW}/not-a-flow")).status_code == 404
    status = (await d.client.get("/workspace/auth/status")).json()
    assert status == {
        "v": 1,
        "workspaceCwd": d.settings.workspace_cwd,
        "providers": [],
        "pendingDeviceFlows": [],
        "supportedDeviceFlowProviders": ["qwen-oauth", "test-idp"],
    }


async def test_approval_stores_credentials_and_tells_every_session(
    daemon: DaemonFactory, idp: FakeIdP
) -> None:
    d = await daemon()
    sessions = [await d.session(), await d.session()]
    first = await d.client.post(FLOW, json={"providerId": "test-idp"})
    assert first.status_code == 201, first.text
    entry = first.json()
    flow_id = entry["deviceFlowId"]
    user_code = idp.latest().user_code
    assert entry["status"] == "pending" and entry["attached"] is False
    assert entry["userCode"] == user_code
    assert entry["verificationUri"] == f"{idp.base_url}/device"
    assert entry["verificationUriComplete"].endswith(user_code)
    assert entry["intervalMs"] == 1000 and entry["expiresAt"] > time.time() * 1000
    # The singleton per provider: a second POST attaches, without a new IdP request.
    second = await d.client.post(FLOW, json={"providerId": "test-idp"})
    assert second.status_code == 200
    assert second.json()["attached"] is True and second.json()["deviceFlowId"] == flow_id
    assert len(idp.devices) == 1
    read = (await d.client.get(f"{FLOW}/{flow_id}")).json()
    assert read["userCode"] == user_code and "attached" not in read
    status = (await d.client.get("/workspace/auth/status")).json()
    assert status["pendingDeviceFlows"] == [
        {"deviceFlowId": flow_id, "providerId": "test-idp", "expiresAt": entry["expiresAt"]}
    ]

    idp.approve(user_code)
    done = await d.until(flow_id, "authorized")
    assert done == {"deviceFlowId": flow_id, "providerId": "test-idp", "status": "authorized"}
    path = d.settings.resolved_data_dir / "credentials" / "test-idp.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    assert stored["access_token"].startswith("at-") and stored["refresh_token"].startswith("rt-")
    assert not list(path.parent.glob(".*.tmp"))

    for sid in sessions:
        await d.event(sid, "auth_device_flow_authorized")
        events = [e for e in d.events(sid) if e["type"].startswith("auth_device_flow_")]
        assert [e["type"] for e in events] == [
            "auth_device_flow_started",
            "auth_device_flow_authorized",
        ]
        assert events[0]["data"] == {
            "deviceFlowId": flow_id,
            "providerId": "test-idp",
            "expiresAt": entry["expiresAt"],
        }
        assert events[1]["data"]["deviceFlowId"] == flow_id
        text = json.dumps(d.events(sid))
        assert user_code not in text and idp.latest().device_code not in text
        assert stored["access_token"] not in text
    assert (await d.client.get("/workspace/auth/status")).json()["pendingDeviceFlows"] == []
    # DELETE on a terminal entry: 204, and no event.
    assert (await d.client.delete(f"{FLOW}/{flow_id}")).status_code == 204
    await asyncio.sleep(0.3)
    assert not any(e["type"] == "auth_device_flow_cancelled" for e in d.events(sessions[0]))
    # A new POST after the flow ended starts a new one; the old one is still readable.
    again = await d.client.post(FLOW, json={"providerId": "test-idp"})
    assert again.status_code == 201 and again.json()["deviceFlowId"] != flow_id
    assert (await d.client.get(f"{FLOW}/{flow_id}")).json()["status"] == "authorized"


async def _secrets_deleted(d: Daemon, flow_id: str) -> None:
    """The flow ended: its device code and verifier leave the daemon's disk (FORGET runs
    just after the terminal state)."""
    path = d.settings.resolved_data_dir / "device-flow" / f"{flow_id}.json"
    for _ in range(100):
        if not path.exists():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} is still on disk")


async def test_access_denied_fails_the_flow(daemon: DaemonFactory, idp: FakeIdP) -> None:
    d = await daemon()
    sid = await d.session()
    flow_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    idp.deny(idp.latest().user_code)
    body = await d.until(flow_id, "failed")
    assert body["errorKind"] == "access_denied" and "userCode" not in body
    event = await d.event(sid, "auth_device_flow_failed")
    assert event["data"]["errorKind"] == "access_denied"
    await _secrets_deleted(d, flow_id)


async def test_idp_expired_token_fails_the_flow(daemon: DaemonFactory, idp: FakeIdP) -> None:
    idp.expires_in = 2
    d = await daemon()
    flow_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    body = await d.until(flow_id, "failed")
    assert body["errorKind"] == "expired_token"
    await _secrets_deleted(d, flow_id)


async def test_delete_cancels_a_pending_flow(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = await d.session()
    flow_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    stored = d.settings.resolved_data_dir / "device-flow" / f"{flow_id}.json"
    assert stored.stat().st_mode & 0o777 == 0o600  # the POST answered after the code request
    assert (await d.client.delete(f"{FLOW}/{flow_id}")).status_code == 204
    await d.event(sid, "auth_device_flow_cancelled")
    await _secrets_deleted(d, flow_id)
    assert (await d.client.get(f"{FLOW}/{flow_id}")).json() == {
        "deviceFlowId": flow_id,
        "providerId": "test-idp",
        "status": "cancelled",
    }
    assert (await d.client.delete(f"{FLOW}/{flow_id}")).status_code == 204
    await asyncio.sleep(0.3)
    cancelled = [e for e in d.events(sid) if e["type"] == "auth_device_flow_cancelled"]
    assert len(cancelled) == 1 and cancelled[0]["data"] == {"deviceFlowId": flow_id}


async def test_qwen_oauth_uses_pkce_and_the_qwen_client(
    daemon: DaemonFactory, idp: FakeIdP
) -> None:
    idp.client_id = "f0304373b74a44d2b584a3fb70ca9e56"
    d = await daemon()
    response = await d.client.post(FLOW, json={"providerId": "qwen-oauth"})
    assert response.status_code == 201, response.text
    asked = idp.device_requests[-1]
    assert asked["scope"] == "openid profile email model.completion"
    assert asked["code_challenge_method"] == "S256" and asked["code_challenge"]
    idp.approve(idp.latest().user_code)
    await d.until(response.json()["deviceFlowId"], "authorized")
    assert idp.token_requests[-1]["code_verifier"]
    assert (d.settings.resolved_data_dir / "credentials" / "qwen-oauth.json").exists()


async def test_too_many_active_flows(daemon: DaemonFactory) -> None:
    d = await daemon(extra=4)
    for provider_id in ["test-idp", "idp-0", "idp-1", "idp-2"]:
        response = await d.client.post(FLOW, json={"providerId": provider_id})
        assert response.status_code == 201, response.text
    refused = await d.client.post(FLOW, json={"providerId": "idp-3"})
    assert refused.status_code == 409
    assert refused.json()["code"] == "too_many_active_flows"
    status = (await d.client.get("/workspace/auth/status")).json()
    assert len(status["pendingDeviceFlows"]) == 4


async def test_upstream_error_is_502(daemon: DaemonFactory, idp: FakeIdP) -> None:
    idp.device_code_status = 400
    d = await daemon()
    response = await d.client.post(FLOW, json={"providerId": "test-idp"})
    assert response.status_code == 502
    assert response.json()["code"] == "upstream_error"


async def test_an_unreachable_idp_is_502(daemon: DaemonFactory) -> None:
    d = await daemon(qwen_oauth_base_url="http://127.0.0.1:9")
    response = await d.client.post(FLOW, json={"providerId": "qwen-oauth"})
    assert response.status_code == 502
    assert response.json()["code"] == "upstream_error"


async def test_a_failed_write_is_persist_failed(
    daemon: DaemonFactory, idp: FakeIdP, tmp_path: Path
) -> None:
    d = await daemon()
    d.settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
    (d.settings.resolved_data_dir / "credentials").write_text("not a directory")
    flow_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    idp.approve(idp.latest().user_code)
    body = await d.until(flow_id, "failed")
    assert body["errorKind"] == "persist_failed"


async def test_a_pending_flow_survives_a_worker_restart(
    daemon: DaemonFactory, idp: FakeIdP
) -> None:
    d = await daemon(worker=False)
    worker = build_worker(d.env.client, d.settings, d.store)
    async with worker:
        response = await d.client.post(FLOW, json={"providerId": "test-idp"})
        assert response.status_code == 201
        flow_id = response.json()["deviceFlowId"]
    # agentrt's worker is down: the user approves at the IdP meanwhile.
    idp.approve(idp.latest().user_code)
    polls = idp.latest().polls
    await asyncio.sleep(1.5)
    assert idp.latest().polls == polls
    await d.start_worker()
    await d.until(flow_id, "authorized")
    path = d.settings.resolved_data_dir / "credentials" / "test-idp.json"
    assert json.loads(path.read_text())["access_token"].startswith("at-")


async def test_a_terminal_entry_is_gone_after_its_grace(
    daemon: DaemonFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = await daemon()
    flow_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    assert (await d.client.delete(f"{FLOW}/{flow_id}")).status_code == 204
    assert (await d.client.get(f"{FLOW}/{flow_id}")).json()["status"] == "cancelled"
    monkeypatch.setattr("api.device_flow.routes.GRACE_MS", 0)  # 5 minutes later
    gone = await d.client.get(f"{FLOW}/{flow_id}")
    assert gone.status_code == 404 and gone.json()["code"] == "device_flow_not_found"
    assert (await d.client.delete(f"{FLOW}/{flow_id}")).status_code == 404


async def test_no_worker_is_503_worker_unavailable(daemon: DaemonFactory) -> None:
    d = await daemon(worker=False, worker_wait_ms=300)
    response = await d.client.post(FLOW, json={"providerId": "test-idp"})
    assert response.status_code == 503
    assert response.json()["code"] == "worker_unavailable"
    assert response.headers["Retry-After"] == "5"


async def _login(d: Daemon, flow_id: str, state: str) -> dict[str, Any]:
    """The flow's login in the approvals' inbox (issue 22), once it is in `state`."""
    for _ in range(100):
        listed = await d.client.get(
            "/api/v1/approvals", params={"kind": "device_login", "state": state}
        )
        assert listed.status_code == 200, listed.text
        found: list[dict[str, Any]] = [a for a in listed.json()["approvals"] if a["ref"] == flow_id]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {state} login for {flow_id}")


async def test_a_login_is_an_approval_until_it_ends(daemon: DaemonFactory, idp: FakeIdP) -> None:
    """Pending while the user has to sign in, with or without a session open; approved
    once they did, denied when they refused, cancelled by a DELETE."""
    d = await daemon()
    started = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()
    flow_id = started["deviceFlowId"]
    pending = await _login(d, flow_id, "pending")
    assert pending["approvalId"] == f"device_login:{flow_id}"
    assert pending["link"] == f"{FLOW}/{flow_id}" and pending["tenant"] is None
    assert pending["expiresAt"] is not None
    user_code = idp.latest().user_code
    assert user_code not in json.dumps(pending)
    idp.approve(user_code)
    await d.until(flow_id, "authorized")
    approved = await _login(d, flow_id, "approved")
    assert approved["answeredBy"] == "idp:test-idp"

    denied_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    idp.deny(idp.latest().user_code)
    await d.until(denied_id, "failed")
    assert (await _login(d, denied_id, "denied"))["endReason"] == "access_denied"

    cancelled_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()[
        "deviceFlowId"
    ]
    await _login(d, cancelled_id, "pending")
    assert (await d.client.delete(f"{FLOW}/{cancelled_id}")).status_code == 204
    await _login(d, cancelled_id, "cancelled")


async def test_the_inbox_denies_a_login_and_sends_its_approval_to_the_provider(
    daemon: DaemonFactory,
) -> None:
    """Issue 22: a device login is approved only at its identity provider (409 with where);
    denied through the inbox, the flow is cancelled, and the same answer again reads it."""
    d = await daemon()
    flow_id = (await d.client.post(FLOW, json={"providerId": "test-idp"})).json()["deviceFlowId"]
    await _login(d, flow_id, "pending")
    url = f"/api/v1/approvals/device_login:{flow_id}/answer"
    approve = await d.client.post(url, json={"answer": "approve"})
    assert approve.status_code == 409
    assert approve.json()["code"] == "approval_answered_elsewhere"
    assert approve.json()["link"] == f"{FLOW}/{flow_id}"
    denied = await d.client.post(url, json={"answer": "deny"})
    assert denied.status_code == 200, denied.text
    assert denied.json()["state"] == "cancelled"
    await d.until(flow_id, "cancelled")
    again = await d.client.post(url, json={"answer": "deny"})
    assert again.status_code == 200 and again.json()["state"] == "cancelled"
