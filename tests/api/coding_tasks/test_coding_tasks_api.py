"""A tenant's coding tasks over HTTP (api/coding_tasks/routes.py) against a real worker and
Temporal: created once per requestId with its workflow `coding-task/{tenant}/{taskId}`,
listed, read, cancelled with the verified identity recorded; a settlement reaches the
proposing agent as `DependencyCompleted` on its next turn."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from runtime.coding_tasks import store as tasks
from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.models import AgentLedgerTurn
from runtime.streams import session_stream
from tests.agents_helpers import AgentsDaemon, AgentsFactory, dependency_turn
from tests.conftest import migrated_sqlite


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """SQLite only: the store's part runs on both in
    tests/runtime/coding_tasks/test_coding_tasks.py."""
    return migrated_sqlite(sqlite_template, tmp_path / ".data" / "agentrt.db")


BODY = {"title": "Fix the build", "instructions": "make test passes", "capabilities": ["python"]}


async def _tenant(d: AgentsDaemon) -> tuple[str, str]:
    tenant = d.tenant()
    return tenant, await d.soa(tenant)


async def test_a_task_is_created_once_listed_read_and_cancelled(agents: AgentsFactory) -> None:
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    body = {**BODY, "requestId": "r-1", "presetId": "default", "model": "ignored"}
    created = await d.client.post(url, json=body)
    assert created.status_code == 201, created.text
    task = created.json()
    assert (task["state"], task["proposedBy"], task["holder"]) == ("open", "admin", None)
    assert (task["presetId"], task["model"]) == ("default", None)  # the preset wins
    assert task["workflowId"] == f"coding-task/{tenant}/{task['taskId']}"
    again = await d.client.post(url, json=body)
    assert again.status_code == 201 and again.json()["taskId"] == task["taskId"]
    listed = (await d.client.get(url, params={"state": "open"})).json()
    assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]
    assert (await d.client.get(url, params={"state": "running"})).json()["tasks"] == []
    one = await d.client.get(f"{url}/{task['taskId']}")
    assert one.json()["instructions"] == "make test passes"
    cancelled = await d.client.post(f"{url}/{task['taskId']}/cancel", json={})
    assert cancelled.status_code == 200, cancelled.text
    assert (cancelled.json()["state"], cancelled.json()["settledBy"]) == ("cancelled", "admin")
    claimed = await d.client.post(f"{url}/{task['taskId']}/cancel", json={})
    assert claimed.json()["state"] == "cancelled"


async def test_a_settlement_reaches_the_proposing_agent_on_its_next_turn(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant, soa = await _tenant(d)
    now = datetime.now(UTC)
    row = tasks.create(
        d.store,
        tenant=tenant,
        title="Port the parser",
        instructions="port it",
        proposed_by=f"agent:{soa}",
        now=now,
        op_id="soa-proposal-1",
        instance_id=soa,
    )
    tasks.claim(d.store, tenant, row.task_id, "coder:a", now)
    cancel = await d.client.post(f"{d.base(tenant)}/coding-tasks/{row.task_id}/cancel", json={})
    assert cancel.status_code == 200, cancel.text
    again = await d.client.post(f"{d.base(tenant)}/coding-tasks/{row.task_id}/claim", json={})
    assert again.status_code in (404, 405)  # claims are the coders' (MCP), not REST's

    def turn() -> AgentLedgerTurn | None:
        return dependency_turn(d.store, soa)

    found = await d.wait_until(turn, "the agent's turn on the settlement", timeout=90)
    assert found.event_payload["taskId"] == row.task_id
    assert found.event_payload["state"] == "cancelled"
    assert "Port the parser" in found.event_payload["text"]
    assert tasks.get(d.store, tenant, row.task_id).settled_by == "admin"


async def test_bad_input_and_other_tenants_are_refused(agents: AgentsFactory) -> None:
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    assert (await d.client.post(url, json={"title": "t"})).status_code == 400
    extra = await d.client.post(url, json={**BODY, "nope": 1})
    assert extra.status_code == 400
    mode = await d.client.post(url, json={**BODY, "approvalMode": "reckless"})
    assert mode.status_code == 400
    naive = await d.client.post(url, json={**BODY, "deadline": "2030-01-01T00:00:00"})
    assert naive.status_code == 400
    past = await d.client.post(url, json={**BODY, "deadline": "2000-01-01T00:00:00Z"})
    assert (past.status_code, past.json()["code"]) == (400, "invalid_coding_task")
    missing = await d.client.get(f"{url}/nope")
    assert (missing.status_code, missing.json()["code"]) == (404, "coding_task_not_found")
    off = await d.client.get(f"{d.base(d.tenant())}/coding-tasks")
    assert (off.status_code, off.json()["code"]) == (403, "feature_disabled")
    made = await d.client.post(f"{d.base(tenant)}/tokens", json={"name": "ops", "role": "operator"})
    ops = {"Authorization": f"Bearer {made.json()['token']}"}
    by_ops = await d.client.post(url, json=BODY, headers=ops)
    assert by_ops.status_code == 201 and by_ops.json()["proposedBy"] == "operator:ops"
    coder = await d.client.post(f"{d.base(tenant)}/tokens", json={"name": "c", "role": "coder"})
    as_coder = {"Authorization": f"Bearer {coder.json()['token']}"}
    refused = await d.client.get(url, headers=as_coder)
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden_role")


async def test_agentrts_own_coder_edits_a_file_in_its_worktree_and_settles_the_task(
    agents: AgentsFactory,
) -> None:
    """POST .../coder: the task is claimed for agentrt-coder, an agentrt session runs its
    instructions in the task's own directory (yolo: nothing to approve), and the prompt's
    end settles the task with the session as its artifact."""
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    task_id = tasks.task_id_for(f"rest/{tenant}/own-1")
    own_dir = Path(d.settings.workspace_cwd) / ".agentrt-tasks" / task_id
    write = {"file_path": str(own_dir / "hello.txt"), "content": "hi\n"}
    preset = {"model": "coder-model", "provider": "settings"}
    made = await d.client.put("/api/v1/llm/presets/coder-preset", json=preset)
    assert made.status_code in (200, 201), made.text
    body = {
        "title": "Say hi",
        "instructions": f"/call write_file {json.dumps(write)}",
        "approvalMode": "yolo",
        "presetId": "coder-preset",
        "requestId": "own-1",
    }
    created = await d.client.post(url, json=body)
    assert created.status_code == 201 and created.json()["taskId"] == task_id
    spawned = await d.client.post(f"{url}/{task_id}/coder", json={})
    assert spawned.status_code == 200, spawned.text
    assert spawned.json()["holder"] == "agentrt-coder"
    again = await d.client.post(f"{url}/{task_id}/coder", json={})
    assert again.status_code == 200  # the same claim: nothing started twice

    def settled() -> bool:
        return tasks.get(d.store, tenant, task_id).state == "succeeded"

    await d.wait_until(settled, "the task's settlement by its coder", timeout=90)
    assert (own_dir / "hello.txt").read_text() == "hi\n"
    assert not (Path(d.settings.workspace_cwd) / "hello.txt").exists()
    task = (await d.client.get(f"{url}/{task_id}")).json()
    assert task["artifacts"][0]["ref"] == f"session/{task['sessionId']}"
    # Who gave the task to the coder is on record: the bearer's verified identity.
    assert task["notes"][0]["by"] == "admin"
    assert task["notes"][0]["text"] == "assigned to agentrt-coder"
    with d.store.session() as db:
        attempts = db.exec(
            select(LlmCallAttempt).where(col(LlmCallAttempt.owner_id) == task["sessionId"])
        ).all()
    # The task's preset, not the session site's binding, chose the coder's model.
    assert attempts and {a.preset_id for a in attempts} == {"coder-preset"}
    taken = await d.client.post(f"{url}/{task_id}/coder", json={})
    assert (taken.status_code, taken.json()["code"]) == (409, "task_not_open")


async def _open_question(d: AgentsDaemon, decisions: str) -> dict[str, Any]:
    """The tenant's first open decision: agentrt's coder's permission request, once it
    reached the queue."""
    for _ in range(300):
        listed = (await d.client.get(decisions, params={"status": "open"})).json()
        question: dict[str, Any] | None = next(iter(listed["decisions"]), None)
        if question is not None:
            return question
        await asyncio.sleep(0.2)
    raise AssertionError("the coder's permission request never reached the queue")


async def test_the_own_coders_permission_requests_are_answered_on_the_decision_queue(
    agents: AgentsFactory,
) -> None:
    """approvalMode default: the coder's write asks; the question is a decision of the
    tenant (source coder), and its answer, one of the request's options, is the vote."""
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    task_id = tasks.task_id_for(f"rest/{tenant}/own-2")
    own_dir = Path(d.settings.workspace_cwd) / ".agentrt-tasks" / task_id
    write = {"file_path": str(own_dir / "asked.txt"), "content": "yes\n"}
    body = {
        "title": "Write after asking",
        "instructions": f"/call write_file {json.dumps(write)}",
        "requestId": "own-2",
    }
    assert (await d.client.post(url, json=body)).status_code == 201
    assert (await d.client.post(f"{url}/{task_id}/coder", json={})).status_code == 200
    decisions = f"{d.base(tenant)}/decisions"

    question = await _open_question(d, decisions)
    assert question["source"] == "coder" and question["payload"]["taskId"] == task_id
    assert "proceed_once" in question["options"]
    respond = f"{decisions}/{question['decisionId']}/respond"
    loose = await d.client.post(respond, json={"resolution": "sure"})
    assert (loose.status_code, loose.json()["code"]) == (400, "invalid_resolution")
    answered = await d.client.post(respond, json={"resolution": "proceed_once"})
    assert answered.status_code == 200, answered.text

    def settled() -> bool:
        return tasks.get(d.store, tenant, task_id).state == "succeeded"

    await d.wait_until(settled, "the task's settlement after the vote", timeout=90)
    assert (own_dir / "asked.txt").read_text() == "yes\n"
    # Issue 22: both doors' approvals end alike, whichever side recorded it first.
    request_id = question["payload"]["requestId"]
    listed = (
        await d.client.get("/api/v1/approvals", params={"state": "approved", "limit": 200})
    ).json()["approvals"]
    ended = {a["approvalId"]: (a["answer"], a["answeredBy"]) for a in listed}
    for approval in (f"permission:{request_id}", f"coder_question:{question['decisionId']}"):
        assert ended.get(approval) == ("proceed_once", "admin"), (approval, ended)


async def test_the_soa_hands_an_open_task_to_agentrts_coder(agents: AgentsFactory) -> None:
    """soa_assign_coder: a governed tool; the task is claimed for agentrt-coder, runs,
    settles, and the SOA reads the outcome on its next turn."""
    d = await agents()
    tenant, soa = await _tenant(d)
    row = tasks.create(
        d.store,
        tenant=tenant,
        title="Say hello",
        instructions="Say hello.",
        proposed_by=f"agent:{soa}",
        now=datetime.now(UTC),
        op_id="assign-1",
        instance_id=soa,
    )
    line = f"/call soa_assign_coder {json.dumps({'taskId': row.task_id})}"
    sent = await d.client.post(f"{d.base(tenant)}/agents/{soa}/messages", json={"text": line})
    assert sent.status_code == 202

    def settled() -> bool:
        return tasks.get(d.store, tenant, row.task_id).state == "succeeded"

    await d.wait_until(settled, "the assigned task's settlement", timeout=90)
    done = tasks.get(d.store, tenant, row.task_id)
    assert done.settled_by == "agentrt-coder"
    assert done.notes[0]["by"] == f"agent:{soa}"  # the SOA that assigned it

    def turn() -> AgentLedgerTurn | None:
        return dependency_turn(d.store, soa)

    await d.wait_until(turn, "the SOA's turn on the outcome", timeout=90)


async def test_cancelling_a_task_stops_its_coders_prompt(agents: AgentsFactory) -> None:
    """The coder waits on a permission; the operator cancels the task: its prompt ends."""
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    task_id = tasks.task_id_for(f"rest/{tenant}/own-3")
    own_dir = Path(d.settings.workspace_cwd) / ".agentrt-tasks" / task_id
    write = {"file_path": str(own_dir / "never.txt"), "content": "no\n"}
    body = {"title": "Stopped", "instructions": f"/call write_file {json.dumps(write)}"}
    assert (await d.client.post(url, json={**body, "requestId": "own-3"})).status_code == 201
    assert (await d.client.post(f"{url}/{task_id}/coder", json={})).status_code == 200

    def asking() -> str | None:
        row = tasks.get(d.store, tenant, task_id)
        if row.session_id is None:
            return None
        entries = d.journal.read(session_stream(row.session_id)).entries
        return row.session_id if any(e.type == "permission_request" for e in entries) else None

    session_id = await d.wait_until(asking, "the coder's permission request", timeout=90)
    cancelled = await d.client.post(f"{url}/{task_id}/cancel", json={})
    assert cancelled.json()["state"] == "cancelled"

    def stopped() -> bool:
        entries = d.journal.read(session_stream(session_id)).entries
        return any(
            e.type == "turn_complete" and e.data.get("data", {}).get("stopReason") == "cancelled"
            for e in entries
        )

    await d.wait_until(stopped, "the coder's prompt cancelled", timeout=90)
    assert not (own_dir / "never.txt").exists()
    assert tasks.get(d.store, tenant, task_id).state == "cancelled"


async def test_the_own_coders_permission_voted_on_its_session_ends_its_question(
    agents: AgentsFactory,
) -> None:
    """Issue 22: agentrt's coder's permission request is one request through two doors,
    the session's vote and the tenant's queue: voted on the session, its question on the
    queue ends with the same outcome (no orphan), and both approvals say who answered."""
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    task_id = tasks.task_id_for(f"rest/{tenant}/own-5")
    own_dir = Path(d.settings.workspace_cwd) / ".agentrt-tasks" / task_id
    write = {"file_path": str(own_dir / "voted.txt"), "content": "yes\n"}
    body = {
        "title": "Write after a vote",
        "instructions": f"/call write_file {json.dumps(write)}",
        "requestId": "own-5",
    }
    assert (await d.client.post(url, json=body)).status_code == 201
    assert (await d.client.post(f"{url}/{task_id}/coder", json={})).status_code == 200
    decisions = f"{d.base(tenant)}/decisions"

    question = await _open_question(d, decisions)
    request_id = question["payload"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    voted = await d.client.post(f"/permission/{request_id}", json=vote)
    assert voted.status_code == 200, voted.text

    async def resolved() -> dict[str, Any] | None:
        listed = (await d.client.get(decisions, params={"status": "resolved"})).json()
        return next(
            (q for q in listed["decisions"] if q["decisionId"] == question["decisionId"]), None
        )

    ended = None
    for _ in range(300):
        ended = await resolved()
        if ended is not None:
            break
        await asyncio.sleep(0.2)
    assert ended is not None, "the question outlived its session's request"
    assert (ended["resolution"], ended["answeredBy"]) == ("proceed_once", "admin")
    inbox = "/api/v1/approvals"
    for approval in (f"permission:{request_id}", f"coder_question:{question['decisionId']}"):
        listed = (await d.client.get(inbox, params={"state": "approved", "limit": 200})).json()
        (entry,) = [a for a in listed["approvals"] if a["approvalId"] == approval]
        assert (entry["answer"], entry["answeredBy"]) == ("proceed_once", "admin")
    late = await d.client.post(
        f"{decisions}/{question['decisionId']}/respond", json={"resolution": "cancel"}
    )
    assert late.status_code == 409, late.text

    def settled() -> bool:
        return tasks.get(d.store, tenant, task_id).state == "succeeded"

    await d.wait_until(settled, "the task's settlement after the vote", timeout=90)
    assert (own_dir / "voted.txt").read_text() == "yes\n"


async def test_a_coders_session_that_dies_unreported_fails_its_task(
    agents: AgentsFactory, dev_env: WorkflowEnvironment
) -> None:
    """The coder's session is terminated while it waits on a permission (no turn end, so
    no report): within a claim timeout the task fails instead of holding its slot."""
    d = await agents(coding_task_claim_timeout_ms=1500)
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    task_id = tasks.task_id_for(f"rest/{tenant}/own-4")
    own_dir = Path(d.settings.workspace_cwd) / ".agentrt-tasks" / task_id
    write = {"file_path": str(own_dir / "never.txt"), "content": "no\n"}
    body = {"title": "Orphaned", "instructions": f"/call write_file {json.dumps(write)}"}
    assert (await d.client.post(url, json={**body, "requestId": "own-4"})).status_code == 201
    assert (await d.client.post(f"{url}/{task_id}/coder", json={})).status_code == 200

    def asking() -> str | None:
        row = tasks.get(d.store, tenant, task_id)
        if row.session_id is None:
            return None
        entries = d.journal.read(session_stream(row.session_id)).entries
        return row.session_id if any(e.type == "permission_request" for e in entries) else None

    session_id = await d.wait_until(asking, "the coder's permission request", timeout=90)
    decisions = f"{d.base(tenant)}/decisions"

    async def queued() -> dict[str, Any] | None:
        listed = (await d.client.get(decisions, params={"status": "open"})).json()["decisions"]
        return next((q for q in listed if q["payload"].get("taskId") == task_id), None)

    question = None
    for _ in range(300):  # the question reaches the queue just after the session's event
        question = await queued()
        if question is not None:
            break
        await asyncio.sleep(0.2)
    assert question is not None, "the coder's question never reached the queue"
    await dev_env.client.get_workflow_handle(f"session/{session_id}").terminate("test")

    def failed() -> bool:
        return tasks.get(d.store, tenant, task_id).state == "failed"

    await d.wait_until(failed, "the task failed after its coder's session died", timeout=90)
    task = (await d.client.get(f"{url}/{task_id}")).json()
    assert task["summary"] == "agentrt's coder's session ended before its prompt did"
    assert task["artifacts"][0]["ref"] == f"session/{session_id}"
    assert not (own_dir / "never.txt").exists()
    # Its question ended with the task (issue 22: no approval outlives what it was for):
    # resolved `superseded`, and a late answer is refused; nothing ran.
    answered = await d.client.post(
        f"{decisions}/{question['decisionId']}/respond", json={"resolution": "proceed_once"}
    )
    assert answered.status_code == 409, answered.text
    assert answered.json()["resolution"] == "superseded"
    assert not (own_dir / "never.txt").exists()


async def test_a_coder_temporal_never_started_leaves_the_task_open(agents: AgentsFactory) -> None:
    """POST .../coder while Temporal is unreachable: 503, and the task is open again (not
    held by a coder that never runs); once Temporal is back, the same POST works."""
    from api.temporal import TemporalConnector

    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    body = {"title": "Later", "instructions": "Say hi.", "requestId": "own-5"}
    task_id = (await d.client.post(url, json=body)).json()["taskId"]
    app = d.client.app  # type: ignore[attr-defined]
    live = app.state.temporal
    app.state.temporal = TemporalConnector("127.0.0.1:1", "default")
    refused = await d.client.post(f"{url}/{task_id}/coder", json={})
    assert (refused.status_code, refused.json()["code"]) == (503, "temporal_unavailable")
    task = (await d.client.get(f"{url}/{task_id}")).json()
    assert (task["state"], task["holder"]) == ("open", None)
    app.state.temporal = live
    taken = await d.client.post(f"{url}/{task_id}/coder", json={})
    assert taken.status_code == 200 and taken.json()["holder"] == "agentrt-coder"


async def test_the_soa_names_its_tasks_preset_and_approval_mode(agents: AgentsFactory) -> None:
    """soa_propose_task takes presetId (or model) and approvalMode, within the modes an
    agent may give its coder: `yolo` is refused, and nothing is written."""
    d = await agents()
    tenant, soa = await _tenant(d)
    proposal = {
        "title": "Tidy the docs",
        "prompt": "Tidy them.",
        "coder": "any",
        "presetId": "docs-preset",
        "model": "ignored",
        "approvalMode": "auto-edit",
    }
    loose = {**proposal, "title": "Unasked", "approvalMode": "yolo"}
    lines = [f"/call soa_propose_task {json.dumps(p)}" for p in (loose, proposal)]
    sent = await d.client.post(
        f"{d.base(tenant)}/agents/{soa}/messages", json={"text": "\n".join(lines)}
    )
    assert sent.status_code == 202

    def proposed() -> list[Any]:
        return tasks.list_tasks(d.store, tenant)

    rows = await d.wait_until(proposed, "the SOA's proposal")
    assert [(r.title, r.preset_id, r.model, r.approval_mode) for r in rows] == [
        ("Tidy the docs", "docs-preset", None, "auto-edit")
    ]


async def test_a_tasks_model_is_its_coders_own_model(agents: AgentsFactory) -> None:
    """No presetId, a model: agentrt's coder runs it as its session's own model, on what
    Session:Default resolves to."""
    d = await agents()
    tenant, _ = await _tenant(d)
    url = f"{d.base(tenant)}/coding-tasks"
    body = {"title": "Hi", "instructions": "Say hi.", "model": "scripted", "requestId": "own-6"}
    task_id = (await d.client.post(url, json=body)).json()["taskId"]
    assert (await d.client.post(f"{url}/{task_id}/coder", json={})).status_code == 200

    def settled() -> str | None:
        row = tasks.get(d.store, tenant, task_id)
        return row.session_id if row.state == "succeeded" else None

    session_id = await d.wait_until(settled, "the task's settlement", timeout=90)
    with d.store.session() as db:
        attempts = db.exec(
            select(LlmCallAttempt).where(col(LlmCallAttempt.owner_id) == session_id)
        ).all()
    assert attempts and {a.requested_model for a in attempts} == {"scripted"}
