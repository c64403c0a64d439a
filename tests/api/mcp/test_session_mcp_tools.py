"""A session's MCP tools: offered as mcp__<server>__<tool>, asked for by a vote (or run as
a read when the server is trusted and the tool read-only), called once, and every fault
of the server a failed tool call with the server's message. API in process + a real
worker + a real MCP server (the SDK-built fault server, the npm `server-everything`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from runtime.store.operations import Operation
from tests.api.sessions.test_sessions import DaemonFactory, daemon
from tests.conftest import migrated_sqlite
from tests.mcp_helpers import (
    EVERYTHING,
    FILESYSTEM,
    FaultServer,
    fault_server,
    node_server,
    write_settings,
)
from tests.session_helpers import Daemon

__all__ = ["daemon"]

# These tests write the workspace's .qwen/settings.json themselves, as its owner would:
# trusted (AGENTRT_MCP_WORKSPACE_SERVERS); the approval of file entries has its own tests.
TRUSTED = "trusted"
TOKEN = "mcp-tools"  # the approval-mode and tool-toggle routes are strict mutations
PROCEED = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """MCP is agentrt's, not the store's: these run on SQLite only (each starts a server and
    a worker); the store's part of MCP runs on both in tests/runtime/mcp/test_mcp_store.py."""
    return migrated_sqlite(sqlite_template, tmp_path / ".data" / "agentrt.db")


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[FaultServer]:
    with fault_server(tmp_path) as server:
        yield server


def _updates(d: Daemon, sid: str, prompt_id: str) -> list[dict[str, Any]]:
    return [
        e["data"]["update"]
        for e in d.events(sid)
        if e["type"] == "session_update"
        and e.get("promptId") == prompt_id
        and e["data"]["update"]["sessionUpdate"] == "tool_call_update"
    ]


def _text(update: dict[str, Any]) -> str:
    return " ".join(c["content"]["text"] for c in update["content"] if c["type"] == "content")


async def _ask(d: Daemon, sid: str, line: str) -> tuple[str, dict[str, Any]]:
    prompt_id = (await d.prompt(sid, line)).json()["promptId"]
    events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
    request = [e for e in events if e["type"] == "permission_request"][-1]
    return prompt_id, request["data"]


async def _run(d: Daemon, sid: str, line: str) -> tuple[str, list[dict[str, Any]]]:
    prompt_id = (await d.prompt(sid, line)).json()["promptId"]
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    return prompt_id, _updates(d, sid, prompt_id)


async def test_a_call_asks_a_vote_and_reaches_the_server_once_with_its_operation_id(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "timeout": 20_000}})
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _ask(d, sid, '/call mcp__faults__record {"value": "one"}')
    assert request["toolCall"]["kind"] == "other"
    assert request["toolCall"]["rawInput"] == {"value": "one"}
    assert faults.calls() == []  # nothing reaches the server before the vote
    response = await d.client.post(f"/permission/{request['requestId']}", json=PROCEED)
    assert response.status_code == 200
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    (update,) = _updates(d, sid, prompt_id)
    assert update["status"] == "completed" and "recorded one" in _text(update)
    (call,) = faults.calls()
    assert call["value"] == "one"
    assert call["operationId"].startswith(f"session/{sid}/{prompt_id}/")


async def test_a_rejected_call_never_reaches_the_server(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url}})
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _ask(d, sid, '/call mcp__faults__record {"value": "no"}')
    reject = {"outcome": {"outcome": "selected", "optionId": "cancel"}}
    await d.client.post(f"/permission/{request['requestId']}", json=reject)
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    (update,) = _updates(d, sid, prompt_id)
    assert update["status"] == "failed"
    assert faults.calls() == []


async def test_a_read_only_tool_of_a_trusted_server_runs_like_a_read(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "trust": True}})
    sid = (await d.create())["sessionId"]
    _, updates = await _run(d, sid, "/call mcp__faults__count {}")
    assert [u["status"] for u in updates] == ["completed"]
    assert "permission_request" not in {e["type"] for e in d.events(sid)}
    # Not read-only: asks even on a trusted server.
    _, request = await _ask(d, sid, '/call mcp__faults__record {"value": "x"}')
    assert request["toolCall"]["title"]


async def test_a_read_only_tool_of_an_untrusted_server_asks(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url}})
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _ask(d, sid, "/call mcp__faults__count {}")
    await d.client.post(f"/permission/{request['requestId']}", json=PROCEED)
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    (update,) = _updates(d, sid, prompt_id)
    assert update["status"] == "completed"
    # Its readOnlyHint is only the server's word: the call ran once, under the ledger.
    with d.journal.store.session() as db:
        rows = db.exec(select(Operation).where(col(Operation.op_id).startswith(f"session/{sid}/")))
        assert [(r.kind, r.state) for r in rows] == [("mcp__faults__count", "done")]


async def test_plan_mode_refuses_and_yolo_runs_without_asking(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(token=TOKEN, mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url}})
    sid = (await d.create())["sessionId"]
    await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "plan"})
    _, updates = await _run(d, sid, '/call mcp__faults__record {"value": "plan"}')
    assert [u["status"] for u in updates] == ["failed"]
    await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    _, updates = await _run(d, sid, '/call mcp__faults__record {"value": "yolo"}')
    assert [u["status"] for u in updates] == ["completed"]
    assert [c["value"] for c in faults.calls()] == ["yolo"]


async def test_the_servers_faults_are_failed_calls_with_its_message(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(token=TOKEN, mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "timeout": 1500}})
    sid = (await d.create())["sessionId"]
    await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    _, (failed,) = await _run(d, sid, '/call mcp__faults__fail {"reason": "on purpose"}')
    assert failed["status"] == "failed" and "it failed: on purpose" in _text(failed)
    _, (hung,) = await _run(d, sid, "/call mcp__faults__hang {}")
    assert hung["status"] == "failed" and "timed out" in _text(hung)
    _, (crashed,) = await _run(d, sid, "/call mcp__faults__crash {}")
    assert crashed["status"] == "failed" and "MCP server faults" in _text(crashed)


async def test_a_disabled_mcp_tool_is_not_offered(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(token=TOKEN, mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url}})
    toggled = await d.client.post(
        "/workspace/tools/mcp__faults__record/enable", json={"enabled": False}
    )
    assert toggled.status_code == 200, toggled.text
    sid = (await d.create())["sessionId"]
    _, updates = await _run(d, sid, '/call mcp__faults__record {"value": "x"}')
    assert updates == [] and faults.calls() == []
    texts = [
        e["data"]["update"]["content"]["text"]
        for e in d.events(sid)
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "is not available" in "".join(texts)


async def test_an_npm_server_over_stdio_answers_text_and_images(daemon: DaemonFactory) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"everything": {**node_server(EVERYTHING, "stdio"), "trust": True}})
    sid = (await d.create())["sessionId"]
    _, (echo,) = await _run(d, sid, '/call mcp__everything__echo {"message": "hello mcp"}')
    assert echo["status"] == "completed" and "Echo: hello mcp" in _text(echo)
    _, (image,) = await _run(d, sid, "/call mcp__everything__get-tiny-image {}")
    assert image["status"] == "completed"
    text = _text(image)
    assert "[image image/png: mcp-images/" in text
    assert "base64" not in json.dumps(image)  # stored by reference, not in the event


# -- GET /workspace/mcp and POST /workspace/mcp/:server/restart -------------------------------


async def _snapshot_until(d: Daemon, done: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    body: dict[str, Any] = {}
    while asyncio.get_running_loop().time() < deadline:
        response = await d.client.get("/workspace/mcp")
        assert response.status_code == 200, response.text
        body = response.json()
        if done(body):
            return body
        await asyncio.sleep(0.2)
    raise AssertionError(f"never reached: {body}")


async def test_the_snapshot_shows_each_server_and_never_a_secret(
    daemon: DaemonFactory, faults: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTS_API_KEY", "value-from-the-environment")
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(
        d.workspace,
        {
            "faults": {
                "httpUrl": faults.url,
                "headers": {"Authorization": "Bearer literal-secret", "X-Key": "$FAULTS_API_KEY"},
                "description": "the fault server",
            },
            "missing": {"command": "/nonexistent/mcp-server", "env": {"TOKEN": "env-secret"}},
            "off": {"command": "true"},
            "bad": {"command": "x", "httpUrl": "http://127.0.0.1:1/mcp"},
        },
        disabledMcpServers=["off"],
    )

    def settled(body: dict[str, Any]) -> bool:
        cells = {c["name"]: c for c in body["servers"]}
        return bool(cells["faults"]["status"] == "ok" and cells["missing"]["status"] == "error")

    body = await _snapshot_until(d, settled)
    text = json.dumps(body)
    for secret in ("literal-secret", "value-from-the-environment", "env-secret", "FAULTS_API_KEY"):
        assert secret not in text
    cells = {c["name"]: c for c in body["servers"]}
    assert body["discoveryState"] == "completed" and body["initialized"] is True
    assert body["clientCount"] == 1 and body["budgetMode"] == "off" and body["budgets"] == []
    faults_cell = cells["faults"]
    assert faults_cell["mcpStatus"] == "connected" and faults_cell["transport"] == "http"
    assert faults_cell["description"] == "the fault server"
    assert "mcp__faults__record" in faults_cell["tools"]
    assert "errors" not in faults_cell
    missing = cells["missing"]
    assert missing["errorKind"] == "missing_binary" and missing["hint"]
    assert missing["errors"][0]["errorKind"] == "missing_binary"
    assert cells["off"]["status"] == "disabled" and cells["off"]["disabledReason"] == "config"
    assert cells["bad"]["errorKind"] == "parse_error" and cells["bad"]["transport"] == "unknown"
    preflight = (await d.client.get("/workspace/preflight")).json()
    (discovery,) = [c for c in preflight["cells"] if c["kind"] == "mcp_discovery"]
    assert discovery["status"] == "error" and discovery["errorKind"] in (
        "missing_binary",
        "parse_error",
    )
    assert discovery["detail"]["connected"] == 1 and discovery["detail"]["total"] == 4
    assert "literal-secret" not in json.dumps(preflight)


async def test_a_restart_reconnects_and_says_so_to_every_session(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(token=TOKEN, mcp_workspace_servers=TRUSTED)
    write_settings(
        d.workspace,
        {"faults": {"httpUrl": faults.url}, "off": {"command": "true"}},
        disabledMcpServers=["off"],
    )
    sid = (await d.create())["sessionId"]
    restarted = await d.client.post(
        "/workspace/mcp/faults/restart", json={}, headers={"X-Qwen-Client-Id": "ops"}
    )
    assert restarted.status_code == 200, restarted.text
    body = restarted.json()
    assert body["serverName"] == "faults" and body["restarted"] is True
    assert isinstance(body["durationMs"], int)
    events = await d.wait_for(sid, "mcp_server_restarted")
    (event,) = [e for e in events if e["type"] == "mcp_server_restarted"]
    assert event["data"]["serverName"] == "faults" and event["data"]["originatorClientId"] == "ops"
    skipped = await d.client.post("/workspace/mcp/off/restart", json={})
    assert skipped.json() == {
        "serverName": "off",
        "restarted": False,
        "skipped": True,
        "reason": "server_disabled",
    }
    await d.wait_for(sid, "mcp_server_restart_refused")
    unknown = await d.client.post("/workspace/mcp/nope/restart", json={})
    assert unknown.status_code == 404 and unknown.json()["code"] == "mcp_server_not_found"
    invalid = await d.client.post("/workspace/mcp/a%20b/restart", json={})
    assert invalid.status_code == 400 and invalid.json()["code"] == "invalid_server_name"
    del d.client.headers["Authorization"]
    assert (await d.client.post("/workspace/mcp/faults/restart", json={})).status_code == 401


async def test_an_operator_adds_a_server_uses_it_and_removes_it(
    daemon: DaemonFactory, faults: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTS_API_KEY", "from-the-worker")
    d = await daemon(token=TOKEN, mcp_workspace_servers=TRUSTED)
    entry = {
        "httpUrl": faults.url,
        "headers": {"X-Key": "$FAULTS_API_KEY", "X-Other": "literal-header-secret"},
        "trust": True,
        "description": "added by ops",
    }
    put = await d.client.put("/workspace/mcp/servers/ops", json=entry)
    assert put.status_code == 200, put.text
    assert put.json() == {
        "serverName": "ops",
        "transport": "http",
        "trust": True,
        "description": "added by ops",
    }
    sid = (await d.create())["sessionId"]
    _, (update,) = await _run(d, sid, "/call mcp__ops__count {}")
    assert update["status"] == "completed"
    snapshot = (await d.client.get("/workspace/mcp")).text
    assert "literal-header-secret" not in snapshot and "from-the-worker" not in snapshot
    assert (await d.client.delete("/workspace/mcp/servers/ops")).json() == {
        "serverName": "ops",
        "removed": True,
    }
    gone = await d.client.delete("/workspace/mcp/servers/ops")
    assert gone.status_code == 404 and gone.json()["code"] == "mcp_server_not_found"


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"command": "node", "unknown": 1}, "unknown"),
        ({}, "exactly one of"),
        ({"httpUrl": "http://169.254.169.254/mcp"}, "link-local"),
        ({"command": "node", "env": {"T": "$AGENTRT_TOKEN"}}, "not allowed"),
        ({"command": "node", "env": {"T": "${DATABASE_URL}"}}, "not allowed"),
        ({"command": "node", "timeout": "10"}, "timeout"),
    ],
)
async def test_an_invalid_server_is_a_400_naming_what_is_wrong(
    daemon: DaemonFactory, entry: dict[str, Any], words: str
) -> None:
    d = await daemon(token=TOKEN, mcp_workspace_servers=TRUSTED)
    response = await d.client.put("/workspace/mcp/servers/x", json=entry)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_mcp_server"
    assert words in response.json()["error"]
    bad_name = await d.client.put("/workspace/mcp/servers/a%20b", json={"command": "node"})
    assert bad_name.status_code == 400 and bad_name.json()["code"] == "invalid_server_name"
    del d.client.headers["Authorization"]
    assert (
        await d.client.put("/workspace/mcp/servers/x", json={"command": "n"})
    ).status_code == 401


# -- whoever writes the workspace does not choose what the worker runs ----------------------


async def test_a_settings_file_entry_runs_only_once_an_operator_approved_it(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(token=TOKEN)  # the default: AGENTRT_MCP_WORKSPACE_SERVERS=approve
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "trust": True}})
    (cell,) = (await d.client.get("/workspace/mcp")).json()["servers"]
    assert cell["status"] == "disabled" and cell["disabledReason"] == "config"
    assert "/workspace/mcp/faults/approve" in cell["hint"]
    sid = (await d.create())["sessionId"]
    _, updates = await _run(d, sid, "/call mcp__faults__count {}")
    assert updates == []  # not offered: the model was told it is not available
    approved = await d.client.post("/workspace/mcp/faults/approve", json={})
    assert approved.status_code == 200, approved.text
    assert approved.json()["url"] == faults.url and approved.json()["transport"] == "http"
    _, (update,) = await _run(d, sid, "/call mcp__faults__count {}")
    assert update["status"] == "completed"
    # Any change of the entry waits for a new approval.
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "trust": True, "timeout": 9}})
    (cell,) = (await d.client.get("/workspace/mcp")).json()["servers"]
    assert cell["status"] == "disabled"
    missing = await d.client.post("/workspace/mcp/other/approve", json={})
    assert missing.status_code == 404
    del d.client.headers["Authorization"]
    assert (await d.client.post("/workspace/mcp/faults/approve", json={})).status_code == 401


async def test_off_ignores_the_settings_file(daemon: DaemonFactory, faults: FaultServer) -> None:
    d = await daemon(mcp_workspace_servers="off")
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url}})
    assert (await d.client.get("/workspace/mcp")).json()["servers"] == []


async def test_the_agent_cannot_write_the_workspaces_agent_configuration(
    daemon: DaemonFactory,
) -> None:
    d = await daemon(token=TOKEN)
    sid = (await d.create())["sessionId"]
    await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    target = str(d.workspace / ".qwen" / "settings.json")
    payload = json.dumps({"file_path": target, "content": '{"mcpServers": {}}'})
    _, (update,) = await _run(d, sid, f"/call write_file {payload}")
    assert update["status"] == "failed" and "session tools do not write it" in _text(update)
    assert not (d.workspace / ".qwen").exists()


async def test_a_call_runs_on_what_its_vote_was_asked_for_or_not_at_all(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url}})
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _ask(d, sid, '/call mcp__faults__record {"value": "pinned"}')
    # Between the question and the answer, the server's entry changes.
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "timeout": 5000}})
    await d.client.post(f"/permission/{request['requestId']}", json=PROCEED)
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    (update,) = _updates(d, sid, prompt_id)
    assert update["status"] == "failed" and "configuration changed" in _text(update)
    assert faults.calls() == []


# -- the client budget (mcp_guardrails, mcp_guardrail_events) -------------------------------


def _three(faults: FaultServer) -> dict[str, Any]:
    return {name: {"httpUrl": faults.url} for name in ("a", "b", "c")}


async def test_enforce_refuses_past_the_budget_in_declaration_order(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(
        token=TOKEN, mcp_workspace_servers=TRUSTED, mcp_client_budget=2, mcp_budget_mode="enforce"
    )
    write_settings(d.workspace, _three(faults))
    sid = (await d.create())["sessionId"]

    def settled(body: dict[str, Any]) -> bool:
        return [c["status"] for c in body["servers"]] == ["ok", "ok", "error"]

    body = await _snapshot_until(d, settled)
    c = body["servers"][2]
    assert c["errorKind"] == "budget_exhausted" and c["disabledReason"] == "budget"
    assert c["hint"] == "Raise --mcp-client-budget or remove servers from mcpServers config."
    assert body["clientCount"] == 2 and body["clientBudget"] == 2
    assert body["budgetMode"] == "enforce"
    (cell,) = body["budgets"]
    assert cell == {
        "kind": "mcp_budget",
        "scope": "workspace",
        "status": "error",
        "liveCount": 2,
        "mode": "enforce",
        "refusedCount": 1,
        "budget": 2,
        "errorKind": "budget_exhausted",
        "hint": "Raise --mcp-client-budget or remove servers from mcpServers config.",
    }
    events = await d.wait_for(sid, "mcp_child_refused_batch")
    (batch,) = [e["data"] for e in events if e["type"] == "mcp_child_refused_batch"]
    assert batch == {
        "refusedServers": [{"name": "c", "transport": "http", "reason": "budget_exhausted"}],
        "budget": 2,
        "liveCount": batch["liveCount"],
        "reservedCount": 2,
        "mode": "enforce",
    }
    (warning,) = [e["data"] for e in d.events(sid) if e["type"] == "mcp_budget_warning"]
    assert warning["budget"] == 2 and warning["thresholdRatio"] == 0.75
    assert warning["reservedCount"] >= 2 and warning["mode"] == "enforce"
    status = (await d.client.get("/daemon/status")).json()
    (issue,) = [i for i in status["issues"] if i["code"].startswith("mcp_budget")]
    assert issue["code"] == "mcp_budget_exhausted" and issue["severity"] == "error"
    restart = await d.client.post("/workspace/mcp/c/restart", json={})
    assert restart.json() == {
        "serverName": "c",
        "restarted": False,
        "skipped": True,
        "reason": "budget_would_exceed",
    }


async def test_warn_connects_everything_and_warns_once(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    d = await daemon(mcp_workspace_servers=TRUSTED, mcp_client_budget=2)  # warn by default
    write_settings(d.workspace, _three(faults))
    sid = (await d.create())["sessionId"]
    body = await _snapshot_until(d, lambda b: [c["status"] for c in b["servers"]] == ["ok"] * 3)
    assert body["budgetMode"] == "warn" and body["clientCount"] == 3
    (cell,) = body["budgets"]
    assert cell["status"] == "warning" and cell["refusedCount"] == 0 and cell["liveCount"] == 3
    events = await d.wait_for(sid, "mcp_budget_warning")
    assert [e["type"] for e in events].count("mcp_budget_warning") == 1
    status = (await d.client.get("/daemon/status")).json()
    assert [i["code"] for i in status["issues"] if i["code"].startswith("mcp")] == [
        "mcp_budget_warning"
    ]
    assert "mcp_child_refused_batch" not in [e["type"] for e in events]


async def test_the_npm_filesystem_server_reads_unasked_and_writes_after_a_vote(
    daemon: DaemonFactory,
) -> None:
    d = await daemon(token=TOKEN)
    (d.workspace / "notes.txt").write_text("from the workspace\n")
    server = {**node_server(FILESYSTEM, str(d.workspace)), "trust": True}
    assert (await d.client.put("/workspace/mcp/servers/fs", json=server)).status_code == 200
    sid = (await d.create())["sessionId"]
    path = json.dumps({"path": str(d.workspace / "notes.txt")})
    _, (read,) = await _run(d, sid, f"/call mcp__fs__read_text_file {path}")
    assert read["status"] == "completed" and "from the workspace" in _text(read)
    target = json.dumps({"path": str(d.workspace / "out.txt"), "content": "written by MCP"})
    prompt_id, request = await _ask(d, sid, f"/call mcp__fs__write_file {target}")
    assert not (d.workspace / "out.txt").exists()
    await d.client.post(f"/permission/{request['requestId']}", json=PROCEED)
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    assert (d.workspace / "out.txt").read_text() == "written by MCP"


async def test_a_servers_request_for_the_user_is_refused_cleanly(
    daemon: DaemonFactory, faults: FaultServer
) -> None:
    """agentrt declares no elicitation (nor sampling, nor roots): a server that asks
    anyway gets the SDK's refusal, and the tool call fails with the server's message."""
    d = await daemon(mcp_workspace_servers=TRUSTED)
    write_settings(d.workspace, {"faults": {"httpUrl": faults.url, "timeout": 10_000}})
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _ask(d, sid, "/call mcp__faults__ask_login {}")
    await d.client.post(f"/permission/{request['requestId']}", json=PROCEED)
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    (update,) = _updates(d, sid, prompt_id)
    assert update["status"] == "failed" and "MCP server faults" in _text(update)
