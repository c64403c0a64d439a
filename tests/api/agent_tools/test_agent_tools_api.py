"""The agent-tools gateway end to end: API in process, a real worker on the dev server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from activities.agent_tools import turn as agent_tools_activities
from api.security.ratelimit import RateLimiter
from runtime.agent_tools.contracts import ResearchDecided, turn_workflow_id
from runtime.investigation.demo import ensure_demo
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.agent_tools_helpers import DEMO_PROMPT, Browser
from tests.conftest import ApiFactory
from worker import build_worker
from workflows.agent_tools.turn import TurnWorkflow

EVENT_ORDER_UNTIL_AUTH = [
    "agent.turn.started",
    "agent.plan.updated",
]

GatewayFactory = Callable[..., Awaitable[Browser]]


@pytest.fixture
async def gateway(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    database_url: str,
) -> AsyncIterator[GatewayFactory]:
    stack = AsyncExitStack()

    async def make(provider: Any = None, **overrides: Any) -> Browser:
        data_dir = tmp_path / ".data"
        overrides.setdefault("database_url", database_url)
        settings = Settings(data_dir=data_dir, task_queue=task_queue, **overrides)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        with store.transaction() as session:
            ensure_demo(session, "demo")
        stack.callback(store.dispose)
        worker = build_worker(dev_env.client, settings, store, provider)
        await stack.enter_async_context(worker)
        client = await api(data_dir=data_dir, task_queue=task_queue, **overrides)
        return await Browser(client).open()

    yield make
    await stack.aclose()


async def _to_authorization(browser: Browser, prompt: str = DEMO_PROMPT) -> tuple[str, str]:
    turn = await browser.start_turn(prompt)
    events = await browser.wait_for_event(turn["turn_id"], "agent.authorization.required")
    research_id = events[-1]["payload"]["research_id"]
    return turn["turn_id"], research_id


def _assert_contiguous(events: list[dict[str, Any]]) -> None:
    seqs = [e["sequence"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs


# -- the full turn -------------------------------------------------------------------------


async def test_turn_waits_at_authorization_then_resumes_after_approval(
    gateway: GatewayFactory,
) -> None:
    browser = await gateway()
    turn_id, research_id = await _to_authorization(browser)
    events = [e for e in await browser.events() if e["turn_id"] == turn_id]
    _assert_contiguous(events)
    types = [e["type"] for e in events]
    assert types[:2] == EVENT_ORDER_UNTIL_AUTH
    assert types[-1] == "agent.authorization.required"
    tools = [e["payload"]["tool_id"] for e in events if e["type"] == "agent.tool.requested"]
    assert tools[0] == "investigation.search" and tools[-1] == "research.prepare"
    assert len(tools) >= 4
    for event in events:
        assert {"sequence", "timestamp", "type", "turn_id", "call_id", "refs", "payload"} <= set(
            event
        )
    # Each tool call: requested, started, completed, sharing a call id.
    for call_id in {e["call_id"] for e in events if e["type"] == "agent.tool.requested"}:
        assert [e["type"] for e in events if e["call_id"] == call_id][:3] == [
            "agent.tool.requested",
            "agent.tool.started",
            "agent.tool.completed",
        ]
    state = (await browser.get(f"/api/v1/agent-tools/turns/{turn_id}")).json()
    assert state["status"] == "awaiting_authorization"
    assert state["research_id"] == research_id

    # research.prepare created no grant and admitted nothing.
    research = (await browser.get(f"/api/v1/research/{research_id}")).json()
    assert research["state"] == "prepared"
    assert research.get("decision") in (None, {})

    assert (await browser.decide(research_id, "approve")).status_code == 200
    research = (await browser.get(f"/api/v1/research/{research_id}")).json()
    assert research["state"] == "admitted"

    response = await browser.resume(turn_id)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "completed"
    assert response.json()["result"] == "COMPLETED"
    events = [e for e in await browser.events() if e["turn_id"] == turn_id]
    _assert_contiguous(events)
    after = [e["type"] for e in events]
    assert after[-1] == "agent.turn.completed"
    assert after.count("agent.turn.completed") == 1
    reread = [e for e in events if e["type"] == "agent.tool.requested"][-1]
    assert reread["payload"]["tool_id"] == "research.get_state"

    # A second resume: a clear 409, and no new events.
    count = len(await browser.events())
    again = await browser.resume(turn_id)
    assert again.status_code == 409
    assert again.json()["code"] == "turn_not_waiting"
    assert len(await browser.events()) == count


async def test_resume_before_the_decision_is_409_and_silent(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn_id, research_id = await _to_authorization(browser)
    count = len(await browser.events())
    response = await browser.resume(turn_id)
    assert response.status_code == 409
    assert response.json()["code"] == "authorization_pending"
    assert response.json()["research_id"] == research_id
    assert len(await browser.events()) == count


async def test_a_decision_signalled_but_never_written_leaves_the_turn_waiting(
    gateway: GatewayFactory, dev_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The research route signals the turn, then writes; when the write never happens
    (the API died in between), the turn reads the store, finds no decision, and waits
    for one again: the resume is refused, and a real decision later completes it."""
    monkeypatch.setattr(agent_tools_activities, "DECISION_READS", 2)
    browser = await gateway()
    turn_id, research_id = await _to_authorization(browser)
    handle = dev_env.client.get_workflow_handle(turn_workflow_id("local", "demo", turn_id))
    await handle.signal(
        TurnWorkflow.research_decided,
        ResearchDecided(research_id=research_id, decision="approve"),
    )
    refused = await browser.resume(turn_id)
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "authorization_pending"
    state = (await browser.get(f"/api/v1/agent-tools/turns/{turn_id}")).json()
    assert state["status"] == "awaiting_authorization"

    assert (await browser.decide(research_id, "approve")).status_code == 200
    done = await browser.resume(turn_id)
    assert done.status_code == 200, done.text
    assert done.json()["result"] == "COMPLETED"
    events = [e for e in await browser.events() if e["turn_id"] == turn_id]
    _assert_contiguous(events)
    assert [e["type"] for e in events].count("agent.turn.completed") == 1


async def test_denial_ends_the_turn_denied(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn_id, research_id = await _to_authorization(browser)
    assert (await browser.decide(research_id, "deny")).status_code == 200
    events = await browser.wait_for_event(turn_id, "agent.turn.completed")
    assert events[-1]["payload"]["result"] == "DENIED"
    response = await browser.resume(turn_id)
    assert response.status_code == 409
    assert response.json()["code"] in ("research_denied", "turn_not_waiting")
    again = await browser.decide(research_id, "approve")
    assert again.status_code == 409
    assert again.json()["code"] == "research_already_decided"


async def test_unknown_turn_and_research_are_404(gateway: GatewayFactory) -> None:
    browser = await gateway()
    response = await browser.resume("no-such-turn")
    assert response.status_code == 404
    assert response.json()["code"] == "turn_not_found"
    response = await browser.decide(str(uuid.uuid4()), "approve")
    assert response.status_code == 404
    assert response.json()["code"] == "research_not_found"


async def test_the_agent_cannot_authorize_itself(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn_id, research_id = await _to_authorization(browser)
    # 1. No gateway tool decides: an invented decision tool is FAILED, not run.
    for tool_id in ("research.decide", "research.approve", "research.authorize"):
        response = await browser.post(
            "/api/v1/agent-tools/calls",
            {
                "turn_id": turn_id,
                "tool_id": tool_id,
                "input": {"research_id": research_id},
                "idempotency_key": f"self-{tool_id}",
            },
        )
        assert response.status_code == 200
        assert response.json()["status"] == "FAILED"
    # 2. Crafted inputs to the real tools are refused by their schemas.
    for tool_id, tool_input in (
        ("research.prepare", {"question": "q", "scope": {"node_ids": ["x"]}, "approve": True}),
        ("research.get_state", {"research_id": research_id, "decision": "approve"}),
    ):
        response = await browser.post(
            "/api/v1/agent-tools/calls",
            {
                "turn_id": turn_id,
                "tool_id": tool_id,
                "input": tool_input,
                "idempotency_key": f"crafted-{tool_id}",
            },
        )
        assert response.json()["status"] == "FAILED"
    # 3. Resume without a decision.
    assert (await browser.resume(turn_id)).json()["code"] == "authorization_pending"
    # 4. The decision route is not under the gateway.
    response = await browser.post(
        f"/api/v1/agent-tools/research/{research_id}/decision",
        {"decision": "approve", "decided_by": "agent"},
    )
    assert response.status_code == 404
    research = (await browser.get(f"/api/v1/research/{research_id}")).json()
    assert research["state"] == "prepared"


# -- calls, results, idempotency -------------------------------------------------------------


async def test_calls_are_idempotent_and_conflicting_keys_409(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn = await browser.start_turn(DEMO_PROMPT)
    call = {
        "turn_id": turn["turn_id"],
        "call_id": str(uuid.uuid4()),
        "tool_id": "investigation.search",
        "input": {"query": "transfer"},
        "context": {"ui": "test"},
        "object_refs": [],
        "idempotency_key": "k-1",
    }
    first = await browser.post("/api/v1/agent-tools/calls", call)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["status"] == "COMPLETED"
    assert body["replayed"] is False
    assert body["call_id"] == call["call_id"]
    assert body["result_id"] != body["call_id"]
    uuid.UUID(body["result_id"])

    async def call_events() -> list[str]:
        return [e["type"] for e in await browser.events() if e["call_id"] == call["call_id"]]

    assert await call_events() == [
        "agent.tool.requested",
        "agent.tool.started",
        "agent.tool.completed",
    ]
    replay = await browser.post("/api/v1/agent-tools/calls", call)
    assert replay.json()["result_id"] == body["result_id"]
    assert replay.json()["replayed"] is True
    assert len(await call_events()) == 3  # not executed again

    conflict = await browser.post(
        "/api/v1/agent-tools/calls", {**call, "input": {"query": "something else"}}
    )
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "idempotency_conflict"

    result = (await browser.get(f"/api/v1/agent-tools/results/{body['result_id']}")).json()
    for field in (
        "status",
        "object_refs",
        "artifacts",
        "observations",
        "provenance_refs",
        "diagnostic",
    ):
        assert field in result
    assert result["status"] == "COMPLETED"


async def test_bad_input_is_a_failed_result_not_a_500(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn = await browser.start_turn(DEMO_PROMPT)
    response = await browser.post(
        "/api/v1/agent-tools/calls",
        {
            "turn_id": turn["turn_id"],
            "tool_id": "graph.get_node",
            "input": {"node_id": 42},
            "idempotency_key": "bad",
        },
    )
    assert response.status_code == 200
    assert response.json()["status"] == "FAILED"
    assert 0 < len(response.json()["diagnostic"]) <= 1024


async def test_a_tool_needing_authorization_does_not_run(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn = await browser.start_turn(DEMO_PROMPT)
    catalog = (await browser.get("/api/v1/agent-tools/catalog")).json()["tools"]
    node_tool = next(t for t in catalog if t["tool_id"] == "graph.get_node")
    assert node_tool["availability"]["available"] is True
    search = await browser.post(
        "/api/v1/agent-tools/calls",
        {
            "turn_id": turn["turn_id"],
            "tool_id": "investigation.search",
            "input": {"query": "company", "kinds": ["node"]},
            "idempotency_key": "s",
        },
    )
    node = next(r["id"] for r in search.json()["object_refs"] if r["kind"] == "node")
    response = await browser.post(
        "/api/v1/agent-tools/calls",
        {
            "turn_id": turn["turn_id"],
            "tool_id": "research.prepare",
            "input": {"question": "Follow the money", "scope": {"node_ids": [node]}},
            "idempotency_key": "p",
        },
    )
    body = response.json()
    assert body["status"] == "AUTHORIZATION_REQUIRED"
    research = next(r["id"] for r in body["object_refs"] if r["kind"] == "research")
    state = (await browser.get(f"/api/v1/research/{research}")).json()
    assert state["state"] == "prepared"


async def test_unknown_result_and_turn(gateway: GatewayFactory) -> None:
    browser = await gateway()
    response = await browser.get(f"/api/v1/agent-tools/results/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.json()["code"] == "result_not_found"
    response = await browser.post(
        "/api/v1/agent-tools/calls",
        {"turn_id": "ghost", "tool_id": "jobs.get", "input": {}, "idempotency_key": "g"},
    )
    assert response.status_code == 404
    assert response.json()["code"] == "turn_not_found"


async def test_results_and_events_are_isolated_per_workspace(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn = await browser.start_turn(DEMO_PROMPT)
    events = await browser.wait_for_event(turn["turn_id"], "agent.tool.completed")
    result_id = next(e for e in events if e["type"] == "agent.tool.completed")["payload"][
        "result_id"
    ]
    assert result_id
    assert (await browser.get(f"/api/v1/agent-tools/results/{result_id}")).status_code == 200
    other = await browser.get(f"/api/v1/agent-tools/results/{result_id}?workspace=other")
    assert other.status_code == 404
    assert await browser.events(0, workspace="other") == []
    response = await browser.resume(f"{turn['turn_id']}")
    assert response.status_code in (409, 200)
    other_resume = await browser.post(
        f"/api/v1/agent-tools/turns/{turn['turn_id']}/resume", {"workspace": "other"}
    )
    assert other_resume.status_code == 404


async def test_retention_windows_evict_fifo(gateway: GatewayFactory) -> None:
    browser = await gateway(agent_tools_max_results=3, agent_tools_max_events=5)
    turn = await browser.start_turn("nothing matches zzqqxx")
    await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    ids = []
    for i in range(5):
        response = await browser.post(
            "/api/v1/agent-tools/calls",
            {
                "turn_id": turn["turn_id"],
                "tool_id": "investigation.search",
                "input": {"query": f"q{i}"},
                "idempotency_key": f"r{i}",
            },
        )
        ids.append(response.json()["result_id"])
    found = [(await browser.get(f"/api/v1/agent-tools/results/{rid}")).status_code for rid in ids]
    assert found == [404, 404, 200, 200, 200]
    page = (await browser.get("/api/v1/agent-tools/events?cursor=0")).json()
    assert len(page["events"]) == 5
    assert page["cursor_expired"] is True
    assert page["earliest_sequence"] == page["last_sequence"] - 4


# -- security of the surface -----------------------------------------------------------------


async def test_surface_needs_a_session_and_mutations_need_origin_and_csrf(
    gateway: GatewayFactory,
) -> None:
    browser = await gateway()
    client = browser.client
    body = {"prompt": DEMO_PROMPT}
    # No session cookie at all.
    client.cookies.clear()
    for path in ("/api/v1/agent-tools/catalog", "/api/v1/agent-tools/events"):
        response = await client.get(path)
        assert response.status_code == 403
        assert response.json()["code"] == "session_required"
    await browser.open()
    # Session but no Origin.
    response = await client.post(
        "/api/v1/agent-tools/turns", json=body, headers={"X-CSRF-Token": browser.csrf}
    )
    assert response.status_code == 403 and response.json()["code"] == "origin_required"
    # Session and Origin but a wrong or missing CSRF token.
    for headers in (
        {"Origin": "http://127.0.0.1:4170"},
        {"Origin": "http://127.0.0.1:4170", "X-CSRF-Token": "forged"},
    ):
        response = await client.post("/api/v1/agent-tools/turns", json=body, headers=headers)
        assert response.status_code == 403 and response.json()["code"] == "csrf_invalid"
    # A foreign Origin never gets that far.
    response = await client.post(
        "/api/v1/agent-tools/turns",
        json=body,
        headers={"Origin": "http://evil.example", "X-CSRF-Token": browser.csrf},
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Request denied by CORS policy"}
    # A foreign Host neither.
    response = await client.get("/api/v1/agent-tools/catalog", headers={"Host": "evil:4170"})
    assert response.status_code == 403
    # The session cookie is HttpOnly and SameSite=Strict.
    raw = (await client.get("/api/v1/agent-tools/session")).headers["set-cookie"].lower()
    assert "httponly" in raw and "samesite=strict" in raw


async def test_bearer_applies_on_top(gateway: GatewayFactory) -> None:
    with pytest.raises(AssertionError):
        await gateway(token="t0k3n")  # opening the session without the bearer fails


async def test_mutation_rate_guard(gateway: GatewayFactory) -> None:
    browser = await gateway()
    # A stopped clock: the guard refills a token a second, and on a loaded machine the 60
    # requests can take longer than that.
    limiter: RateLimiter = browser.client.app.state.agent_tools_limiter  # type: ignore[attr-defined]
    limiter.clock = lambda: 1000.0
    statuses = []
    for i in range(62):
        response = await browser.post(
            "/api/v1/agent-tools/calls",
            {"turn_id": "ghost", "tool_id": "jobs.get", "input": {}, "idempotency_key": f"{i}"},
        )
        statuses.append(response.status_code)
    assert 429 in statuses
    assert statuses.index(429) == 60


async def test_catalog_lists_the_nine_tools_with_every_attribute(gateway: GatewayFactory) -> None:
    browser = await gateway()
    body = (await browser.get("/api/v1/agent-tools/catalog")).json()
    tools = {tool["tool_id"]: tool for tool in body["tools"]}
    assert set(tools) == {
        "investigation.search",
        "graph.get_node",
        "graph.get_neighbors",
        "evidence.get_summary",
        "evidence.read_excerpt",
        "provenance.trace",
        "jobs.get",
        "research.get_state",
        "research.prepare",
    }
    for tool in tools.values():
        for attribute in (
            "tool_version",
            "capability_version",
            "description",
            "input_schema",
            "output_contract",
            "action_class",
            "risk_class",
            "cost_class",
            "network_contact",
            "authorization",
            "availability",
        ):
            assert attribute in tool, (tool["tool_id"], attribute)
        assert tool["network_contact"] is False
        assert tool["availability"]["available"] is True
    assert tools["research.prepare"]["authorization"]["required"] is True
    empty = (await browser.get("/api/v1/agent-tools/catalog?workspace=empty")).json()
    assert not any(
        t["availability"]["available"]
        for t in empty["tools"]
        if t["tool_id"].startswith(("graph.", "evidence."))
    )


async def test_unavailable_tools_answer_unavailable(gateway: GatewayFactory) -> None:
    browser = await gateway()
    turn = await browser.start_turn("anything", workspace="empty")
    events = await browser.wait_for_event(
        turn["turn_id"], "agent.turn.completed", workspace="empty"
    )
    assert events[-1]["payload"]["result"] == "COMPLETED"
    response = await browser.post(
        "/api/v1/agent-tools/calls",
        {
            "turn_id": turn["turn_id"],
            "workspace": "empty",
            "tool_id": "graph.get_node",
            "input": {"node_id": "o-kestrel"},
            "idempotency_key": "u",
        },
    )
    assert response.json()["status"] == "UNAVAILABLE"
    assert response.json()["diagnostic"]


async def test_a_turn_recorded_without_its_workflow_says_so_and_can_be_retried(
    gateway: GatewayFactory,
) -> None:
    """The API died between recording a turn and starting its workflow (issue 7, defect 3)."""
    from datetime import UTC, datetime

    from runtime.agent_tools.contracts import turn_workflow_id
    from runtime.agent_tools.models import AgentTurn

    # One turn id per run: the Temporal server is shared by the store backends'
    # parametrizations, and the sqlite run leaves its own turn/local/demo/<id> behind.
    orphan = f"orphan-{uuid.uuid4().hex[:8]}"
    b = await gateway()
    orphan = f"orphan-{uuid.uuid4()}"  # the dev server is shared by the store variants
    store: Store = b.client.app.state.store  # type: ignore[attr-defined]
    settings: Settings = b.client.app.state.settings  # type: ignore[attr-defined]
    with store.session() as db:
        db.add(
            AgentTurn(
                instance=settings.instance,
                workspace="demo",
                turn_id=orphan,
                agent="deterministic",
                prompt=DEMO_PROMPT,
                workflow_id=turn_workflow_id(settings.instance, "demo", orphan),
                created_at=datetime.now(UTC),
            )
        )
        db.commit()
    response = await b.get(f"/api/v1/agent-tools/turns/{orphan}")
    assert response.status_code == 409, response.text
    assert response.json()["code"] == "turn_not_started"
    retried = await b.post("/api/v1/agent-tools/turns", {"prompt": DEMO_PROMPT, "turn_id": orphan})
    assert retried.status_code == 202, retried.text
    await b.wait_for_event(orphan, "agent.authorization.required")
    state = await b.get(f"/api/v1/agent-tools/turns/{orphan}")
    assert state.status_code == 200


@pytest.mark.stack  # its own dev server, stopped mid-test
async def test_turn_creation_while_temporal_is_down_is_503_and_retriable(
    tmp_path: Path, task_queue: str
) -> None:
    """Temporal stops after the API connected: 503 temporal_unavailable, never a 500."""
    import httpx
    from temporalio.contrib.pydantic import pydantic_data_converter

    from api.app import create_app
    from runtime.temporal import temporal_cli_path

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli_path()),
        data_converter=pydantic_data_converter,
        ui=False,
        dev_server_log_level="error",
    )
    settings = Settings(
        data_dir=tmp_path / ".data", task_queue=task_queue, workspace=tmp_path, port=4170
    )
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    with store.transaction() as session:
        ensure_demo(session, "demo")
    app = create_app(settings, temporal_client=env.client)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:4170"
        ) as client,
    ):
        b = await Browser(client).open()
        await env.shutdown()
        response = await b.post(
            "/api/v1/agent-tools/turns", {"prompt": DEMO_PROMPT, "turn_id": "t-down"}
        )
        assert response.status_code == 503, response.text
        assert response.json()["code"] == "temporal_unavailable"
        assert response.headers["Retry-After"]
        state = await b.get("/api/v1/agent-tools/turns/t-down")
        assert state.status_code == 503, state.text
        assert state.json()["code"] == "temporal_unavailable"
    store.dispose()
