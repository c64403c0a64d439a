"""The Windows pool routes end to end: the API, a worker, and the loopback pool
(tests/fakes/windows_pool.py). Every verb through REST, the tenant flag answering
FEATURE_DISABLED before any lease, windows_release idempotent, the leases list, the
error shape with its status mirroring the code."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.sessions.session import IMAGES_SHOWN
from activities.windows.pool import read_screenshot
from runtime.llm.contracts import SESSION_SITE
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import session_stream, session_transcript_stream
from tests.conftest import ApiFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.windows_pool import FakeWindowsPool
from tests.windows_helpers import POOL_TOKEN, end_leases, lease_handle
from worker import build_worker

TOKEN = "windows-token"
BASE = "/api/v1/tenants/acme"


@dataclass
class Daemon:
    client: httpx.AsyncClient
    pool: FakeWindowsPool
    store: Store
    temporal: Client

    async def verb(self, holder: str, verb: str, args: dict[str, Any] | None = None) -> Any:
        return await self.client.post(f"{BASE}/windows/{holder}/{verb}", json=args or {})

    async def ok(self, holder: str, verb: str, args: dict[str, Any] | None = None) -> Any:
        response = await self.verb(holder, verb, args)
        assert response.status_code == 200, response.text
        return response.json()["result"]

    async def enable(self, enabled: bool = True) -> None:
        response = await self.client.put(f"{BASE}/features/windows-pool", json={"enabled": enabled})
        assert response.status_code == 200, response.text
        assert response.json()["enabled"] is enabled


@pytest.fixture
def pool() -> Iterator[FakeWindowsPool]:
    with FakeWindowsPool(token=POOL_TOKEN) as fake:
        yield fake


@pytest.fixture
async def daemon(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    pool: FakeWindowsPool,
) -> AsyncIterator[Daemon]:
    values: dict[str, Any] = {
        "data_dir": tmp_path / ".data",
        "task_queue": task_queue,
        "workspace": tmp_path,
        "database_url": f"sqlite:///{tmp_path / 'agentrt.db'}",
        "token": TOKEN,
        "windows_pool_url": pool.base_url,
        "windows_pool_token": POOL_TOKEN,
    }
    settings = Settings(**values)
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    async with AsyncExitStack() as stack:
        stack.callback(store.dispose)
        client = await api(**values)
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        await stack.enter_async_context(build_worker(dev_env.client, settings, store))
        yield Daemon(client, pool, store, dev_env.client)
        await end_leases(dev_env.client, task_queue)


async def test_every_verb_answers_feature_disabled_before_any_lease(daemon: Daemon) -> None:
    state = await daemon.client.get(f"{BASE}/features/windows-pool")
    assert state.json() == {"tenant": "acme", "feature": "windows-pool", "enabled": False}
    for verb in ("windows_launch", "windows_windows", "windows_release", "windows_run_spec"):
        response = await daemon.verb("coder-1", verb, {"program": "notepad.exe"})
        assert response.status_code == 403
        error = response.json()["error"]
        assert error["code"] == "FEATURE_DISABLED"
        assert error["data"]["httpStatus"] is None and error["data"]["retryable"] is False
    assert not daemon.pool.requests


async def test_every_verb_through_rest(daemon: Daemon) -> None:
    await daemon.enable()
    holder = "coder-1"
    launched = await daemon.ok(holder, "windows_launch", {"program": "notepad.exe"})
    hwnd = launched["hwnd"]
    assert launched["title"] == "Untitled - Notepad" and launched["pid"]
    listed = await daemon.ok(holder, "windows_windows")
    assert hwnd in [w["hwnd"] for w in listed["windows"]]
    assert (await daemon.ok(holder, "windows_focus", {"hwnd": hwnd}))["hwnd"] == hwnd
    snapshot = await daemon.ok(holder, "windows_snapshot", {"hwnd": hwnd})
    assert "ref=e" in str(snapshot)
    assert await daemon.ok(holder, "windows_click", {"automationId": "file"})
    typed = await daemon.ok(holder, "windows_type", {"automationId": "text", "text": "hello"})
    assert typed["typed"] is True
    assert (await daemon.ok(holder, "windows_key", {"keys": "Ctrl+S"}))["sent"] == "Ctrl+S"
    waited = await daemon.ok(
        holder,
        "windows_wait_for",
        {"title": "Untitled - Notepad", "state": "exists", "timeoutMs": 2000},
    )
    assert waited["reached"] is True
    assert await daemon.ok(holder, "windows_computer", {"action": "move", "x": 5, "y": 5})
    shot = await daemon.ok(holder, "windows_screenshot", {})
    assert shot["screenshotRef"].startswith("windows-screenshots/") and shot["bytes"] > 0
    task = await daemon.ok(holder, "windows_run_spec", {"script": "echo built\nexit 0"})
    handle = task["taskHandle"]
    for _ in range(100):
        status = await daemon.ok(holder, "windows_task_status", {"taskHandle": handle})
        if status["state"] != "running":
            break
        await asyncio.sleep(0.05)
    assert status["state"] == "succeeded"
    assert (await daemon.ok(holder, "windows_close", {"hwnd": hwnd}))["closed"] is True
    # One machine for all of it.
    opened = [p for m, p, _ in daemon.pool.requests if m == "POST" and p == "/v1/sessions"]
    assert len(opened) == 1
    leases = (await daemon.client.get(f"{BASE}/windows/leases")).json()["leases"]
    assert [(lease["holder"], lease["state"]) for lease in leases] == [(holder, "held")]
    assert leases[0]["sessionId"] in daemon.pool.sessions
    assert await daemon.ok(holder, "windows_release") == {"released": True, "outcome": "released"}
    assert not daemon.pool.sessions


async def test_release_is_idempotent_and_leases_nothing(daemon: Daemon) -> None:
    await daemon.enable()
    not_held = {"released": False, "outcome": "not_held"}
    assert await daemon.ok("coder-2", "windows_release") == not_held
    assert not daemon.pool.requests
    await daemon.ok("coder-2", "windows_windows")
    assert (await daemon.ok("coder-2", "windows_release"))["released"] is True
    assert await daemon.ok("coder-2", "windows_release") == not_held


async def test_errors_carry_their_code_and_status(daemon: Daemon) -> None:
    await daemon.enable()
    invalid = await daemon.verb("coder-3", "windows_type", {"text": "a", "secretRef": "x"})
    assert invalid.status_code == 400
    assert invalid.json()["error"]["code"] == "VALIDATION_ERROR"
    assert not daemon.pool.requests  # refused before any lease
    unknown = await daemon.verb("coder-3", "windows_fly")
    assert unknown.status_code == 400
    assert unknown.json()["error"]["code"] == "VALIDATION_ERROR"
    missing = await daemon.verb("coder-3", "windows_focus", {"hwnd": 424242})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "WINDOW_NOT_FOUND"
    (sid,) = list(daemon.pool.sessions)
    daemon.pool.evict(sid)
    evicted = await daemon.verb("coder-3", "windows_windows")
    assert evicted.status_code == 404
    error = evicted.json()["error"]
    assert error["code"] == "NOT_FOUND" and error["data"]["sessionEvicted"] is True
    assert (await daemon.verb("coder-3", "windows_windows")).status_code == 200


@pytest.mark.parametrize(
    ("verb", "args"),
    [
        ("windows_click", {"name": "Save"}),  # name without controlType
        ("windows_click", {"x": 10}),  # x without y
        ("windows_click", {"ref": "e1", "automationId": "save"}),  # two targets
        ("windows_type", {"text": "hello"}),  # no target
        ("windows_type", {"text": "hello", "name": "Save"}),
        ("windows_wait_for", {"title": "T", "timeoutMs": 100}),  # no state
        ("windows_wait_for", {"title": "T", "state": "exists"}),  # no timeoutMs
        ("windows_wait_for", {"state": "gone", "timeoutMs": 100}),  # no subject
    ],
)
async def test_incomplete_targets_and_waits_are_refused_before_any_lease(
    daemon: Daemon, verb: str, args: dict[str, Any]
) -> None:
    await daemon.enable()
    refused = await daemon.verb("coder-4", verb, args)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["data"]["httpStatus"] is None
    assert not daemon.pool.requests


async def test_a_long_wait_is_clamped_not_refused(daemon: Daemon) -> None:
    await daemon.enable()
    await daemon.ok("coder-5", "windows_launch", {"program": "notepad.exe"})
    waited = await daemon.ok(
        "coder-5",
        "windows_wait_for",
        {"title": "Untitled - Notepad", "state": "exists", "timeoutMs": 3_600_000},
    )
    assert waited["reached"] is True
    (sent,) = [body for _, path, body in daemon.pool.requests if path.endswith("/wait_for")]
    assert sent["timeoutMs"] == 600_000


async def test_feature_flag_needs_a_configured_token(daemon: Daemon) -> None:
    response = await daemon.client.put(
        f"{BASE}/features/windows-pool",
        json={"enabled": "yes"},
    )
    assert response.status_code == 400


async def _until(condition: Any, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)


def _count(daemon: Daemon, sid: str, event_type: str) -> int:
    page = EventJournal(daemon.store).read(session_stream(sid), 0, 10_000)
    return sum(1 for entry in page.entries if entry.type == event_type)


async def test_session_tools_lease_through_the_session_and_its_close_settles(
    daemon: Daemon,
) -> None:
    session = await daemon.client.post("/session", json={})
    sid = session.json()["sessionId"]
    mode = await daemon.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    assert mode.status_code == 200, mode.text
    prompt = {
        "prompt": [{"type": "text", "text": '/call windows_launch {"program": "notepad.exe"}'}]
    }
    # Feature off (tenant "default"): the tool is not offered to the model.
    off = await daemon.client.post(f"/session/{sid}/prompt", json=prompt)
    assert off.status_code == 202, off.text
    await _until(lambda: _count(daemon, sid, "turn_complete") == 1)
    assert not daemon.pool.requests
    enabled = await daemon.client.put(
        "/api/v1/tenants/default/features/windows-pool", json={"enabled": True}
    )
    assert enabled.status_code == 200
    on = await daemon.client.post(f"/session/{sid}/prompt", json=prompt)
    assert on.status_code == 202, on.text
    await _until(lambda: _count(daemon, sid, "turn_complete") == 2)
    assert daemon.pool.holders() == [f"session-{sid}"]
    (pool_session,) = list(daemon.pool.sessions)
    leases = (await daemon.client.get("/api/v1/tenants/default/windows/leases")).json()
    assert leases["leases"][0]["holder"] == f"session-{sid}"
    closed = await daemon.client.delete(f"/session/{sid}")
    assert closed.status_code == 204
    await _until(lambda: not daemon.pool.sessions)
    assert daemon.pool.closed[pool_session]  # notepad closed with the lease


async def test_a_stopped_agent_releases_its_lease(daemon: Daemon) -> None:
    await daemon.enable()
    feature = await daemon.client.put(f"{BASE}/features/standing-agents", json={"enabled": True})
    assert feature.status_code == 200, feature.text
    instance = feature.json()["soaInstanceId"]  # the tenant's bootstrapped SOA
    await daemon.ok(f"agent-{instance}", "windows_windows")
    assert daemon.pool.sessions
    stopped = await daemon.client.post(f"{BASE}/agents/{instance}/stop")
    assert stopped.status_code == 200, stopped.text
    await _until(lambda: not daemon.pool.sessions)
    # Stopped: a verb for it leases nothing until the agent is started again.
    late = await daemon.verb(f"agent-{instance}", "windows_windows")
    assert late.status_code == 400, late.text
    assert late.json()["error"]["data"]["reason"] == "holder_settled"
    assert not daemon.pool.sessions


async def test_a_session_close_releases_a_lease_a_client_took_for_it(daemon: Daemon) -> None:
    """The session's own tools never used Windows: its close still settles `session-{id}`."""
    sid = (await daemon.client.post("/session", json={})).json()["sessionId"]
    default = "/api/v1/tenants/default"
    await daemon.client.put(f"{default}/features/windows-pool", json={"enabled": True})
    leased = await daemon.client.post(f"{default}/windows/session-{sid}/windows_windows", json={})
    assert leased.status_code == 200, leased.text
    assert daemon.pool.holders() == [f"session-{sid}"]
    assert (await daemon.client.delete(f"/session/{sid}")).status_code == 204
    await _until(lambda: not daemon.pool.sessions)
    # Closed: a verb for it is refused before any lease, a release answers not_held.
    late = await daemon.client.post(f"{default}/windows/session-{sid}/windows_windows", json={})
    assert late.status_code == 400, late.text
    error = late.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["data"]["reason"] == "holder_settled"
    assert error["data"]["httpStatus"] is None
    released = await daemon.client.post(f"{default}/windows/session-{sid}/windows_release", json={})
    assert released.json() == {"result": {"released": False, "outcome": "not_held"}}
    assert not daemon.pool.sessions


async def test_agentrt_holders_lease_only_under_their_own_tenant(daemon: Daemon) -> None:
    """A session's lease is tenant `default`'s, an agent's its tenant's: under another
    tenant the holder's settlement would never reach the lease, so the door refuses."""
    await daemon.enable()
    sid = (await daemon.client.post("/session", json={})).json()["sessionId"]
    feature = await daemon.client.put(f"{BASE}/features/standing-agents", json={"enabled": True})
    instance = feature.json()["soaInstanceId"]
    other = "/api/v1/tenants/other"
    await daemon.client.put(f"{other}/features/windows-pool", json={"enabled": True})
    for tenant, holder in [
        (BASE, f"session-{sid}"),  # a session under acme
        (other, f"agent-{instance}"),  # acme's agent under another tenant
        (BASE, "agent-no-such-agent"),
        (BASE, "turn-no-such-turn"),
    ]:
        refused = await daemon.client.post(f"{tenant}/windows/{holder}/windows_windows", json={})
        assert refused.status_code == 400, (holder, refused.text)
        error = refused.json()["error"]
        assert error["code"] == "VALIDATION_ERROR", holder
        assert error["data"]["reason"] == "unknown_holder", holder
    assert not daemon.pool.requests
    # A client's own names stay free.
    assert await daemon.ok("coder-session-7", "windows_windows")


async def test_a_long_held_lease_continues_as_new_on_the_same_machine(daemon: Daemon) -> None:
    await daemon.enable()
    await daemon.ok("coder-long", "windows_windows")
    (sid,) = list(daemon.pool.sessions)
    handle = lease_handle(daemon.temporal, "coder-long")
    first_run = (await handle.describe()).run_id
    # The dev server suggests continue-as-new at 300 events (tests/conftest.py).
    for _ in range(80):
        await daemon.ok("coder-long", "windows_windows")
    opened = [p for m, p, _ in daemon.pool.requests if m == "POST" and p == "/v1/sessions"]
    assert len(opened) == 1 and list(daemon.pool.sessions) == [sid]
    leases = (await daemon.client.get(f"{BASE}/windows/leases")).json()["leases"]
    assert [(lease["sessionId"], lease["state"]) for lease in leases] == [(sid, "held")]
    assert (await handle.describe()).run_id != first_run  # it did continue as new


async def test_a_session_screenshot_shows_the_model_its_image(daemon: Daemon) -> None:
    """windows_screenshot as a session tool: the transcript keeps the reference only, and
    the next model request carries the image itself (a user message after the tool's), for
    the last IMAGES_SHOWN screenshots; an older one is sent as its reference."""
    with FakeOpenAI() as model:
        body = {"baseUrl": model.base_url, "credentials": [{"alias": "main", "apiKey": "sk"}]}
        put = await daemon.client.put("/api/v1/llm/providers/fake", json=body)
        assert put.status_code == 200, put.text
        preset = {"model": "m", "provider": "fake", "fallback": []}
        put = await daemon.client.put("/api/v1/llm/presets/vision", json=preset)
        assert put.status_code == 200, put.text
        put = await daemon.client.put(
            f"/api/v1/llm/sites/{SESSION_SITE}/preset", json={"presetId": "vision"}
        )
        assert put.status_code == 200, put.text
        await daemon.client.put(
            "/api/v1/tenants/default/features/windows-pool", json={"enabled": True}
        )
        sid = (await daemon.client.post("/session", json={})).json()["sessionId"]
        await daemon.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
        calls = [
            {"id": f"shot-{n}", "name": "windows_screenshot", "arguments": {}}
            for n in range(IMAGES_SHOWN + 1)
        ]
        model.queue_tool_calls(calls)
        model.queue_text("I see the desktop.")
        prompt = {"prompt": [{"type": "text", "text": "look at the screen"}]}
        on = await daemon.client.post(f"/session/{sid}/prompt", json=prompt)
        assert on.status_code == 202, on.text
        await _until(lambda: _count(daemon, sid, "turn_complete") == 1)
        assert len(model.requests) == 2
        messages = model.requests[1].body["messages"]
    journal = EventJournal(daemon.store)
    transcript = journal.read(session_transcript_stream(sid), 0, 10_000)
    tools = [e.data for e in transcript.entries if e.data.get("role") == "tool"]
    assert [t["tool_call_id"] for t in tools] == [c["id"] for c in calls]
    refs: list[str] = []
    for tool in tools:
        (image,) = tool["images"]
        assert image["ref"].startswith(f"windows-screenshots/default/session-{sid}#")
        assert image.get("data_url") is None  # the transcript holds only the reference
        refs.append(image["ref"])
    indexes = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assert len(indexes) == len(refs)
    older, *recent = zip(indexes, refs, strict=True)
    index, ref = older
    assert ref in messages[index]["content"]
    assert messages[index + 1]["content"] == [
        {"type": "text", "text": f"Screenshot {ref} from the call shot-0 (not shown)"}
    ]
    for index, ref in recent:
        stored = await read_screenshot(journal, ref)
        assert stored is not None
        mime, png = stored
        assert mime == "image/png" and png.startswith(b"\x89PNG")
        shown = messages[index + 1]
        assert shown["role"] == "user"
        url = f"data:{mime};base64,{base64.b64encode(png).decode('ascii')}"
        assert {"type": "image_url", "image_url": {"url": url}} in shown["content"]
