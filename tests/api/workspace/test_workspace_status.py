"""Workspace status of the session daemon: env, preflight, providers, skills, mcp, tool
toggles, init and the persisted approval mode (a session's supported commands, tasks and
recap are tests/api/sessions/test_session_status.py's).
API in process + a real worker (the `daemon` fixture of test_sessions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.api.sessions.test_sessions import DaemonFactory, daemon  # noqa: F401  (the fixture)
from tests.fakes.openai_server import FakeOpenAI
from tests.session_helpers import Daemon, write_prompt

TOKEN = "t0k"


def _events(d: Daemon, sid: str, event_type: str) -> list[dict[str, Any]]:
    return [e for e in d.events(sid) if e["type"] == event_type]


# -- read-only snapshots -------------------------------------------------------------------


async def test_workspace_env_reports_presence_never_values(
    daemon: DaemonFactory,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value")
    monkeypatch.setenv("HTTPS_PROXY", "http://alice:pa55word@proxy.internal:1080/path")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    d = await daemon()
    response = await d.client.get("/workspace/env")
    assert response.status_code == 200
    text = response.text
    assert "sk-very-secret-value" not in text and "pa55word" not in text and "alice" not in text
    body = response.json()
    assert body["v"] == 1 and body["workspaceCwd"] == str(d.workspace)
    assert body["initialized"] is True and body["acpChannelLive"] is False
    cells = {(c["kind"], c["name"]): c for c in body["cells"]}
    assert cells[("runtime", "python")]["status"] == "ok"
    assert cells[("proxy", "HTTPS_PROXY")] == {
        "kind": "proxy",
        "name": "HTTPS_PROXY",
        "status": "ok",
        "present": True,
        "value": "proxy.internal:1080",
    }
    assert cells[("proxy", "HTTP_PROXY")] == {
        "kind": "proxy",
        "name": "HTTP_PROXY",
        "status": "disabled",
        "present": False,
    }
    assert cells[("env_var", "OPENAI_API_KEY")] == {
        "kind": "env_var",
        "name": "OPENAI_API_KEY",
        "status": "ok",
        "present": True,
    }
    assert cells[("env_var", "ANTHROPIC_API_KEY")]["present"] is False
    assert all("value" not in c for c in body["cells"] if c["kind"] == "env_var")


async def test_workspace_preflight_cells(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    response = await d.client.get("/workspace/preflight")
    assert response.status_code == 200
    body = response.json()
    assert body["v"] == 1 and body["workspaceCwd"] == str(d.workspace)
    cells = {c["kind"]: c for c in body["cells"]}
    assert set(cells) >= {
        "python_version",
        "workspace_dir",
        "git",
        "store",
        "temporal",
        "worker",
        "providers",
        "tool_registry",
        "mcp_discovery",
    }
    assert all(c["locality"] == "daemon" for c in body["cells"])
    assert cells["python_version"]["status"] == "ok"
    assert cells["workspace_dir"] == {
        "kind": "workspace_dir",
        "status": "ok",
        "locality": "daemon",
        "detail": {"path": str(d.workspace)},
    }
    assert cells["store"]["status"] == "ok"
    assert cells["store"]["detail"]["revision"] == cells["store"]["detail"]["headRevision"]
    assert cells["temporal"]["status"] == "ok"
    assert cells["worker"]["status"] == "ok" and cells["worker"]["detail"]["polling"] is True
    assert cells["providers"]["detail"]["provider"] == "scripted"
    assert "write_file" in cells["tool_registry"]["detail"]["tools"]


async def test_workspace_preflight_reports_an_unreachable_model(
    daemon: DaemonFactory,  # noqa: F811
) -> None:
    d = await daemon(
        model_provider="openai", openai_base_url="http://127.0.0.1:9/v1", openai_api_key="sk-x"
    )
    body = (await d.client.get("/workspace/preflight")).json()
    cell = next(c for c in body["cells"] if c["kind"] == "providers")
    assert cell["status"] == "error" and cell["errorKind"] == "blocked_egress"
    assert "sk-x" not in json.dumps(body) and "127.0.0.1:9" not in json.dumps(body)


async def test_workspace_preflight_reaches_the_model_under_the_egress_rule(
    daemon: DaemonFactory,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The preflight's probe of the model endpoint connects as the model calls do: a
    name that resolves to the metadata service is refused, and the cell says so."""
    from runtime import egress_client

    async def metadata(host: str, port: int) -> list[str]:
        return ["169.254.169.254"]

    monkeypatch.setattr(egress_client, "resolve", metadata)
    d = await daemon(
        model_provider="openai", openai_base_url="http://models.example/v1", openai_api_key="sk-x"
    )
    body = (await d.client.get("/workspace/preflight")).json()
    cell = next(c for c in body["cells"] if c["kind"] == "providers")
    assert cell["status"] == "error" and cell["errorKind"] == "blocked_egress"
    assert cell["error"] == "the egress rule refuses the model endpoint's address"
    assert "sk-x" not in json.dumps(body) and "models.example" not in json.dumps(body)


async def test_workspace_providers(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    body = (await d.client.get("/workspace/providers")).json()
    assert body["v"] == 1 and body["initialized"] is True
    assert body["current"] == {"authType": "scripted", "modelId": "scripted"}
    assert body["approvalMode"] == "default" and body["acpChannelLive"] is False
    (provider,) = body["providers"]
    assert provider["kind"] == "model_provider" and provider["current"] is True
    assert provider["models"][0]["modelId"] == "scripted"
    assert provider["models"][0]["isCurrent"] is True
    assert body["deviceFlowProviders"] == [
        {"providerId": "qwen-oauth", "credentialsPresent": False}
    ]


async def test_workspace_providers_never_show_the_url_or_key(
    daemon: DaemonFactory,  # noqa: F811
) -> None:
    with FakeOpenAI() as fake:
        d2 = await daemon(
            model_provider="openai",
            openai_model="qwen-test",
            openai_base_url=fake.base_url,
            openai_api_key="sk-secret",
        )
        response = await d2.client.get("/workspace/providers")
    assert response.json()["current"] == {"authType": "openai", "modelId": "qwen-test"}
    assert "sk-secret" not in response.text and fake.base_url not in response.text


async def test_workspace_skills_and_mcp(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    skills = (await d.client.get("/workspace/skills")).json()
    assert skills == {"v": 1, "workspaceCwd": str(d.workspace), "initialized": True, "skills": []}
    # No mcpServers: as the reference daemon answers (reference/.../144_ws_mcp.txt).
    mcp = (await d.client.get("/workspace/mcp")).json()
    assert mcp == {
        "v": 1,
        "workspaceCwd": str(d.workspace),
        "initialized": True,
        "discoveryState": "completed",
        "servers": [],
        "clientCount": 0,
        "budgetMode": "off",
        "budgets": [],
    }


# -- tools.disabled ------------------------------------------------------------------------


async def test_tool_toggle_needs_a_token(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    response = await d.client.post("/workspace/tools/write_file/enable", json={"enabled": False})
    assert response.status_code == 401
    assert response.json()["code"] == "token_required"


@pytest.mark.parametrize(
    ("name", "body", "code"),
    [
        ("x" * 257, {"enabled": False}, "invalid_tool_name"),
        ("write_file", {}, "invalid_enabled_flag"),
        ("write_file", {"enabled": "false"}, "invalid_enabled_flag"),
        ("write_file", {"enabled": 0}, "invalid_enabled_flag"),
    ],
)
async def test_tool_toggle_refusals(
    daemon: DaemonFactory,  # noqa: F811
    name: str,
    body: dict[str, Any],
    code: str,
) -> None:
    d = await daemon(token=TOKEN)
    response = await d.client.post(f"/workspace/tools/{name}/enable", json=body)
    assert response.status_code == 400
    assert response.json()["code"] == code


async def test_disabled_tool_leaves_the_agent_at_its_next_prompt(
    daemon: DaemonFactory,  # noqa: F811
) -> None:
    d = await daemon(token=TOKEN)
    sid = (await d.create())["sessionId"]
    response = await d.client.post(
        "/workspace/tools/write_file/enable",
        json={"enabled": False},
        headers={"X-Qwen-Client-Id": "ui-1"},
    )
    assert response.status_code == 200
    assert response.json() == {"toolName": "write_file", "enabled": False}
    (toggled,) = _events(d, sid, "tool_toggled")
    assert toggled["data"] == {
        "toolName": "write_file",
        "enabled": False,
        "originatorClientId": "ui-1",
    }
    assert toggled["originatorClientId"] == "ui-1"
    # Persisted: the preflight's tool registry (a store read) lists it as disabled.
    preflight = (await d.client.get("/workspace/preflight")).json()
    registry = next(c for c in preflight["cells"] if c["kind"] == "tool_registry")
    assert registry["detail"]["disabled"] == ["write_file"]
    assert "write_file" not in registry["detail"]["tools"]
    # The next prompt does not offer it: the scripted model says so, no permission asked.
    prompt_id = (await d.prompt(sid, write_prompt(d.workspace, "a.txt"))).json()["promptId"]
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    text = "".join(
        e["data"]["update"]["content"]["text"]
        for e in events
        if e.get("promptId") == prompt_id
        and e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text.startswith("Tool write_file is not available")
    assert not _events(d, sid, "permission_request")
    assert not (d.workspace / "a.txt").exists()
    # Enabled again: offered again from the next prompt on.
    again = await d.client.post("/workspace/tools/write_file/enable", json={"enabled": True})
    assert again.json() == {"toolName": "write_file", "enabled": True}
    assert [e["data"]["enabled"] for e in _events(d, sid, "tool_toggled")] == [False, True]
    prompt_id = (await d.prompt(sid, write_prompt(d.workspace, "b.txt"))).json()["promptId"]
    await d.wait_for(sid, "permission_request", prompt_id=prompt_id)


async def test_a_prompt_already_running_keeps_its_tools(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon(token=TOKEN)
    sid = (await d.create())["sessionId"]
    prompt_id = (await d.prompt(sid, write_prompt(d.workspace, "c.txt"))).json()["promptId"]
    events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
    rid = [e for e in events if e["type"] == "permission_request"][-1]["data"]["requestId"]
    off = await d.client.post("/workspace/tools/write_file/enable", json={"enabled": False})
    assert off.status_code == 200
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    assert (await d.client.post(f"/permission/{rid}", json=vote)).status_code == 200
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    assert (d.workspace / "c.txt").read_text() == "hi\n"


async def test_a_disabled_tool_the_model_calls_anyway_is_refused(
    daemon: DaemonFactory,  # noqa: F811
) -> None:
    with FakeOpenAI() as fake:
        d = await daemon(
            token=TOKEN,
            model_provider="openai",
            openai_model="qwen-test",
            openai_base_url=fake.base_url,
        )
        await d.client.post("/workspace/tools/write_file/enable", json={"enabled": False})
        fake.queue_tool_calls(
            [
                {
                    "id": "call_w1",
                    "name": "write_file",
                    "arguments": {"file_path": str(d.workspace / "m.txt"), "content": "x\n"},
                }
            ]
        )
        fake.queue_text("ok")
        sid = (await d.create())["sessionId"]
        prompt_id = (await d.prompt(sid, "write it")).json()["promptId"]
        events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
        offered = [t["function"]["name"] for t in fake.requests[0].body.get("tools", [])]
    assert "write_file" not in offered and "read_file" in offered
    assert not (d.workspace / "m.txt").exists()
    assert not [e for e in events if e["type"] == "permission_request"]
    updates = [
        e["data"]["update"]
        for e in events
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "tool_call_update"
    ]
    assert updates[-1]["status"] == "failed"


# -- workspace init ------------------------------------------------------------------------


async def test_workspace_init(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon(token=TOKEN)
    sid = (await d.create())["sessionId"]
    path = d.workspace / "AGENTS.md"
    created = await d.client.post("/workspace/init", json={})
    assert created.status_code == 200
    assert created.json() == {"path": str(path), "action": "created"}
    assert path.read_bytes() == b""
    assert (await d.client.post("/workspace/init")).json()["action"] == "noop"
    path.write_text("# Notes\n")
    conflict = await d.client.post("/workspace/init", json={"force": False})
    assert conflict.status_code == 409
    assert conflict.json() == {
        "error": conflict.json()["error"],
        "code": "workspace_init_conflict",
        "path": str(path),
        "existingSize": 8,
    }
    assert path.read_text() == "# Notes\n"
    bad = await d.client.post("/workspace/init", json={"force": "yes"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_force_flag"
    forced = await d.client.post(
        "/workspace/init", json={"force": True}, headers={"X-Qwen-Client-Id": "ui-2"}
    )
    assert forced.json() == {"path": str(path), "action": "overwrote"}
    assert path.read_bytes() == b""
    events = _events(d, sid, "workspace_initialized")
    assert [e["data"]["action"] for e in events] == ["created", "noop", "overwrote"]
    assert events[-1]["data"] == {
        "path": str(path),
        "action": "overwrote",
        "originatorClientId": "ui-2",
    }


async def test_workspace_init_never_writes_through_a_symlink(
    daemon: DaemonFactory,  # noqa: F811
    tmp_path: Any,
) -> None:
    d = await daemon(token=TOKEN)
    outside = tmp_path / "outside.md"
    outside.write_text("keep me\n")
    (d.workspace / "AGENTS.md").symlink_to(outside)
    conflict = await d.client.post("/workspace/init", json={})
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "workspace_init_conflict"
    forced = await d.client.post("/workspace/init", json={"force": True})
    assert forced.json()["action"] == "overwrote"
    assert outside.read_text() == "keep me\n"
    assert not (d.workspace / "AGENTS.md").is_symlink()
    assert (d.workspace / "AGENTS.md").read_bytes() == b""


async def test_workspace_init_needs_a_token(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon()
    refused = await d.client.post("/workspace/init", json={})
    assert refused.status_code == 401 and refused.json()["code"] == "token_required"
    assert not (d.workspace / "AGENTS.md").exists()


async def test_workspace_init_memory_file_name(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon(token=TOKEN, memory_file_name="QWEN.md")
    body = (await d.client.post("/workspace/init", json={})).json()
    assert body == {"path": str(d.workspace / "QWEN.md"), "action": "created"}


# -- approval mode persist -----------------------------------------------------------------


async def test_approval_mode_persist(daemon: DaemonFactory) -> None:  # noqa: F811
    d = await daemon(token=TOKEN)
    sid = (await d.create())["sessionId"]
    bad = await d.client.post(
        f"/session/{sid}/approval-mode", json={"mode": "auto-edit", "persist": "yes"}
    )
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_persist_flag"
    plain = await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "plan"})
    assert plain.json() == {
        "sessionId": sid,
        "mode": "plan",
        "previous": "default",
        "persisted": False,
    }
    # Not persisted: a new session starts in the default mode.
    other = (await d.create(sessionScope="thread"))["sessionId"]
    context = (await d.client.get(f"/session/{other}/context")).json()
    assert context["state"]["modes"]["currentModeId"] == "default"
    persisted = await d.client.post(
        f"/session/{sid}/approval-mode",
        json={"mode": "auto-edit", "persist": True},
        headers={"X-Qwen-Client-Id": "ui-3"},
    )
    assert persisted.json() == {
        "sessionId": sid,
        "mode": "auto-edit",
        "previous": "plan",
        "persisted": True,
    }
    changed = _events(d, sid, "approval_mode_changed")
    assert [e["data"] for e in changed] == [
        {"sessionId": sid, "previous": "default", "next": "plan", "persisted": False},
        {
            "sessionId": sid,
            "previous": "plan",
            "next": "auto-edit",
            "persisted": True,
            "originatorClientId": "ui-3",
        },
    ]
    # Session-scoped: the other session saw nothing.
    assert not _events(d, other, "approval_mode_changed")
    # Persisted: sessions created from now on start in it.
    providers = (await d.client.get("/workspace/providers")).json()
    assert providers["approvalMode"] == "auto-edit"
    new = (await d.create(sessionScope="thread"))["sessionId"]
    context = (await d.client.get(f"/session/{new}/context")).json()
    assert context["state"]["modes"]["currentModeId"] == "auto-edit"


def test_init_refuses_a_directory_by_the_memory_file_name(tmp_path: Path) -> None:
    from api.workspace.status import _init_memory_file
    from runtime.workspace.fence import Fence

    (tmp_path / "AGENTS.md").mkdir()
    assert _init_memory_file(Fence.of(tmp_path), "AGENTS.md", True) == ("not_a_file", None)
