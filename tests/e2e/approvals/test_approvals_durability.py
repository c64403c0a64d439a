"""Approvals and their webhooks across `kill -9` (issue 22).

- An approval's expiry falls due while no worker runs: the next worker applies it at once,
  once, and its `approval.resolved` reaches the receiver; what was owed while the worker
  was dead is delivered after.
- A restart of everything (`agentrt up` killed -9 with its Temporal server, API and
  worker) while deliveries are owed to a receiver that is down: every event reaches it
  afterwards, once (by `webhook-id`), in order per subject.

The receiver verifies each delivery's Standard Webhooks signature with the scheme's own
library (tests/fakes/webhook_receiver.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import httpx
from temporalio.testing import WorkflowEnvironment

from runtime.approvals import ledger
from runtime.approvals.ledger import ApprovalKind
from runtime.approvals.models import Approval
from runtime.settings import Settings
from runtime.standing_agents.coder_decisions import coder_decision
from runtime.standing_agents.models import AttentionRequest
from runtime.store import Store
from runtime.timestamps import aware_utc
from tests.conftest import ApiFactory
from tests.e2e.agent_tools.test_agent_tools_durability import _wait_children_gone
from tests.fakes.device_idp import FakeIdP
from tests.fakes.webhook_receiver import Receiver, webhook_receiver
from tests.worker_processes import WorkerProcesses, kill9

TOKEN = "approvals-durability"
ENDPOINTS = "/api/v1/notification-endpoints"
APPROVAL_EVENTS = ["approval.requested", "approval.expiring", "approval.resolved"]
T = TypeVar("T")
# Timed so that the warning comes well before the expiry, and the kill between them.
TIMEOUT_MS = 12_000
LEAD_MS = 8_000
# Retries quick enough for a test (a receiver that was down is tried again soon).
QUICK_RETRIES = {
    "AGENTRT_NOTIFICATION_RETRY_BASE_MS": "100",
    "AGENTRT_NOTIFICATION_RETRY_CAP_MS": "1000",
}


async def _until(probe: Callable[[], T | None], what: str, timeout: float = 90) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"never saw {what}")


async def _register(client: httpx.AsyncClient, receiver: Receiver, types: list[str]) -> None:
    response = await client.post(ENDPOINTS, json={"url": receiver.url, "eventTypes": types})
    assert response.status_code == 201, response.text
    receiver.secret = response.json()["secret"]


def _approval(store: Store, approval_id: str) -> Approval | None:
    with store.engine.connect() as connection:
        return ledger.get_approval(connection, approval_id)


def _question(store: Store, tenant: str, op_id: str) -> str:
    row = coder_decision(
        store,
        tenant=tenant,
        title=f"Question {op_id}",
        body="main or release?",
        options=["main", "release"],
        asked_by="alice",
        task_id=None,
        op_id=op_id,
    )
    return ledger.approval_id(ApprovalKind.CODER_QUESTION, row.decision_id)


def _trail(receiver: Receiver, approval_id: str) -> list[tuple[str, str]]:
    return [
        (e["type"], e["data"]["state"])
        for e in receiver.received
        if e["data"].get("approvalId") == approval_id
    ]


async def test_an_expiry_due_while_the_worker_is_dead_is_applied_once_after(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    data_dir, workspace = tmp_path / ".data", tmp_path / "ws"
    workspace.mkdir()
    timeouts = {
        "AGENTRT_DECISION_TIMEOUT_MS": str(TIMEOUT_MS),
        "AGENTRT_APPROVAL_EXPIRING_LEAD_MS": str(LEAD_MS),
        **QUICK_RETRIES,
    }
    workers = WorkerProcesses(dev_env, task_queue, data_dir, workspace, **timeouts)
    client = await api(
        data_dir=data_dir,
        task_queue=task_queue,
        workspace=workspace,
        token=TOKEN,
        decision_timeout_ms=TIMEOUT_MS,
        approval_expiring_lead_ms=LEAD_MS,
    )
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    store = Store(Settings(data_dir=data_dir).resolved_database_url)
    try:
        async with webhook_receiver() as receiver:
            await _register(client, receiver, APPROVAL_EVENTS)
            worker = await workers.start()
            first = _question(store, "acme", "first")
            await _until(lambda: receiver.events("approval.expiring"), "the warning")
            row = _approval(store, first)
            assert row is not None and row.expires_at is not None
            expires = aware_utc(row.expires_at)
            kill9(worker)
            assert datetime.now(UTC) < expires, "the worker died after the expiry"
            assert _trail(receiver, first) == [
                ("approval.requested", "pending"),
                ("approval.expiring", "pending"),
            ]
            # Owed while no worker runs: delivered by the next one.
            second = _question(store, "acme", "second")
            while datetime.now(UTC) < expires:  # noqa: ASYNC110 (the condition is the clock)
                await asyncio.sleep(0.1)
            assert _approval(store, first).state == "pending"  # type: ignore[union-attr]
            await workers.start()
            await _until(lambda: receiver.events("approval.resolved"), "the expiry's webhook")
            await _until(lambda: _trail(receiver, second), "the request owed while down")
        ended = _approval(store, first)
        assert ended is not None
        assert (ended.state, ended.answered_by, ended.end_reason) == (
            "expired",
            "agentrt",
            f"no answer within {TIMEOUT_MS} ms",
        )
        assert _trail(receiver, first) == [
            ("approval.requested", "pending"),
            ("approval.expiring", "pending"),
            ("approval.resolved", "expired"),
        ]
        assert _trail(receiver, second)[0] == ("approval.requested", "pending")
        assert receiver.rejected == 0
        with store.session() as db:
            decision = db.get(AttentionRequest, first.split(":", 1)[1])
            assert decision is not None and decision.resolution == "expired"
    finally:
        workers.close()
        store.dispose()


# `agentrt up` is started twice, killed -9 in between (about 15 s).
async def test_webhooks_owed_across_kill_9_of_everything_all_arrive_in_order(
    tmp_path: Path,
) -> None:
    from tests.e2e.test_up_e2e import agentrt_up

    workspace = tmp_path / "ws"
    workspace.mkdir()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with FakeIdP(interval=5) as idp:
        env = {
            "AGENTRT_WORKSPACE": str(workspace),
            "AGENTRT_TOKEN": TOKEN,
            "AGENTRT_DEVICE_FLOW_PROVIDERS": json.dumps(
                {"idp-a": idp.provider_config(), "idp-b": idp.provider_config()}
            ),
            **QUICK_RETRIES,
        }
        async with webhook_receiver() as receiver:
            receiver.failing = -1  # down until agentrt is dead
            with agentrt_up(tmp_path, env) as up:
                await asyncio.to_thread(up.wait_healthy)
                async with httpx.AsyncClient(
                    base_url=up.api_url, headers=headers, timeout=60
                ) as client:
                    await _register(
                        client, receiver, ["approval.requested", "device_flow.login_required"]
                    )
                    flows = []
                    for provider in ("idp-a", "idp-b"):
                        started = await client.post(
                            "/workspace/auth/device-flow", json={"providerId": provider}
                        )
                        assert started.status_code == 201, started.text
                        flows.append(started.json()["deviceFlowId"])
                    # Both flows' events are owed, and tried against the receiver that is down.
                    await _until(lambda: receiver.requests >= 2, "a delivery tried")
                    os.kill(up.process.pid, signal.SIGKILL)
                    up.process.wait()
            await asyncio.to_thread(_wait_children_gone, up)
            receiver.failing = 0
            assert receiver.received == []
            with agentrt_up(tmp_path, env) as up:
                await asyncio.to_thread(up.wait_healthy)
                await _until(lambda: len(receiver.received) >= 4, "every event", 120)
                got = list(receiver.received)
    assert receiver.rejected == 0
    for flow_id in flows:
        approval = f"device_login:{flow_id}"
        trail = [e["type"] for e in got if e["data"].get("approvalId") == approval]
        # Once each (deduplicated by webhook-id), in the order they were owed.
        assert trail == ["approval.requested", "device_flow.login_required"], (flow_id, got)
    assert len(got) == 4
