"""agentrt as an MCP server (api/mcp/server.py): `/mcp` driven by the official Python SDK's
client over Streamable HTTP against the API served by uvicorn with a real worker: tokens
and tenants, the registry, a coding task claimed once and completed (the proposing
agent's next turn carries it), a coder's decision answered by a human, errors as
`isError` results with agentrt's body."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Tool, ToolAnnotations

from runtime.coding_tasks import store as tasks
from runtime.standing_agents.models import AgentLedgerTurn
from runtime.windows.verbs import WindowsVerb
from tests.agents_helpers import AgentsDaemon, AgentsFactory, dependency_turn, served
from tests.conftest import free_port, migrated_sqlite

ROOT = Path(__file__).resolve().parents[3]
TOOLS = {
    "agent_register",
    "agent_heartbeat",
    "agent_list",
    "agent_route",
    "agent_unregister",
    "coding_task_list",
    "coding_task_get",
    "coding_task_claim",
    "coding_task_update",
    "coding_task_complete",
    "decision_request",
    "decision_get",
}


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    return migrated_sqlite(sqlite_template, tmp_path / ".data" / "agentrt.db")


@asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0))
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def _token(d: AgentsDaemon, tenant: str, name: str, role: str) -> dict[str, str]:
    made = await d.client.post(f"{d.base(tenant)}/tokens", json={"name": name, "role": role})
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


def _hints(tool: Tool) -> ToolAnnotations:
    assert tool.annotations is not None
    return tool.annotations


async def _call(client: Client, tool: str, **args: Any) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    return bool(result.is_error), json.loads(text)


async def test_a_coder_registers_claims_once_and_completes_and_the_agent_hears_of_it(
    agents: AgentsFactory,
) -> None:
    d = await agents(port=free_port())
    tenant = d.tenant()
    soa = await d.soa(tenant)
    coder = await _token(d, tenant, "alice", "coder")
    rival = await _token(d, tenant, "bob", "coder")
    row = tasks.create(
        d.store,
        tenant=tenant,
        title="Port the parser",
        instructions="port it",
        proposed_by=f"agent:{soa}",
        now=datetime.now(UTC),
        op_id="mcp-test-1",
        instance_id=soa,
        capabilities=["python"],
    )
    async with served(d) as http:
        url = f"{str(http.base_url).rstrip('/')}/mcp"
        async with mcp_client(url, coder) as alice, mcp_client(url, rival) as bob:
            listed = {t.name for t in (await alice.list_tools()).tools}
            assert listed == TOOLS | {v.value for v in WindowsVerb}
            tools = {t.name: t for t in (await alice.list_tools()).tools}
            assert _hints(tools["coding_task_list"]).read_only_hint is True
            assert _hints(tools["coding_task_claim"]).read_only_hint is False
            error, entry = await _call(
                alice, "agent_register", agentId="alice-1", role="Coder", capabilities=["python"]
            )
            assert not error and entry["capabilities"] == ["python"]
            error, routed = await _call(alice, "agent_route", capability="python")
            assert [a["agentId"] for a in routed["agents"]] == ["alice-1"]
            # The open tasks a coder's capabilities cover: the python task, not for go.
            error, mine = await _call(alice, "coding_task_list", capabilities=["python", "go"])
            assert not error and [t["taskId"] for t in mine["tasks"]] == [row.task_id]
            error, other = await _call(alice, "coding_task_list", capabilities=["go"])
            assert not error and other["tasks"] == []
            error, body = await _call(alice, "coding_task_claim", taskId=row.task_id)
            assert error and body["code"] == "agent_not_registered"
            error, held = await _call(
                alice, "coding_task_claim", taskId=row.task_id, agentId="alice-1"
            )
            assert not error and (held["state"], held["holder"]) == ("claimed", "coder:alice")
            error, again = await _call(
                alice, "coding_task_claim", taskId=row.task_id, agentId="alice-1"
            )
            assert not error and again["holder"] == "coder:alice"  # a retry: the same
            await _call(
                bob, "agent_register", agentId="bob-1", role="Coder", capabilities=["python"]
            )
            error, lost = await _call(bob, "coding_task_claim", taskId=row.task_id, agentId="bob-1")
            assert error and lost["code"] == "task_not_open"
            # alice-1 is alice's entry: bob may not take, refresh or remove it.
            error, taken = await _call(
                bob, "agent_register", agentId="alice-1", role="Coder", capabilities=[]
            )
            assert error and taken["code"] == "agent_not_yours"
            error, beat = await _call(bob, "agent_heartbeat", agentId="alice-1")
            assert error and beat["code"] == "agent_not_yours"
            error, gone = await _call(bob, "agent_unregister", agentId="alice-1")
            assert error and gone["code"] == "agent_not_yours"
            for _ in range(2):
                error, progressed = await _call(
                    alice, "coding_task_update", taskId=row.task_id, note="half", noteId="n1"
                )
            assert not error and len(progressed["notes"]) == 1
            error, theirs = await _call(
                bob, "coding_task_complete", taskId=row.task_id, outcome="succeeded"
            )
            assert error and theirs["code"] == "not_task_holder"
            for _ in range(2):
                error, done = await _call(
                    alice,
                    "coding_task_complete",
                    taskId=row.task_id,
                    outcome="succeeded",
                    summary="ported",
                    artifacts=[{"kind": "commit", "ref": "abc123"}],
                )
                assert not error and done["state"] == "succeeded"
            assert done["settledBy"] == "coder:alice"

    def turn() -> AgentLedgerTurn | None:
        return dependency_turn(d.store, soa)

    found = await d.wait_until(turn, "the agent's turn on the completion", timeout=90)
    assert found.event_payload["summary"] == "ported"


async def test_a_coders_question_reaches_a_human_and_the_answer_comes_back(
    agents: AgentsFactory,
) -> None:
    d = await agents(port=free_port())
    tenant = d.tenant()
    await d.soa(tenant)
    coder = await _token(d, tenant, "alice", "coder")
    async with served(d) as http:
        url = f"{str(http.base_url).rstrip('/')}/mcp"
        async with mcp_client(url, coder) as alice:
            ask = {"title": "Drop table?", "body": "The migration drops t.", "requestId": "q1"}
            error, asked = await _call(alice, "decision_request", options=["yes", "no"], **ask)
            error_again, again = await _call(
                alice, "decision_request", options=["yes", "no"], **ask
            )
            assert not error and not error_again and asked["decisionId"] == again["decisionId"]
            assert (asked["source"], asked["payload"]["askedBy"]) == ("coder", "coder:alice")
            answer = {"resolution": "no", "respondedBy": "ops"}
            responded = await http.post(
                f"{d.base(tenant)}/decisions/{asked['decisionId']}/respond", json=answer
            )
            assert responded.status_code == 200, responded.text
            error, got = await _call(alice, "decision_get", decisionId=asked["decisionId"])
            assert not error and (got["status"], got["resolution"]) == ("resolved", "no")
            error, missing = await _call(alice, "decision_get", decisionId="nope")
            assert error and missing["code"] == "decision_not_found"


async def test_tokens_tenants_and_roles_at_the_door(agents: AgentsFactory) -> None:
    d = await agents(port=free_port())
    tenant, other = d.tenant(), d.tenant()
    await d.soa(tenant)
    await d.soa(other)
    coder = await _token(d, tenant, "alice", "coder")
    async with served(d) as http:
        url = f"{str(http.base_url).rstrip('/')}/mcp"
        async with mcp_client(url, coder) as alice:
            error, listed = await _call(alice, "coding_task_list")
            assert not error and listed == {"tasks": []}
        # The coder's token reaches no other tenant's REST, nor its own.
        refused = await http.get(f"{d.base(other)}/coding-tasks", headers=coder)
        assert (refused.status_code, refused.json()["code"]) == (403, "forbidden_tenant")
        # The deployment token names its tenant in a header.
        admin = {"Authorization": str(d.client.headers["Authorization"])}
        async with mcp_client(url, admin) as root:
            error, body = await _call(root, "agent_list")
            assert error and body["code"] == "tenant_required"
        async with mcp_client(url, {**admin, "X-Agentrt-Tenant": other}) as root:
            error, body = await _call(root, "agent_list")
            assert not error and body["agents"][0]["role"] == "Coordinator"
            await _call(root, "agent_register", agentId="other-1", role="Coder", capabilities=[])
        # A coder's token acts in its own tenant only, whatever header it sends.
        async with mcp_client(url, {**coder, "X-Agentrt-Tenant": other}) as alice:
            error, body = await _call(alice, "agent_list")
            assert not error and "other-1" not in [a["agentId"] for a in body["agents"]]
        raw = await http.post("/mcp", headers={"Authorization": "Bearer wrong"}, json={})
        assert raw.status_code == 401


async def test_a_tokenless_daemon_refuses_mcp(agents: AgentsFactory) -> None:
    d = await agents(token=None, port=free_port())
    async with served(d) as http:
        answer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert (answer.status_code, answer.json()["code"]) == (401, "token_required")
    assert isinstance(answer, httpx.Response)


async def test_a_coder_drives_the_windows_lane_of_the_task_it_holds(
    agents: AgentsFactory, tmp_path: Path
) -> None:
    """The 14 verbs are tools; the machine is the task's (holder task-{taskId}); a
    screenshot is image content; settling the task releases the machine."""
    from tests.fakes.windows_pool import FakeWindowsPool
    from tests.windows_helpers import POOL_TOKEN

    with FakeWindowsPool(token=POOL_TOKEN) as pool:
        d = await agents(
            port=free_port(), windows_pool_url=pool.base_url, windows_pool_token=POOL_TOKEN
        )
        tenant = d.tenant()
        await d.soa(tenant)
        on = await d.client.put(f"{d.base(tenant)}/features/windows-pool", json={"enabled": True})
        assert on.status_code == 200, on.text
        coder = await _token(d, tenant, "alice", "coder")
        row = tasks.create(
            d.store,
            tenant=tenant,
            title="Check the installer",
            instructions="run it",
            proposed_by="admin",
            now=datetime.now(UTC),
            op_id="mcp-windows-1",
        )
        async with served(d) as http:
            url = f"{str(http.base_url).rstrip('/')}/mcp"
            async with mcp_client(url, coder) as alice:
                offered = {t.name: t for t in (await alice.list_tools()).tools}
                names = set(offered)
                click = offered["windows_click"].input_schema
                assert {"taskId", "ref", "button"} <= set(click["properties"])
                assert _hints(offered["windows_screenshot"]).read_only_hint is True
                assert {n for n in names if n.startswith("windows_")} == {
                    v.value for v in WindowsVerb
                }
                error, body = await _call(alice, "windows_windows", taskId=row.task_id)
                assert error and body["code"] == "not_task_holder"
                await _call(alice, "coding_task_claim", taskId=row.task_id)
                error, body = await _call(alice, "windows_click", taskId=row.task_id)
                assert error and body["code"] == "VALIDATION_ERROR"
                claimed = tasks.get(d.store, tenant, row.task_id)
                error, listed = await _call(alice, "windows_windows", taskId=row.task_id)
                assert not error and isinstance(listed["result"], dict | list)
                # A verb is the holder at work: it heartbeats the claim (claimed → running).
                beaten = tasks.get(d.store, tenant, row.task_id)
                assert beaten.state == "running"
                assert beaten.heartbeat_at is not None and claimed.heartbeat_at is not None
                assert beaten.heartbeat_at > claimed.heartbeat_at
                shot = await alice.call_tool("windows_screenshot", {"taskId": row.task_id})
                assert not shot.is_error
                kinds = [c.type for c in shot.content]
                assert kinds == ["text", "image"]
                assert pool.holders() == [f"task-{row.task_id}"]
                audit = (
                    await d.journal.aread(f"coding-task/{tenant}/{row.task_id}", 0, 10)
                ).entries
                assert [(e.data["verb"], e.data["by"]) for e in audit] == [
                    ("windows_windows", "coder:alice"),
                    ("windows_screenshot", "coder:alice"),
                ]
                await _call(alice, "coding_task_complete", taskId=row.task_id, outcome="succeeded")

        await d.wait_until(lambda: pool.holders() == [], "the lease's release", timeout=60)


async def test_the_typescript_sdks_client_works_a_task(agents: AgentsFactory) -> None:
    """A coder built on npm's @modelcontextprotocol/sdk (tests/mcp_servers/coder_client.mjs)."""
    node = shutil.which("node")
    script = ROOT / "tests" / "mcp_servers" / "coder_client.mjs"
    if node is None or not (script.parent / "node_modules" / "@modelcontextprotocol").exists():
        pytest.skip("node and tests/mcp_servers (npm ci) are needed for the TypeScript SDK")
    d = await agents(port=free_port())
    tenant = d.tenant()
    await d.soa(tenant)
    made = await d.client.post(f"{d.base(tenant)}/tokens", json={"name": "ts", "role": "coder"})
    token = made.json()["token"]
    row = tasks.create(
        d.store,
        tenant=tenant,
        title="Bump a dependency",
        instructions="bump it",
        proposed_by="admin",
        now=datetime.now(UTC),
        op_id="mcp-ts-1",
        capabilities=["node"],
    )
    async with served(d) as http:
        url = f"{str(http.base_url).rstrip('/')}/mcp"
        process = await asyncio.create_subprocess_exec(
            node,
            str(script),
            url,
            token,
            row.task_id,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=script.parent,
        )
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    steps = {s["step"]: s for s in map(json.loads, out.decode().splitlines())}
    assert set(TOOLS) <= set(steps["tools"]["body"])
    assert steps["claim"]["body"]["holder"] == "coder:ts"
    assert len(steps["update"]["body"]["notes"]) == 1
    assert (steps["complete"]["body"]["state"], steps["complete"]["isError"]) == (
        "succeeded",
        False,
    )
    assert (
        steps["missing"]["isError"] and steps["missing"]["body"]["code"] == "coding_task_not_found"
    )
    assert steps["heartbeat"]["body"]["agentId"] == "ts-1"
    assert [a["agentId"] for a in steps["route"]["body"]["agents"]] == ["ts-1"]
    assert "ts-1" in [a["agentId"] for a in steps["list"]["body"]["agents"]]
    assert [t["taskId"] for t in steps["tasks"]["body"]["tasks"]] == [row.task_id]
    assert steps["get"]["body"]["summary"] == "done by ts"
    assert (steps["ask"]["body"]["source"], steps["answer"]["body"]["status"]) == ("coder", "open")
    # The tenant has no windows-pool feature: the lane's own code.
    assert steps["windows"]["isError"] and steps["windows"]["body"]["code"] == "FEATURE_DISABLED"
    assert steps["invalid"]["isError"]  # outcome outside the enum: the SDK's validation
    assert steps["unregister"]["body"] == {"agentId": "ts-1", "removed": True}


async def test_a_task_the_soa_proposes_for_any_coder_is_claimed_over_mcp(
    agents: AgentsFactory,
) -> None:
    """The loop: the scripted SOA proposes (`coder: any`), an MCP coder with the
    capability claims and completes it, the SOA's next turn carries the outcome."""
    d = await agents(port=free_port())
    tenant = d.tenant()
    soa = await d.soa(tenant)
    coder = await _token(d, tenant, "alice", "coder")
    propose = {"title": "Port it", "prompt": "port the parser", "coder": "any"}
    line = f"/call soa_propose_task {json.dumps({**propose, 'capabilities': ['python']})}"
    sent = await d.client.post(f"{d.base(tenant)}/agents/{soa}/messages", json={"text": line})
    assert sent.status_code == 202

    def proposed() -> list[Any]:
        return tasks.list_tasks(d.store, tenant)

    (task,) = await d.wait_until(proposed, "the proposed task", timeout=90)
    assert (task.state, task.holder, task.capabilities) == ("open", None, ["python"])
    async with served(d) as http:
        url = f"{str(http.base_url).rstrip('/')}/mcp"
        async with mcp_client(url, coder) as alice:
            await _call(
                alice, "agent_register", agentId="alice-1", role="Coder", capabilities=["python"]
            )
            error, held = await _call(
                alice, "coding_task_claim", taskId=task.task_id, agentId="alice-1"
            )
            assert not error and held["holder"] == "coder:alice"
            error, done = await _call(
                alice, "coding_task_complete", taskId=task.task_id, outcome="succeeded"
            )
            assert not error and done["state"] == "succeeded"

    def turn() -> AgentLedgerTurn | None:
        return dependency_turn(d.store, soa)

    found = await d.wait_until(turn, "the SOA's turn on the outcome", timeout=90)
    assert found.event_payload["taskId"] == task.task_id


async def test_every_windows_verb_over_mcp_and_a_retry_runs_once(agents: AgentsFactory) -> None:
    from tests.fakes.windows_pool import FakeWindowsPool
    from tests.windows_helpers import POOL_TOKEN

    with FakeWindowsPool(token=POOL_TOKEN) as pool:
        d = await agents(
            port=free_port(), windows_pool_url=pool.base_url, windows_pool_token=POOL_TOKEN
        )
        tenant = d.tenant()
        await d.soa(tenant)
        await d.client.put(f"{d.base(tenant)}/features/windows-pool", json={"enabled": True})
        coder = await _token(d, tenant, "alice", "coder")
        row = tasks.create(
            d.store,
            tenant=tenant,
            title="Drive notepad",
            instructions="drive it",
            proposed_by="admin",
            now=datetime.now(UTC),
            op_id="mcp-windows-all",
        )
        async with served(d) as http:
            url = f"{str(http.base_url).rstrip('/')}/mcp"
            async with mcp_client(url, coder) as alice:
                await _call(alice, "coding_task_claim", taskId=row.task_id)
                t = {"taskId": row.task_id}

                async def ok(verb: str, **args: Any) -> Any:
                    error, body = await _call(alice, verb, **t, **args)
                    assert not error, body
                    return body["result"]

                launch = {"program": "notepad.exe", "requestId": "launch-1"}
                launched = await ok("windows_launch", **launch)
                again = await ok("windows_launch", **launch)  # a retry: the same call
                assert again == launched and pool.launched.count("notepad.exe") == 1
                hwnd = launched["hwnd"]
                assert hwnd in [w["hwnd"] for w in (await ok("windows_windows"))["windows"]]
                assert (await ok("windows_focus", hwnd=hwnd))["hwnd"] == hwnd
                assert "ref=e" in str(await ok("windows_snapshot", hwnd=hwnd))
                assert await ok("windows_click", automationId="file")
                assert (await ok("windows_type", automationId="text", text="hi"))["typed"]
                assert (await ok("windows_key", keys="Ctrl+S"))["sent"] == "Ctrl+S"
                waited = await ok(
                    "windows_wait_for", title="Untitled - Notepad", state="exists", timeoutMs=2000
                )
                assert waited["reached"] is True
                assert await ok("windows_computer", action="move", x=5, y=5)
                shot = await alice.call_tool("windows_screenshot", t)
                assert not shot.is_error and [c.type for c in shot.content] == ["text", "image"]
                handle = (await ok("windows_run_spec", script="echo built\nexit 0"))["taskHandle"]
                for _ in range(100):
                    status = await ok("windows_task_status", taskHandle=handle)
                    if status["state"] != "running":
                        break
                    await asyncio.sleep(0.05)
                assert status["state"] == "succeeded"
                assert (await ok("windows_close", hwnd=hwnd))["closed"] is True
                assert (await ok("windows_release"))["released"] is True
                assert pool.holders() == []
