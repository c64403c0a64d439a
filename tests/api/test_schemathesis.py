"""Schemathesis against the live app (issue 7): no 5xx, and no response that contradicts
/openapi.json (status code declared, body and headers conforming).

A real uvicorn on loopback serves the app (API in process, a real worker on the dev
server), with a bearer token so the strict mutation routes are reachable, an
agent-tools browser session (cookie, CSRF token, Origin) so the gateway's guards
pass, and a seeded session and turn so path parameters can hit real objects. The
Schemathesis calls are synchronous: they run in a thread while the event loop serves.
The number of examples per operation is bounded; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from temporalio.testing import WorkflowEnvironment

from api.security import RateLimiter
from runtime.investigation.demo import ensure_demo
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.agent_tools_helpers import DEMO_PROMPT
from tests.conftest import ApiFactory, free_port
from worker import build_worker

TOKEN = "schemathesis-token"
AGENTS_TENANT = "schemathesis"
EXAMPLES_PER_OPERATION = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# An SSE stream never ends on its own; its 4xx are covered by
# tests/api/sessions/test_session_events.py.
SKIPPED = {
    ("GET", "/session/{session_id}/events"),
    # Covered by tests/api/standing_agents/test_agents_api.py (over uvicorn, with replay).
    ("GET", "/api/v1/tenants/{tenant}/agents/{instance_id}/stream"),
}
# A long poll waits up to `wait` seconds when nothing happens: keep the run short.
OVERRIDES: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/api/v1/agent-tools/events"): {"query": {"wait": 0}},
}
# Closing the seeded session would turn every later session route into a 404.
RANDOM_IDS_ONLY = {("DELETE", "/session/{session_id}")}


@dataclass
class Live:
    base_url: str
    headers: dict[str, str]
    objects: dict[str, str]  # path parameter -> the id of a real object


@pytest.fixture
async def live(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[Live]:
    port = free_port()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    values: dict[str, Any] = {
        "data_dir": tmp_path / ".data",
        "task_queue": task_queue,
        "workspace": workspace,
        "token": TOKEN,
        "port": port,
        # A generated POST naming `qwen-oauth` must not reach the internet (connection refused).
        "qwen_oauth_base_url": "http://127.0.0.1:9",
    }
    settings_ = Settings(**values)
    store = Store(settings_.resolved_database_url)
    upgrade_to_head(store.engine)
    with store.transaction() as session:
        ensure_demo(session, "demo")
    async with AsyncExitStack() as stack:
        stack.callback(store.dispose)
        await stack.enter_async_context(build_worker(dev_env.client, settings_, store))
        app = (await api(**values)).app  # type: ignore[attr-defined]
        # The gateway's own guard allows 60 mutations a minute: lift it to cover the routes.
        app.state.agent_tools_limiter = RateLimiter({"mutation": 1_000_000})
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
        )
        serving = asyncio.create_task(server.serve())
        stack.push_async_callback(_stop, server, serving)
        for _ in range(1000):
            if server.started:
                break
            await asyncio.sleep(0.01)
        assert server.started
        base_url = f"http://127.0.0.1:{port}"
        origin = base_url
        async with httpx.AsyncClient(
            base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}
        ) as client:
            session_id = (await client.post("/session", json={})).json()["sessionId"]
            opened = await client.get("/api/v1/agent-tools/session")
            csrf = opened.json()["csrfToken"]
            cookie = "; ".join(f"{k}={v}" for k, v in opened.cookies.items())
            turn = await client.post(
                "/api/v1/agent-tools/turns",
                json={"prompt": DEMO_PROMPT},
                headers={"Origin": origin, "X-CSRF-Token": csrf, "Cookie": cookie},
            )
            assert turn.status_code == 202, turn.text
            # A tenant with standing agents on, so agent routes can reach a real agent.
            enabled = await client.put(
                f"/api/v1/tenants/{AGENTS_TENANT}/features/standing-agents",
                json={"enabled": True},
            )
            assert enabled.status_code == 200, enabled.text
        yield Live(
            base_url=base_url,
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Origin": origin,
                "X-CSRF-Token": csrf,
                "Cookie": cookie,
            },
            objects={
                "session_id": session_id,
                "turn_id": turn.json()["turn_id"],
                "tenant": AGENTS_TENANT,
                "instance_id": enabled.json()["soaInstanceId"],
            },
        )


async def _stop(server: uvicorn.Server, serving: asyncio.Task[None]) -> None:
    server.should_exit = True
    await serving


def _run_operation(live: Live, operation: APIOperation[Any, Any, Any, Any]) -> None:
    """Bounded property-based run of one operation (random and real path objects)."""
    key = (operation.method.upper(), operation.path)
    overrides = OVERRIDES.get(key, {})
    strategy = st.one_of(
        operation.as_strategy(**overrides),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE, **overrides),
    )
    known = {
        name: value
        for name, value in live.objects.items()
        if f"{{{name}}}" in operation.path and key not in RANDOM_IDS_ONLY
    }
    if known:
        strategy = st.one_of(strategy, operation.as_strategy(path_parameters=known, **overrides))

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Case[Any]) -> None:
        case.call_and_validate(
            base_url=live.base_url, headers=live.headers, checks=CHECKS, timeout=60
        )

    run()


def _run_all(live: Live, document: dict[str, Any]) -> list[str]:
    schema = schemathesis.openapi.from_dict(document)
    failures: list[str] = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            failures.append(f"invalid operation in the document: {result.err()}")
            continue
        operation = result.ok()
        if (operation.method.upper(), operation.path) in SKIPPED:
            continue
        try:
            _run_operation(live, operation)
        except (Exception, FailureGroup) as err:  # one report per operation; all still run
            failures.append(f"{operation.method.upper()} {operation.path}: {err}")
    return failures


# Long by design (about 45 s on 2 cores): 25 generated requests for each of the API's
# operations, positive and negative, each checked against the document.
async def test_the_api_keeps_its_openapi_promises(live: Live) -> None:
    async with httpx.AsyncClient(base_url=live.base_url, headers=live.headers) as client:
        document: dict[str, Any] = (await client.get("/openapi.json")).json()
    run: Callable[[Live, dict[str, Any]], list[str]] = _run_all
    failures = await asyncio.to_thread(run, live, document)
    assert not failures, "\n\n".join(failures)


async def test_the_document_lists_no_default_422_and_declares_the_hand_parsed_bodies(
    live: Live,
) -> None:
    """FastAPI's default 422 is gone (this app answers validation errors with 400); a 422
    a route sends itself (a workspace `binary_file`, a Windows SECRET_TARGET_NOT_MASKED)
    is declared with its own body."""
    async with httpx.AsyncClient(base_url=live.base_url, headers=live.headers) as client:
        document: dict[str, Any] = (await client.get("/openapi.json")).json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            own_422 = operation["responses"].get("422")
            assert own_422 is None or "HTTPValidationError" not in str(own_422), (method, path)
            assert {"401", "403", "500"} <= set(operation["responses"]), (method, path)
    hand_parsed = [
        ("post", "/session"),
        ("patch", "/session/{session_id}/metadata"),
        ("post", "/session/{session_id}/model"),
        ("post", "/session/{session_id}/approval-mode"),
        ("post", "/session/{session_id}/load"),
        ("post", "/session/{session_id}/resume"),
        ("post", "/session/{session_id}/prompt"),
        ("post", "/permission/{request_id}"),
        ("post", "/session/{session_id}/permission/{request_id}"),
    ]
    for method, path in hand_parsed:
        body = document["paths"][path][method]["requestBody"]
        assert "application/json" in body["content"], (method, path)
    assert "HTTPValidationError" not in document["components"]["schemas"]
