"""Sessions, prompts and permissions of the session daemon, API in process + a real worker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from tests.conftest import ApiFactory, free_port
from tests.session_helpers import Daemon, write_prompt
from worker import build_worker

DaemonFactory = Callable[..., Awaitable[Daemon]]


@pytest.fixture
async def daemon(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    database_url: str,
) -> AsyncIterator[DaemonFactory]:
    stack = AsyncExitStack()

    async def make(provider: Any = None, **overrides: Any) -> Daemon:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        values: dict[str, Any] = {
            "data_dir": tmp_path / ".data",
            "task_queue": task_queue,
            "workspace": workspace,
            "database_url": database_url,
        }
        values.update(overrides)
        settings = Settings(**values)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        stack.callback(store.dispose)
        await stack.enter_async_context(build_worker(dev_env.client, settings, store, provider))
        client = await api(**values)
        if values.get("token"):
            client.headers["Authorization"] = f"Bearer {values['token']}"
        return Daemon(client=client, workspace=workspace.resolve(), journal=EventJournal(store))

    yield make
    await stack.aclose()


def _not_found(sid: str) -> dict[str, Any]:
    return {"error": f'No session with id "{sid}"', "code": "session_not_found", "sessionId": sid}


# -- sessions ------------------------------------------------------------------------------


async def test_create_attach_and_thread(daemon: DaemonFactory) -> None:
    d = await daemon()
    first = await d.create()
    assert first["attached"] is False
    assert first["workspaceCwd"] == str(d.workspace)
    assert first["clientId"].startswith("client_")
    again = await d.create(cwd=str(d.workspace) + "/")
    assert again["attached"] is True and again["sessionId"] == first["sessionId"]
    thread = await d.create(sessionScope="thread")
    assert thread["attached"] is False and thread["sessionId"] != first["sessionId"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"cwd": "relative/path"}, 400, "invalid_cwd"),
        ({"cwd": ""}, 400, "invalid_cwd"),
        ({"cwd": 42}, 400, "invalid_cwd"),
        ({"sessionScope": "bogus"}, 400, "invalid_session_scope"),
    ],
)
async def test_create_refusals(
    daemon: DaemonFactory, body: dict[str, Any], status: int, code: str
) -> None:
    d = await daemon()
    response = await d.client.post("/session", json=body)
    assert response.status_code == status
    assert response.json()["code"] == code


async def test_workspace_mismatch(daemon: DaemonFactory) -> None:
    d = await daemon()
    response = await d.client.post("/session", json={"cwd": "/tmp"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "workspace_mismatch"
    assert body["boundWorkspace"] == str(d.workspace)
    assert body["requestedWorkspace"] == "/tmp"


async def test_invalid_json_body(daemon: DaemonFactory) -> None:
    d = await daemon()
    response = await d.client.post(
        "/session", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid JSON in request body"}


async def test_concurrent_creates_coalesce(daemon: DaemonFactory) -> None:
    d = await daemon()
    results = await asyncio.gather(*(d.create() for _ in range(6)))
    assert len({r["sessionId"] for r in results}) == 1
    assert [r["attached"] for r in results].count(False) == 1


async def test_session_limit(daemon: DaemonFactory) -> None:
    d = await daemon(max_sessions=2)
    single = await d.create()
    await d.create(sessionScope="thread")
    response = await d.client.post("/session", json={"sessionScope": "thread"})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.json() == {
        "error": "Session limit reached (2)",
        "code": "session_limit_exceeded",
        "limit": 2,
    }
    # Attaching is never refused.
    assert (await d.create())["sessionId"] == single["sessionId"]


async def test_list_sessions(daemon: DaemonFactory) -> None:
    d = await daemon()
    ws = str(d.workspace).replace("/", "%2F")
    assert (await d.client.get(f"/workspace/{ws}/sessions")).json() == {"sessions": []}
    created = await d.create()
    listed = (await d.client.get(f"/workspace/{ws}/sessions")).json()["sessions"]
    assert [s["sessionId"] for s in listed] == [created["sessionId"]]
    assert listed[0]["hasActivePrompt"] is False
    assert listed[0]["clientCount"] == 1


async def test_unknown_session_everywhere(daemon: DaemonFactory) -> None:
    d = await daemon(token="t0k")
    sid = "0e9d7c6a-b4ee-4ccd-a355-01c9e9dcd3b4"
    for method, path, body in [
        ("POST", f"/session/{sid}/prompt", {"prompt": [{"type": "text", "text": "x"}]}),
        ("POST", f"/session/{sid}/cancel", None),
        ("DELETE", f"/session/{sid}", None),
        ("PATCH", f"/session/{sid}/metadata", {"displayName": "x"}),
        ("POST", f"/session/{sid}/heartbeat", {}),
        ("POST", f"/session/{sid}/model", {"modelId": "scripted"}),
        ("POST", f"/session/{sid}/approval-mode", {"mode": "yolo"}),
        ("GET", f"/session/{sid}/context", None),
        ("POST", f"/session/{sid}/load", {}),
        ("POST", f"/session/{sid}/resume", {}),
    ]:
        response = await d.client.request(method, path, json=body)
        assert response.status_code == 404, (method, path)
        assert response.json() == _not_found(sid), (method, path)


async def test_delete_closes_the_session(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create(sessionScope="thread"))["sessionId"]
    response = await d.client.delete(f"/session/{sid}", headers={"X-Qwen-Client-Id": "c-1"})
    assert response.status_code == 204
    events = await d.wait_for(sid, "session_closed")
    closed = events[-1]
    assert closed["data"] == {"sessionId": sid, "reason": "client_close", "closedBy": "c-1"}
    assert (await d.client.delete(f"/session/{sid}")).json() == _not_found(sid)
    prompt = await d.prompt(sid, "hello")
    assert prompt.status_code == 404


async def test_metadata(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.client.patch(f"/session/{sid}/metadata", json={"displayName": "Ma session"})
    assert response.json() == {"sessionId": sid, "displayName": "Ma session"}
    for bad in ({"displayName": 3}, {"displayName": None}):
        response = await d.client.patch(f"/session/{sid}/metadata", json=bad)
        assert response.status_code == 400
        assert response.json()["code"] == "invalid_metadata"
    assert (await d.client.patch(f"/session/{sid}/metadata", json={})).json()["displayName"] == (
        "Ma session"
    )
    updated = [e for e in d.events(sid) if e["type"] == "session_metadata_updated"]
    assert updated[-1]["data"]["displayName"] == "Ma session"


async def test_metadata_refuses_unknown_fields(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    for body in ({"title": "x"}, {"displayName": "y", "title": "x"}):
        response = await d.client.patch(f"/session/{sid}/metadata", json=body)
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["code"] == "invalid_metadata"
        assert error["field"] == "title"
        assert error["allowedFields"] == ["displayName"]
        assert "title" in error["error"] and "displayName" in error["error"]
    # Nothing was renamed.
    assert (await d.client.patch(f"/session/{sid}/metadata", json={})).json()["displayName"] != "y"


async def test_heartbeat(daemon: DaemonFactory) -> None:
    d = await daemon()
    created = await d.client.post("/session", json={}, headers={"X-Qwen-Client-Id": "tui-1"})
    sid = created.json()["sessionId"]
    assert created.json()["clientId"] == "tui-1"
    ok = await d.client.post(
        f"/session/{sid}/heartbeat", json={}, headers={"X-Qwen-Client-Id": "tui-1"}
    )
    assert ok.json()["clientId"] == "tui-1" and ok.json()["lastSeenAt"] > 0
    for header in ("bad id with spaces", "stranger"):
        response = await d.client.post(
            f"/session/{sid}/heartbeat", json={}, headers={"X-Qwen-Client-Id": header}
        )
        assert response.status_code == 400
        assert response.json()["code"] == "invalid_client_id"
    bare = await d.client.post(f"/session/{sid}/heartbeat", json={})
    assert set(bare.json()) == {"sessionId", "lastSeenAt"}


async def test_model_switch(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    ok = await d.client.post(f"/session/{sid}/model", json={"modelId": "scripted"})
    assert ok.json() == {"modelId": "scripted"}
    bad = await d.client.post(f"/session/{sid}/model", json={"modelId": "qwen-staging"})
    assert bad.status_code == 400 and bad.json()["code"] == "model_switch_failed"
    types = [e["type"] for e in d.events(sid)]
    assert "model_switched" in types and "model_switch_failed" in types


async def test_approval_mode_needs_a_configured_token(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    assert response.status_code == 401
    assert response.json()["code"] == "token_required"


async def test_approval_mode_and_context(daemon: DaemonFactory) -> None:
    d = await daemon(token="t0k")
    sid = (await d.create())["sessionId"]
    context = (await d.client.get(f"/session/{sid}/context")).json()
    assert context["v"] == 1 and context["sessionId"] == sid
    assert context["state"]["modes"]["currentModeId"] == "default"
    bad = await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "bogus"})
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid_approval_mode"
    assert bad.json()["allowed"] == ["plan", "default", "auto-edit", "auto", "yolo"]
    ok = await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    assert ok.status_code == 200
    changed = [e for e in d.events(sid) if e["type"] == "approval_mode_changed"]
    assert changed[-1]["data"] == {
        "sessionId": sid,
        "previous": "default",
        "next": "yolo",
        "persisted": False,
    }
    context = (await d.client.get(f"/session/{sid}/context")).json()
    assert context["state"]["modes"]["currentModeId"] == "yolo"


# -- prompts -------------------------------------------------------------------------------


async def test_prompt_streams_and_completes(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.prompt(sid, "say hello to the daemon")
    assert response.status_code == 202
    body = response.json()
    assert set(body) >= {"promptId", "lastEventId"}
    events = await d.wait_for(sid, "turn_complete", prompt_id=body["promptId"])
    mine = [e for e in events if e.get("promptId") == body["promptId"]]
    updates = [e["data"]["update"]["sessionUpdate"] for e in mine if e["type"] == "session_update"]
    assert updates[0] == "user_message_chunk"
    assert "agent_message_chunk" in updates
    text = "".join(
        e["data"]["update"]["content"]["text"]
        for e in mine
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "You said: say hello to the daemon"
    assert mine[-1]["type"] == "turn_complete"
    assert mine[-1]["data"]["stopReason"] == "end_turn"
    assert mine[0]["id"] == body["lastEventId"] + 1
    ids = [e["id"] for e in events]
    assert ids == list(range(1, len(ids) + 1))


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"prompt": []}, "`prompt` is required and must be a non-empty array of content blocks"),
        ({"prompt": "hi"}, "`prompt` is required and must be a non-empty array of content blocks"),
        ({}, "`prompt` is required and must be a non-empty array of content blocks"),
        ({"prompt": ["hi"]}, "each `prompt` element must be an object (content block)"),
    ],
)
async def test_prompt_validation(daemon: DaemonFactory, body: dict[str, Any], error: str) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.client.post(f"/session/{sid}/prompt", json=body)
    assert response.status_code == 400
    assert response.json() == {"error": error}


async def test_prompt_bad_deadline(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.client.post(
        f"/session/{sid}/prompt", json={"prompt": [{"type": "text", "text": "x"}], "deadlineMs": -1}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_deadline_ms"


async def test_prefer_wait_blocks_until_the_end(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.prompt(sid, "hello", Prefer="wait")
    assert response.status_code == 200
    assert response.json() == {"stopReason": "end_turn"}


async def test_two_concurrent_prompts_are_strictly_ordered(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    first, second = await asyncio.gather(d.prompt(sid, "first"), d.prompt(sid, "second"))
    ids = [first.json()["promptId"], second.json()["promptId"]]
    events = await d.wait_for(sid, "turn_complete", count=2)
    order = [
        (e["type"], e.get("promptId"))
        for e in events
        if e["type"] == "turn_complete"
        or (
            e["type"] == "session_update"
            and e["data"]["update"]["sessionUpdate"] == "user_message_chunk"
        )
    ]
    starts = [pid for t, pid in order if t == "session_update"]
    assert set(starts) == set(ids)
    a, b = starts
    assert order == [
        ("session_update", a),
        ("turn_complete", a),
        ("session_update", b),
        ("turn_complete", b),
    ]


async def test_sixth_prompt_is_refused_and_cancel_only_hits_the_active_one(
    daemon: DaemonFactory,
) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    blocked = await d.prompt(sid, write_prompt(d.workspace, "a.txt"))
    await d.wait_for(sid, "permission_request")
    queued = [await d.prompt(sid, f"queued {i}") for i in range(4)]
    assert [r.status_code for r in queued] == [202] * 4
    sixth = await d.prompt(sid, "one too many")
    assert sixth.status_code == 503
    assert sixth.headers["retry-after"] == "5"
    assert sixth.json()["code"] == "prompt_queue_full"
    pending = (await d.client.get(f"/session/{sid}/pending-prompts")).json()["pendingPrompts"]
    assert [p["state"] for p in pending] == ["running"] + ["queued"] * 4

    assert (await d.client.post(f"/session/{sid}/cancel")).status_code == 204
    events = await d.wait_for(sid, "turn_complete", count=5)
    blocked_id = blocked.json()["promptId"]
    cancelled = [e for e in events if e["type"] == "prompt_cancelled"]
    assert [e["promptId"] for e in cancelled] == [blocked_id]
    resolved = [e for e in events if e["type"] == "permission_resolved"]
    assert resolved[-1]["data"]["outcome"] == {"outcome": "cancelled"}
    stops = {e["promptId"]: e["data"]["stopReason"] for e in events if e["type"] == "turn_complete"}
    assert stops[blocked_id] == "cancelled"
    assert [stops[q.json()["promptId"]] for q in queued] == ["end_turn"] * 4
    assert not (d.workspace / "a.txt").exists()


async def test_prompt_deadline_cancels_a_prompt_that_runs_too_long(
    daemon: DaemonFactory,
) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.client.post(
        f"/session/{sid}/prompt",
        json={
            "prompt": [{"type": "text", "text": write_prompt(d.workspace, "late.txt")}],
            "deadlineMs": 500,
        },
    )
    prompt_id = response.json()["promptId"]
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    types = [e["type"] for e in events if e.get("promptId") == prompt_id]
    assert "prompt_deadline_exceeded" in types
    assert events[-1]["data"]["stopReason"] == "cancelled"
    assert not (d.workspace / "late.txt").exists()


async def test_prompt_deadline_is_capped_by_the_daemon(daemon: DaemonFactory) -> None:
    d = await daemon(prompt_deadline_ms=400)
    sid = (await d.create())["sessionId"]
    response = await d.client.post(
        f"/session/{sid}/prompt",
        json={
            "prompt": [{"type": "text", "text": write_prompt(d.workspace, "x.txt")}],
            "deadlineMs": 3_600_000,
        },
    )
    events = await d.wait_for(
        sid, "prompt_deadline_exceeded", prompt_id=response.json()["promptId"]
    )
    exceeded = [e for e in events if e["type"] == "prompt_deadline_exceeded"][-1]
    assert exceeded["data"]["deadlineMs"] == 400


async def test_cancel_when_idle_is_204(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    assert (await d.client.post(f"/session/{sid}/cancel")).status_code == 204


# -- tools ---------------------------------------------------------------------------------


def _tool_updates(d: Daemon, sid: str, prompt_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        e["data"]["update"]
        for e in d.events(sid)
        if e.get("promptId") == prompt_id
        and e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == kind
    ]


async def test_a_catastrophic_regex_does_not_stall_other_sessions(daemon: DaemonFactory) -> None:
    """The worker serves another session while one grep_search backtracks without end
    (64 "a": 2^64 steps; in the worker's own interpreter, it held the GIL for good)."""
    d = await daemon(session_search_timeout_ms=5_000)
    (d.workspace / "evil.txt").write_text("a" * 64 + "!\n")
    evil = (await d.create())["sessionId"]
    other = (await d.create(sessionScope="thread"))["sessionId"]
    response = await d.prompt(evil, '/call grep_search {"pattern": "(a+)+$"}\n/say searched')
    assert response.status_code == 202
    grep_prompt = response.json()["promptId"]
    for _ in range(1000):  # the grep is decided (and about to run)
        if _tool_updates(d, evil, grep_prompt, "tool_call"):
            break
        await asyncio.sleep(0.02)
    assert _tool_updates(d, evil, grep_prompt, "tool_call")

    answer = await d.prompt(other, "still there?")
    assert answer.status_code == 202
    events = await d.wait_for(other, "turn_complete", prompt_id=answer.json()["promptId"])
    assert events[-1]["data"]["stopReason"] == "end_turn"

    events = await d.wait_for(evil, "turn_complete", prompt_id=grep_prompt)
    assert events[-1]["data"]["stopReason"] == "end_turn"
    [update] = _tool_updates(d, evil, grep_prompt, "tool_call_update")
    assert update["status"] == "failed"
    text = update["content"][0]["content"]["text"]
    assert text.startswith("grep_search timed out after 5 s and was stopped"), text
    assert "backtrack catastrophically" in text


# -- permissions ---------------------------------------------------------------------------


async def _permission(d: Daemon, sid: str, name: str = "perm.txt") -> tuple[str, dict[str, Any]]:
    response = await d.prompt(sid, write_prompt(d.workspace, name))
    prompt_id = response.json()["promptId"]
    events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
    request = [e for e in events if e["type"] == "permission_request"][-1]
    return prompt_id, request


async def test_permission_request_shape_and_approval(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _permission(d, sid)
    data = request["data"]
    assert data["sessionId"] == sid
    assert [o["optionId"] for o in data["options"]] == ["proceed_always", "proceed_once", "cancel"]
    assert data["toolCall"]["kind"] == "edit"
    assert data["toolCall"]["content"][0]["type"] == "diff"
    rid = data["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    response = await d.client.post(
        f"/permission/{rid}", json=vote, headers={"X-Qwen-Client-Id": "voter-1"}
    )
    assert response.status_code == 200 and response.json() == {}
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    resolved = [e for e in events if e["type"] == "permission_resolved"][-1]
    assert resolved["data"] == {
        "requestId": rid,
        "outcome": {"outcome": "selected", "optionId": "proceed_once"},
    }
    assert resolved["originatorClientId"] == "voter-1"
    assert (d.workspace / "perm.txt").read_text() == "hi\n"
    again = await d.client.post(f"/permission/{rid}", json=vote)
    assert again.status_code == 404
    assert again.json() == {"error": "No pending permission request", "requestId": rid}
    late = [e for e in d.events(sid) if e["type"] == "permission_already_resolved"]
    assert late[-1]["data"] == {
        "requestId": rid,
        "sessionId": sid,
        "outcome": {"outcome": "selected", "optionId": "proceed_once"},
    }


async def test_the_inbox_votes_as_the_session_route_does(daemon: DaemonFactory) -> None:
    """Issue 22: a permission answered through the approvals' inbox is the session's vote
    (its policy, its events), with the verified identity; five identical answers at once
    resolve it once, a different one afterwards is 409."""
    d = await daemon(token="inbox-token")
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _permission(d, sid)
    rid = request["data"]["requestId"]
    url = f"/api/v1/approvals/permission:{rid}/answer"
    unknown = await d.client.post(url, json={"answer": "proceed_sometimes"})
    assert unknown.status_code == 400, unknown.text
    assert unknown.json() == {
        "error": "This approval takes one of: proceed_always, proceed_once, cancel",
        "code": "invalid_answer",
        "approvalId": f"permission:{rid}",
        "expected": ["proceed_always", "proceed_once", "cancel"],
    }
    responses = await asyncio.gather(
        *(d.client.post(url, json={"answer": "proceed_once"}) for _ in range(5))
    )
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    for response in responses:
        body = response.json()
        assert (body["state"], body["answer"], body["answeredBy"]) == (
            "approved",
            "proceed_once",
            "admin",
        )
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    resolved = [e for e in events if e["type"] == "permission_resolved"]
    assert len(resolved) == 1
    assert resolved[0]["data"]["outcome"] == {"outcome": "selected", "optionId": "proceed_once"}
    late = await d.client.post(url, json={"answer": "cancel"})
    assert late.status_code == 409 and late.json()["code"] == "approval_already_resolved"


async def test_a_permission_request_is_an_approval(daemon: DaemonFactory) -> None:
    """Issue 22: the session protocol's vote is unchanged; underneath, the request is an
    approval with the voter's verified identity (a tokenless daemon's `loopback`) beside
    its self-declared client id, and a request its prompt's cancel ends is cancelled."""
    d = await daemon()
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _permission(d, sid)
    rid = request["data"]["requestId"]
    inbox = (await d.client.get("/api/v1/approvals", params={"kind": "permission"})).json()
    (entry,) = [a for a in inbox["approvals"] if a["ref"] == rid]
    assert (entry["approvalId"], entry["state"], entry["tenant"]) == (
        f"permission:{rid}",
        "pending",
        None,
    )
    assert entry["subject"] == f"session/{sid}"
    assert entry["link"] == f"/session/{sid}/permission/{rid}"
    assert entry["detail"]["options"] == ["proceed_always", "proceed_once", "cancel"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    voted = await d.client.post(
        f"/permission/{rid}", json=vote, headers={"X-Qwen-Client-Id": "voter-1"}
    )
    assert voted.status_code == 200
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    done = (
        await d.client.get("/api/v1/approvals", params={"kind": "permission", "state": "approved"})
    ).json()
    (entry,) = [a for a in done["approvals"] if a["ref"] == rid]
    assert (entry["answer"], entry["answeredBy"], entry["answeredClient"]) == (
        "proceed_once",
        "loopback",
        "voter-1",
    )
    # A second request, its prompt cancelled while it waits: cancelled, not pending.
    prompt_id, request = await _permission(d, sid, "second.txt")
    rid = request["data"]["requestId"]
    assert (await d.client.post(f"/session/{sid}/cancel")).status_code == 204
    await d.wait_for(sid, "permission_resolved", prompt_id=prompt_id)
    ended = (
        await d.client.get("/api/v1/approvals", params={"kind": "permission", "state": "cancelled"})
    ).json()
    assert [a["ref"] for a in ended["approvals"]] == [rid]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"outcome": {"outcome": "selected", "optionId": "definitely_not_an_option"}}, 400),
        ({}, 400),
        ({"outcome": {"outcome": "maybe"}}, 400),
    ],
)
async def test_vote_refusals(daemon: DaemonFactory, body: dict[str, Any], status: int) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    _, request = await _permission(d, sid)
    rid = request["data"]["requestId"]
    response = await d.client.post(f"/permission/{rid}", json=body)
    assert response.status_code == status
    if "optionId" in str(body):
        assert response.json()["code"] == "invalid_option_id"
    unknown = await d.client.post(
        "/permission/c0db1f45-5828-4f9c-9c0d-20656a43d61e",
        json={"outcome": {"outcome": "cancelled"}},
    )
    assert unknown.status_code == 404


async def test_session_scoped_vote_and_rejection(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    other = (await d.create(sessionScope="thread"))["sessionId"]
    prompt_id, request = await _permission(d, sid, "rejected.txt")
    rid = request["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "cancel"}}
    wrong = await d.client.post(f"/session/{other}/permission/{rid}", json=vote)
    assert wrong.status_code == 404
    assert wrong.json() == {
        "error": "No pending permission request for session",
        "sessionId": other,
        "requestId": rid,
    }
    ok = await d.client.post(f"/session/{sid}/permission/{rid}", json=vote)
    assert ok.status_code == 200
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    assert not (d.workspace / "rejected.txt").exists()


async def test_delete_resolves_pending_permissions_as_cancelled(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    await _permission(d, sid)
    assert (await d.client.delete(f"/session/{sid}")).status_code == 204
    events = await d.wait_for(sid, "session_closed")
    resolved = [e for e in events if e["type"] == "permission_resolved"]
    assert resolved[-1]["data"]["outcome"] == {"outcome": "cancelled"}
    assert events[-1]["type"] == "session_closed"
    # Its approval ended with it (issue 22): the close cancels the running prompt first,
    # and the request is withdrawn with it.
    rid = resolved[-1]["data"]["requestId"]
    ended = (await d.client.get("/api/v1/approvals", params={"state": "cancelled"})).json()[
        "approvals"
    ]
    assert [(a["ref"], a["endReason"]) for a in ended] == [(rid, "the prompt was cancelled")]
    assert (await d.client.get("/api/v1/approvals")).json()["approvals"] == []


async def test_yolo_mode_runs_tools_without_asking(daemon: DaemonFactory) -> None:
    d = await daemon(token="t0k")
    sid = (await d.create())["sessionId"]
    await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "yolo"})
    response = await d.prompt(sid, write_prompt(d.workspace, "yolo.txt"))
    events = await d.wait_for(sid, "turn_complete", prompt_id=response.json()["promptId"])
    assert "permission_request" not in [e["type"] for e in events]
    assert (d.workspace / "yolo.txt").exists()


async def test_policy_designated(daemon: DaemonFactory) -> None:
    d = await daemon(permission_policy="designated")
    sid = (await d.client.post("/session", json={}, headers={"X-Qwen-Client-Id": "owner"})).json()[
        "sessionId"
    ]
    response = await d.prompt(
        sid, write_prompt(d.workspace, "d.txt"), **{"X-Qwen-Client-Id": "owner"}
    )
    events = await d.wait_for(sid, "permission_request", prompt_id=response.json()["promptId"])
    rid = events[-1]["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    forbidden = await d.client.post(
        f"/permission/{rid}", json=vote, headers={"X-Qwen-Client-Id": "intruder"}
    )
    assert forbidden.status_code == 403
    assert forbidden.json()["code"] == "permission_forbidden"
    assert forbidden.json()["reason"] == "designated_mismatch"
    ok = await d.client.post(f"/permission/{rid}", json=vote, headers={"X-Qwen-Client-Id": "owner"})
    assert ok.status_code == 200


async def test_policy_consensus(daemon: DaemonFactory) -> None:
    d = await daemon(permission_policy="consensus")
    sid = ""
    for client_id in ("c1", "c2", "c3"):
        sid = (
            await d.client.post("/session", json={}, headers={"X-Qwen-Client-Id": client_id})
        ).json()["sessionId"]
    prompt_id, request = await _permission(d, sid, "c.txt")
    rid = request["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    first = await d.client.post(f"/permission/{rid}", json=vote, headers={"X-Qwen-Client-Id": "c1"})
    assert first.status_code == 200
    partial = await d.wait_for(sid, "permission_partial_vote")
    assert "permission_resolved" not in [e["type"] for e in partial]
    second = await d.client.post(
        f"/permission/{rid}", json=vote, headers={"X-Qwen-Client-Id": "c2"}
    )
    assert second.status_code == 200
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    types = [e["type"] for e in events]
    assert types.index("permission_partial_vote") < types.index("permission_resolved")


async def test_policy_local_only(daemon: DaemonFactory) -> None:
    d = await daemon(permission_policy="local-only")
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _permission(d, sid, "l.txt")
    rid = request["data"]["requestId"]
    remote = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=d.client.app, client=("203.0.113.9", 5555)),  # type: ignore[attr-defined]
        base_url="http://127.0.0.1:4170",
    )
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    async with remote:
        forbidden = await remote.post(f"/permission/{rid}", json=vote)
        assert forbidden.status_code == 403
        assert forbidden.json()["reason"] == "remote_not_allowed"
        # A cancel vote works under every policy, remote or not.
        cancelled = await remote.post(
            f"/permission/{rid}", json={"outcome": {"outcome": "cancelled"}}
        )
        assert cancelled.status_code == 200
    await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)


async def test_capabilities_report_the_policy(daemon: DaemonFactory) -> None:
    d = await daemon(permission_policy="consensus")
    caps = (await d.client.get("/capabilities")).json()
    assert caps["policy"]["permission"] == "consensus"
    assert "permission_mediation" in caps["features"]


# -- load and resume -----------------------------------------------------------------------


async def test_load_and_resume_bring_a_closed_session_back(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    response = await d.prompt(sid, "remember me")
    await d.wait_for(sid, "turn_complete", prompt_id=response.json()["promptId"])
    await d.client.delete(f"/session/{sid}")
    loaded = await d.client.post(f"/session/{sid}/load", json={})
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["attached"] is False
    assert loaded.json()["state"]["modes"]["currentModeId"] == "default"
    again = await d.client.post(f"/session/{sid}/resume", json={})
    assert again.json()["attached"] is True
    # The history is still in the journal, and the revived session takes prompts.
    assert any(e["type"] == "turn_complete" for e in d.events(sid))
    response = await d.prompt(sid, "still here?")
    await d.wait_for(sid, "turn_complete", prompt_id=response.json()["promptId"])


async def test_load_and_resume_race(daemon: DaemonFactory) -> None:
    d = await daemon()
    sid = (await d.create())["sessionId"]
    await d.client.delete(f"/session/{sid}")
    actions = ["load", "resume", "load", "resume"]
    responses = await asyncio.gather(
        *(d.client.post(f"/session/{sid}/{action}", json={}) for action in actions)
    )
    winners = [
        a
        for a, r in zip(actions, responses, strict=True)
        if r.status_code == 200 and r.json()["attached"] is False
    ]
    assert len(winners) == 1
    winner = winners[0]
    for action, response in zip(actions, responses, strict=True):
        if action == winner:  # the same action coalesces
            assert response.status_code == 200, response.text
        else:
            assert response.status_code == 409
            assert response.headers["retry-after"] == "5"
            assert response.json()["code"] == "restore_in_progress"
            assert response.json()["activeAction"] == winner
            assert response.json()["requestedAction"] == action


async def test_openai_compatible_model_streams_and_calls_tools(daemon: DaemonFactory) -> None:
    from tests.fakes.openai_server import FakeOpenAI

    with FakeOpenAI() as fake:
        d = await daemon(
            model_provider="openai", openai_model="qwen-test", openai_base_url=fake.base_url
        )
        fake.queue_tool_calls(
            [
                {
                    "id": "call_w1",
                    "name": "write_file",
                    "arguments": {
                        "file_path": str(d.workspace / "m.txt"),
                        "content": "from the model\n",
                    },
                }
            ]
        )
        fake.queue_text("All done, the file is written.")
        sid = (await d.create())["sessionId"]
        response = await d.prompt(sid, "write a file please")
        prompt_id = response.json()["promptId"]
        events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
        rid = events[-1]["data"]["requestId"]
        await d.client.post(
            f"/permission/{rid}",
            json={"outcome": {"outcome": "selected", "optionId": "proceed_once"}},
        )
        events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
        second = fake.requests[1].body
    assert (d.workspace / "m.txt").read_text() == "from the model\n"
    mine = [e for e in events if e.get("promptId") == prompt_id]
    updates = [e["data"]["update"]["sessionUpdate"] for e in mine if e["type"] == "session_update"]
    assert updates[:2] == ["user_message_chunk", "tool_call"]
    assert "tool_call_update" in updates
    text = "".join(
        e["data"]["update"]["content"]["text"]
        for e in mine
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "All done, the file is written."
    # The model got the tool's result back under its call id.
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["tool_call_id"] == "call_w1"


async def test_a_session_follows_a_switch_of_model_provider(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    """Created under `scripted`, prompted after the daemon restarted with `openai`: the
    session asks OpenAI for the configured model (not for `scripted`), and may switch."""
    from tests.fakes.openai_server import FakeOpenAI

    workspace = tmp_path / "ws"
    workspace.mkdir()
    base: dict[str, Any] = {
        "data_dir": tmp_path / ".data",
        "task_queue": task_queue,
        "workspace": workspace,
    }
    store = Store(Settings(**base).resolved_database_url)
    upgrade_to_head(store.engine)
    try:
        async with build_worker(dev_env.client, Settings(**base), store):
            d = Daemon(client=await api(**base), workspace=workspace, journal=EventJournal(store))
            sid = (await d.create())["sessionId"]
            first = await d.prompt(sid, "hello", Prefer="wait")
            assert first.json() == {"stopReason": "end_turn"}
            context = (await d.client.get(f"/session/{sid}/context")).json()
            assert context["state"]["models"]["currentModelId"] == "scripted"

        with FakeOpenAI() as fake:
            switched = {
                **base,
                "model_provider": "openai",
                "openai_model": "qwen-test",
                "openai_base_url": fake.base_url,
            }
            async with build_worker(dev_env.client, Settings(**switched), store):
                d = Daemon(
                    client=await api(**switched), workspace=workspace, journal=EventJournal(store)
                )
                caps = (await d.client.get("/capabilities")).json()
                assert caps["modelServices"] == [
                    {"id": "openai", "provider": "openai", "current": True, "modelId": "qwen-test"}
                ]
                context = (await d.client.get(f"/session/{sid}/context")).json()
                assert context["state"]["models"]["currentModelId"] == "qwen-test"
                fake.queue_text("Hello from the new provider.")
                answer = await d.prompt(sid, "hello again", Prefer="wait")
                assert answer.json() == {"stopReason": "end_turn"}, answer.text
                assert fake.requests[-1].body["model"] == "qwen-test"

                moved = await d.client.post(f"/session/{sid}/model", json={"modelId": "qwen-big"})
                assert moved.status_code == 200, moved.text
                fake.queue_text("Bigger.")
                answer = await d.prompt(sid, "and once more", Prefer="wait")
                assert answer.json() == {"stopReason": "end_turn"}, answer.text
                assert fake.requests[-1].body["model"] == "qwen-big"
    finally:
        store.dispose()


async def test_a_long_session_continues_as_new_and_keeps_its_state(
    daemon: DaemonFactory, dev_env: WorkflowEnvironment
) -> None:
    from runtime.sessions.contracts import session_workflow_id

    d = await daemon(token="t0k")
    sid = (await d.create())["sessionId"]
    handle = dev_env.client.get_workflow_handle(session_workflow_id(sid))
    first_run = (await handle.describe()).run_id
    await d.client.post(f"/session/{sid}/approval-mode", json={"mode": "auto-edit"})
    # The test server suggests continue-as-new after 300 history events.
    for i in range(40):
        response = await d.prompt(sid, f"prompt {i}", Prefer="wait")
        assert response.json() == {"stopReason": "end_turn"}
        if (await handle.describe()).run_id != first_run:
            break
    assert (await handle.describe()).run_id != first_run
    context = (await d.client.get(f"/session/{sid}/context")).json()
    assert context["state"]["modes"]["currentModeId"] == "auto-edit"
    response = await d.prompt(sid, "after the new run", Prefer="wait")
    assert response.json() == {"stopReason": "end_turn"}
    ids = [e["id"] for e in d.events(sid)]
    assert ids == list(range(1, len(ids) + 1))


async def test_a_busy_session_continues_as_new_between_prompts_carrying_its_queue(
    daemon: DaemonFactory, dev_env: WorkflowEnvironment
) -> None:
    """A session that is never idle still starts a new history: between two prompts, when
    Temporal suggests it, the run continues as new with the queued prompt carried over,
    and that prompt runs in the new run, its events numbered on."""
    import json

    from runtime.sessions.contracts import CancelRequest, session_workflow_id
    from workflows.sessions.session import SessionWorkflow

    d = await daemon()
    sid = (await d.create())["sessionId"]
    handle = dev_env.client.get_workflow_handle(session_workflow_id(sid))
    first_run = (await handle.describe()).run_id
    # A prompt paused on its permission keeps the session busy.
    prompt_id, request = await _permission(d, sid)
    # Grow the history past the dev server's suggestion (300 events) while it waits: a
    # cancel for a prompt id the session does not have changes nothing but is recorded.
    while (await handle.describe()).raw_description.workflow_execution_info.history_length <= 320:
        for _ in range(20):
            await handle.signal(SessionWorkflow.cancel, CancelRequest(prompt_id="no-such-prompt"))
    queued = (await d.prompt(sid, "/say queued behind")).json()["promptId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    rid = request["data"]["requestId"]
    assert (await d.client.post(f"/permission/{rid}", json=vote)).status_code == 200
    events = await d.wait_for(sid, "turn_complete", prompt_id=queued)
    (complete,) = [
        e for e in events if e["type"] == "turn_complete" and e.get("promptId") == queued
    ]
    assert complete["data"]["stopReason"] == "end_turn"
    # The first run ended by continuing as new with the queued prompt still in its queue.
    history = await dev_env.client.get_workflow_handle(
        session_workflow_id(sid), run_id=first_run
    ).fetch_history()
    last = history.events[-1]
    assert last.HasField("workflow_execution_continued_as_new_event_attributes")
    carried = json.loads(
        last.workflow_execution_continued_as_new_event_attributes.input.payloads[0].data
    )
    assert [item["prompt_id"] for item in carried["queue"]] == [queued]
    assert prompt_id != queued
    ids = [e["id"] for e in d.events(sid)]
    assert ids == list(range(1, len(ids) + 1))


async def test_a_close_while_the_session_waits_to_continue_as_new_closes_it(
    daemon: DaemonFactory, dev_env: WorkflowEnvironment
) -> None:
    """Between prompts, when Temporal suggests it, the session first waits for its handlers
    to finish, then continues as new. A close taken during that wait closes the session:
    before, the new run did not carry it, and the session lived on after its client's 204.
    Forced here: a recap holds its handler open at the model while the history grows past
    the suggestion; the close comes once the run waits; then the recap is let through."""
    from temporalio.client import WorkflowExecutionStatus

    from activities.llm import ScriptedModel
    from runtime.sessions.contracts import CancelRequest, session_workflow_id
    from workflows.sessions.session import SessionWorkflow

    class HeldModel(ScriptedModel):
        """Calls wait at a gate once `hold` is set (the recap's, here)."""

        def __init__(self) -> None:
            self.hold = False
            self.waiting = asyncio.Event()
            self.gate = asyncio.Event()

        async def complete(self, *args: Any, **kwargs: Any) -> Any:
            if self.hold:
                self.waiting.set()
                await self.gate.wait()
            return await super().complete(*args, **kwargs)

    model = HeldModel()
    d = await daemon(provider=model)
    sid = (await d.create())["sessionId"]
    # Two messages, so that the recap asks the model.
    assert (await d.prompt(sid, "hello", Prefer="wait")).json() == {"stopReason": "end_turn"}
    handle = dev_env.client.get_workflow_handle(session_workflow_id(sid))
    first_run = (await handle.describe()).run_id
    model.hold = True
    recap = asyncio.create_task(d.client.post(f"/session/{sid}/recap", json={}))
    await asyncio.wait_for(model.waiting.wait(), 60)
    # Past the dev server's suggestion (300 events): a cancel for a prompt id the session
    # does not have changes nothing but is recorded.
    while (await handle.describe()).raw_description.workflow_execution_info.history_length <= 320:
        for _ in range(20):
            await handle.signal(SessionWorkflow.cancel, CancelRequest(prompt_id="no-such-prompt"))
    # A query is answered after the worker took every event before it: the run has seen
    # the suggestion and waits for the recap's handler.
    await handle.query(SessionWorkflow.status)
    closed = await d.client.delete(f"/session/{sid}")
    assert closed.status_code == 204, closed.text
    model.gate.set()
    assert (await recap).status_code == 200
    await d.wait_for(sid, "session_closed")
    # The run that took the close ends with the session (a run that continued as new
    # instead raises WorkflowContinuedAsNewError here).
    first = dev_env.client.get_workflow_handle(session_workflow_id(sid), run_id=first_run)
    await first.result(follow_runs=False, rpc_timeout=timedelta(seconds=60))
    assert (await first.describe()).status == WorkflowExecutionStatus.COMPLETED


async def test_session_workflow_is_findable_in_the_web_ui(
    daemon: DaemonFactory, dev_env: WorkflowEnvironment
) -> None:
    from runtime.sessions.contracts import session_workflow_id

    d = await daemon()
    sid = (await d.create())["sessionId"]
    described = await dev_env.client.get_workflow_handle(session_workflow_id(sid)).describe()
    memo = await described.memo()
    assert memo["workspaceCwd"] == str(d.workspace)
    attributes = {key.name: value for key, value in described.typed_search_attributes}
    assert attributes["AgentrtKind"] == "session"
    assert attributes["AgentrtTenant"] == str(d.workspace)


async def test_resume_heals_a_session_whose_workflow_is_gone(
    daemon: DaemonFactory, dev_env: WorkflowEnvironment
) -> None:
    from runtime.sessions.contracts import session_workflow_id

    d = await daemon()
    sid = (await d.create())["sessionId"]
    await dev_env.client.get_workflow_handle(session_workflow_id(sid)).terminate("lost")
    resumed = await d.client.post(f"/session/{sid}/resume", json={})
    assert resumed.status_code == 200, resumed.text
    response = await d.prompt(sid, "are you back?", Prefer="wait")
    assert response.json() == {"stopReason": "end_turn"}


async def test_no_session_without_temporal(daemon: DaemonFactory) -> None:
    from api.temporal import TemporalConnector

    d = await daemon()
    d.client.app.state.temporal = TemporalConnector("127.0.0.1:1", "default")  # type: ignore[attr-defined]
    response = await d.client.post("/session", json={})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.json()["code"] == "temporal_unavailable"
    # No husk left behind; and listing is a store read, answered while Temporal is down.
    ws = str(d.workspace).replace("/", "%2F")
    listed = await d.client.get(f"/workspace/{ws}/sessions")
    assert listed.status_code == 200, listed.text
    assert listed.json() == {"sessions": []}


class _CuttableProxy:
    """A TCP relay to Temporal that can be cut (every connection dropped, the port
    closed) and mended on the same port: a Temporal outage as the API's client sees it."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.port = free_port()
        self.server: asyncio.Server | None = None
        self.links: set[asyncio.StreamWriter] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def mend(self) -> None:
        self.server = await asyncio.start_server(self._link, "127.0.0.1", self.port)

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self.links):
            writer.transport.abort()
        self.links.clear()
        self.server = None

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.links |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_temporal_outage_answers_503_and_changes_nothing(
    daemon: DaemonFactory, dev_env: WorkflowEnvironment
) -> None:
    """While Temporal is unreachable, whatever needs it is 503 temporal_unavailable (never a
    404 for a vote, never a half-done DELETE), store reads still answer, and the same client
    works again once Temporal is back."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.service import RetryConfig

    from api.temporal import TemporalConnector

    d = await daemon()
    sid = (await d.create())["sessionId"]
    prompt_id, request = await _permission(d, sid, "outage.txt")
    rid = request["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "cancel"}}
    proxy = _CuttableProxy(dev_env.client.service_client.config.target_host)
    await proxy.mend()
    # The SDK retries an RPC for ~10 s before it gives up with UNAVAILABLE; less here.
    client = await Client.connect(
        proxy.address,
        data_converter=pydantic_data_converter,
        retry_config=RetryConfig(max_elapsed_time_millis=1000),
    )
    app = d.client.app  # type: ignore[attr-defined]
    try:
        await proxy.cut()
        for method, path, body in [
            ("POST", f"/permission/{rid}", vote),
            ("POST", f"/session/{sid}/permission/{rid}", vote),
            ("DELETE", f"/session/{sid}", None),
            ("POST", f"/session/{sid}/prompt", {"prompt": [{"type": "text", "text": "hi"}]}),
        ]:
            # A fresh connector each time: the RPC itself meets the outage, not the probe.
            app.state.temporal = TemporalConnector(proxy.address, "default", client)
            response = await d.client.request(method, path, json=body)
            assert response.status_code == 503, (path, response.text)
            assert response.json()["code"] == "temporal_unavailable", path
            assert response.headers["retry-after"] == "5"
            # Marked down: the next one is refused by the health probe.
            again = await d.client.request(method, path, json=body)
            assert again.status_code == 503, (path, again.text)
        # Store reads, and attaching to the live session, do not need Temporal.
        assert (await d.create())["sessionId"] == sid
        ws = str(d.workspace).replace("/", "%2F")
        listed = (await d.client.get(f"/workspace/{ws}/sessions")).json()
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        assert (await d.client.get("/health")).json() == {"status": "ok"}

        await proxy.mend()
        ok = await d.client.post(f"/session/{sid}/permission/{rid}", json=vote)
        assert ok.status_code == 200, ok.text
        await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
        assert not (d.workspace / "outage.txt").exists()
    finally:
        if proxy.server is not None:
            await proxy.cut()


async def test_the_worker_logs_each_activity_attempt(
    daemon: DaemonFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentrt.activity")
    d = await daemon()
    sid = (await d.create())["sessionId"]
    waited = await d.client.post(
        f"/session/{sid}/prompt",
        headers={"Prefer": "wait"},
        json={"prompt": [{"type": "text", "text": "hello"}]},
    )
    assert waited.json() == {"stopReason": "end_turn"}
    lines = [r.getMessage() for r in caplog.records if r.name == "agentrt.activity"]
    assert any(
        line.startswith(f"session.model_step (local) for session/{sid} attempt 1: ok in ")
        for line in lines
    ), lines
