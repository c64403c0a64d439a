"""Bad input is a 400 in the spec's shape at the edge, never a 500 (issue 7, defect 5);
the last-resort 500 keeps the connection; Temporal RPC errors map to 503/404/409."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pydantic
import pytest
import uvicorn
from fastapi import FastAPI, Request
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from api.errors import INVALID_JSON, rpc_error
from api.input_bounds import (
    MAX_DISPLAY_NAME_CHARS,
    MAX_ID_CHARS,
    MAX_JSON_DEPTH,
    MAX_PATH_CHARS,
    MAX_SEQUENCE,
    strict_json_loads,
)
from api.sse import parse_last_event_id
from runtime.investigation.demo import ensure_demo
from runtime.sessions.contracts import MAX_DEADLINE_MS
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from tests.agent_tools_helpers import Browser
from tests.conftest import ApiFactory, free_port
from tests.session_helpers import Daemon, write_prompt
from worker import build_worker

TOKEN = "bounds-token"
DEEP = ("[" * 50_000 + "]" * 50_000).encode()
DEEP_OBJECT = ('{"a":' * 50_000 + "1" + "}" * 50_000).encode()
NON_STANDARD = ("NaN", "Infinity", "-Infinity")


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- the strict parser ---------------------------------------------------------------------


@pytest.mark.parametrize("constant", NON_STANDARD)
def test_non_standard_constants_are_refused(constant: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads(f'{{"deadlineMs": {constant}}}')
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads(f"[1, {constant}]".encode())


def test_depth_is_bounded() -> None:
    assert strict_json_loads(nested(MAX_JSON_DEPTH)) == json.loads(nested(MAX_JSON_DEPTH))
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads(nested(MAX_JSON_DEPTH + 1))
    for body in (DEEP, DEEP_OBJECT):
        with pytest.raises(json.JSONDecodeError):
            strict_json_loads(body)


def test_lone_surrogates_and_bad_utf8_are_refused() -> None:
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads('{"displayName": "\\ud800"}')
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads('{"\\udfff": 1}')
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads(b'{"a": "\xff\xfe"}')
    # A proper pair is a character like any other.
    assert strict_json_loads('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


def test_ordinary_json_passes() -> None:
    body = '{"prompt": [{"type": "text", "text": "hi"}], "deadlineMs": 1000, "x": 1.5e300}'
    assert strict_json_loads(body) == json.loads(body)


def test_huge_last_event_id_is_ignored_not_an_overflow() -> None:
    assert parse_last_event_id(str(2**64)) == 2**64  # > last: an epoch reset, no SQL
    assert parse_last_event_id("9" * 5000) is None


def test_settings_bound_the_prompt_deadline(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path, prompt_deadline_ms=MAX_DEADLINE_MS).prompt_deadline_ms
    with pytest.raises(pydantic.ValidationError):
        Settings(data_dir=tmp_path, prompt_deadline_ms=MAX_DEADLINE_MS + 1)


# -- Temporal RPC errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "http", "code"),
    [
        (RPCStatusCode.UNAVAILABLE, 503, "temporal_unavailable"),
        (RPCStatusCode.RESOURCE_EXHAUSTED, 503, "temporal_unavailable"),
        (RPCStatusCode.DEADLINE_EXCEEDED, 503, "worker_unavailable"),
        (RPCStatusCode.CANCELLED, 503, "worker_unavailable"),
        (RPCStatusCode.NOT_FOUND, 404, "workflow_not_found"),
        (RPCStatusCode.ALREADY_EXISTS, 409, "conflict"),
        (RPCStatusCode.FAILED_PRECONDITION, 409, "conflict"),
        (RPCStatusCode.INTERNAL, 500, -32000),
    ],
)
def test_rpc_error_mapping(status: RPCStatusCode, http: int, code: str | int) -> None:
    error = rpc_error(RPCError("secret detail", status, b""))
    assert error.status == http
    assert error.body["code"] == code
    assert "secret detail" not in json.dumps(error.body)
    if http == 503:
        assert error.headers == {"Retry-After": "5"}


def test_update_rpc_timeout_is_worker_unavailable() -> None:
    error = rpc_error(WorkflowUpdateRPCTimeoutOrCancelledError())
    assert (error.status, error.body["code"]) == (503, "worker_unavailable")
    assert error.headers == {"Retry-After": "5"}


def _failing_routes(app: FastAPI) -> None:
    async def unavailable() -> None:
        raise RPCError("connection refused at 10.0.0.1", RPCStatusCode.UNAVAILABLE, b"")

    async def update_timeout() -> None:
        raise WorkflowUpdateRPCTimeoutOrCancelledError()

    async def boom() -> None:
        raise RuntimeError("password=hunter2")

    async def deep() -> None:
        def down(n: int) -> int:
            return down(n + 1) + 1

        down(0)

    async def peer(request: Request) -> dict[str, Any]:
        return {"port": request.client.port if request.client else None}

    app.add_api_route("/test/unavailable", unavailable)
    app.add_api_route("/test/update-timeout", update_timeout)
    app.add_api_route("/test/boom", boom)
    app.add_api_route("/test/deep", deep)
    app.add_api_route("/test/peer", peer)


async def test_routes_answer_rpc_errors_and_crashes_in_the_spec_shapes(api: ApiFactory) -> None:
    client = await api(routes=_failing_routes)
    response = await client.get("/test/unavailable")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.json()["code"] == "temporal_unavailable"
    assert "10.0.0.1" not in response.text
    response = await client.get("/test/update-timeout")
    assert (response.status_code, response.json()["code"]) == (503, "worker_unavailable")
    for path, reason in (("/test/boom", "RuntimeError"), ("/test/deep", "RecursionError")):
        response = await client.get(path)
        assert response.status_code == 500
        body = response.json()
        assert body["error"] == "Internal error" and body["code"] == -32000
        assert body["data"]["reason"] == reason
        assert "hunter2" not in response.text


async def test_last_resort_500_keeps_the_connection(api: ApiFactory) -> None:
    """A real server: the connection that got the 500 serves the next request."""
    app = (await api(routes=_failing_routes)).app  # type: ignore[attr-defined]
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="critical")
    )
    serving = asyncio.create_task(server.serve())
    try:
        for _ in range(1000):
            if server.started:
                break
            await asyncio.sleep(0.01)
        assert server.started
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Host": "127.0.0.1:4170"},
            limits=limits,
        ) as client:
            before = (await client.get("/test/peer")).json()["port"]
            crash = await client.get("/test/boom")
            assert crash.status_code == 500
            assert crash.json()["code"] == -32000
            assert crash.headers.get("connection", "").lower() != "close"
            after = (await client.get("/test/peer")).json()["port"]
            assert before == after  # same client socket: the connection was kept
    finally:
        server.should_exit = True
        await serving


# -- session routes (API + worker) ---------------------------------------------------------


@pytest.fixture
async def daemon(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[Daemon]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    values: dict[str, Any] = {
        "data_dir": tmp_path / ".data",
        "task_queue": task_queue,
        "workspace": workspace,
        "token": TOKEN,
    }
    settings = Settings(**values)
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    async with AsyncExitStack() as stack:
        stack.callback(store.dispose)
        await stack.enter_async_context(build_worker(dev_env.client, settings, store))
        client = await api(**values)
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        yield Daemon(client=client, workspace=workspace.resolve(), journal=EventJournal(store))


def _body_routes(sid: str) -> list[tuple[str, str]]:
    return [
        ("POST", "/session"),
        ("PATCH", f"/session/{sid}/metadata"),
        ("POST", f"/session/{sid}/model"),
        ("POST", f"/session/{sid}/approval-mode"),
        ("POST", f"/session/{sid}/load"),
        ("POST", f"/session/{sid}/resume"),
        ("POST", f"/session/{sid}/prompt"),
        ("POST", "/permission/some-request"),
        ("POST", f"/session/{sid}/permission/some-request"),
    ]


async def test_non_standard_and_deep_json_is_400_on_every_session_route(daemon: Daemon) -> None:
    sid = (await daemon.create())["sessionId"]
    bodies: list[str | bytes] = [
        *(
            f'{{"prompt": [{{"type": "text", "text": "x"}}], "deadlineMs": {c}}}'
            for c in NON_STANDARD
        ),
        '{"displayName": NaN, "modelId": "m", "mode": "default"}',
        DEEP,
        DEEP_OBJECT,
        nested(MAX_JSON_DEPTH + 1),
        '{"displayName": "\\ud800"}',
    ]
    for method, path in _body_routes(sid):
        for body in bodies:
            response = await daemon.client.request(
                method, path, content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 400, (method, path, response.text)
            assert response.json() == INVALID_JSON, (method, path)


@pytest.mark.parametrize("deadline", [0, -1, 2**63, 10**30, MAX_DEADLINE_MS + 1, 1.5, True])
async def test_deadline_out_of_bounds_is_400(daemon: Daemon, deadline: Any) -> None:
    sid = (await daemon.create())["sessionId"]
    response = await daemon.client.post(
        f"/session/{sid}/prompt",
        json={"prompt": [{"type": "text", "text": "x"}], "deadlineMs": deadline},
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_deadline_ms"
    assert body["max"] == MAX_DEADLINE_MS


async def test_largest_deadline_is_accepted(daemon: Daemon) -> None:
    sid = (await daemon.create())["sessionId"]
    response = await daemon.client.post(
        f"/session/{sid}/prompt",
        json={"prompt": [{"type": "text", "text": "/say ok"}], "deadlineMs": MAX_DEADLINE_MS},
    )
    assert response.status_code == 202, response.text
    await daemon.wait_for(sid, "turn_complete", prompt_id=response.json()["promptId"])


async def test_long_strings_are_400(daemon: Daemon) -> None:
    sid = (await daemon.create())["sessionId"]
    client = daemon.client
    response = await client.post(f"/session/{sid}/model", json={"modelId": "m" * 3_000_000})
    assert (response.status_code, response.json()["code"]) == (400, "invalid_model_id")
    response = await client.post(f"/session/{sid}/model", json={"modelId": "m" * MAX_ID_CHARS})
    assert response.status_code != 500  # at the bound: the workflow decides (scripted only)

    name = "n" * (MAX_DISPLAY_NAME_CHARS + 1)
    response = await client.patch(f"/session/{sid}/metadata", json={"displayName": name})
    assert (response.status_code, response.json()["code"]) == (400, "invalid_metadata")
    name = name[:-1]
    response = await client.patch(f"/session/{sid}/metadata", json={"displayName": name})
    assert response.json() == {"sessionId": sid, "displayName": name}

    cwd = "/" + "c" * MAX_PATH_CHARS
    for path in ("/session", f"/session/{sid}/load", f"/session/{sid}/resume"):
        response = await client.post(path, json={"cwd": cwd})
        assert (response.status_code, response.json()["code"]) == (400, "invalid_cwd"), path


async def test_long_option_id_is_400(daemon: Daemon) -> None:
    sid = (await daemon.create())["sessionId"]
    prompt = await daemon.prompt(sid, write_prompt(daemon.workspace, "f.txt"))
    assert prompt.status_code == 202, prompt.text
    events = await daemon.wait_for(sid, "permission_request")
    request_id = next(e for e in events if e["type"] == "permission_request")["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "o" * (MAX_ID_CHARS + 1)}}
    for path in (f"/permission/{request_id}", f"/session/{sid}/permission/{request_id}"):
        response = await daemon.client.post(path, json=vote)
        assert response.status_code == 400, response.text
        assert response.json()["error"].startswith("`outcome` must be")
    cancel = {"outcome": {"outcome": "cancelled"}}
    assert (await daemon.client.post(f"/permission/{request_id}", json=cancel)).status_code == 200


# -- agent-tools routes (pydantic bodies) --------------------------------------------------


@pytest.fixture
async def browser(api: ApiFactory, task_queue: str, tmp_path: Path) -> Browser:
    data_dir = tmp_path / ".data"
    settings = Settings(data_dir=data_dir, task_queue=task_queue)
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    with store.transaction() as session:
        ensure_demo(session, "demo")
    store.dispose()
    client = await api(data_dir=data_dir, task_queue=task_queue)
    return await Browser(client).open()


async def test_agent_tools_bodies_refuse_non_standard_and_deep_json(browser: Browser) -> None:
    routes = {
        "/api/v1/agent-tools/turns": '{{"prompt": "hi", "extra": {c}}}',
        "/api/v1/agent-tools/turns/t-1/resume": '{{"workspace": "demo", "extra": {c}}}',
        "/api/v1/agent-tools/calls": '{{"turn_id": "t", "tool_id": "x", '
        '"idempotency_key": "k", "input": {{"n": {c}}}}}',
        "/api/v1/research/r-1/decision": '{{"decision": "deny", "decided_by": "me", "x": {c}}}',
    }
    headers = {**browser.mutation_headers, "Content-Type": "application/json"}
    for path, template in routes.items():
        bodies: list[str | bytes] = [template.format(c=c) for c in NON_STANDARD]
        for body in [*bodies, DEEP, DEEP_OBJECT]:
            response = await browser.client.post(path, content=body, headers=headers)
            assert response.status_code == 400, (path, response.text)
            assert response.json() == INVALID_JSON, path


async def test_agent_tools_call_id_is_bounded(browser: Browser) -> None:
    response = await browser.post(
        "/api/v1/agent-tools/calls",
        {"turn_id": "t", "tool_id": "x", "idempotency_key": "k", "call_id": "c" * 65},
    )
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request")


@pytest.mark.parametrize(
    "query",
    [f"cursor={2**63}", f"cursor={10**30}", "cursor=-1", "wait=nan", "wait=inf", "limit=501"],
)
async def test_event_query_out_of_bounds_is_400(browser: Browser, query: str) -> None:
    response = await browser.get(f"/api/v1/agent-tools/events?{query}")
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_request"


async def test_largest_event_cursor_is_fine(browser: Browser) -> None:
    response = await browser.get(f"/api/v1/agent-tools/events?cursor={MAX_SEQUENCE}")
    assert response.status_code == 200, response.text
    assert response.json()["events"] == []
