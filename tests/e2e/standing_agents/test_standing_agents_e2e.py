"""Standing agents end to end, over HTTP, on a real `agentrt up` stack (scripted model):
enable a tenant, chat, answer a decision, change a mode; then a full restart (API,
worker and Temporal) keeps every agent, its next heartbeat and its open decisions, and
a schedule fires across it (the firing due while everything was down is caught up)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.test_up_e2e import LOOPBACK, _stop, agentrt_up

TOKEN = "e2e-agents-token"
TENANT = "acme"


class Api:
    def __init__(self, url: str) -> None:
        self.client = httpx.Client(
            base_url=f"{url}/api/v1/tenants/{TENANT}",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=60,
        )

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: Any = None, status: int = 200) -> Any:
        response = self.client.post(path, json=body)
        assert response.status_code == status, response.text
        return response.json()


def _until(check: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"{what} never happened")


def _wait_worker_live(url: str) -> None:
    def polling() -> bool:
        status = LOOPBACK.get(
            f"{url}/daemon/status?detail=full",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=10,
        ).json()
        return bool(status["temporal"]["workerPolling"])

    _until(polling, "the worker polling")


def _agent_messages(api: Api, soa: str) -> list[str]:
    messages = api.get(f"/agents/{soa}/messages")["messages"]
    return [m["text"] for m in messages if m["direction"] == "agent"]


def _turn_kinds(api: Api, soa: str) -> list[str]:
    return [t["eventKind"] for t in api.get(f"/agents/{soa}/ledger", limit=1000)["turns"]]


def _scheduled_turns(api: Api, instance_id: str) -> list[datetime]:
    """The scheduled times of the agent's ticks from a schedule (event ids
    `schedule/{scheduleId}/{scheduledTime}/{firingId}`)."""
    turns = api.get(f"/agents/{instance_id}/ledger", limit=1000)["turns"]
    return [
        datetime.fromisoformat(t["eventId"].split("/")[2])
        for t in turns
        if t["eventId"].startswith("schedule/")
    ]


def _call(tool: str, arguments: dict[str, Any]) -> str:
    return f"/call {tool} {json.dumps(arguments)}"


def test_enable_chat_decide_change_mode_and_restart(tmp_path: Path) -> None:
    # A schedule every 10 s (below, across the restart): the deployment allows it.
    env = {"QWEN_SERVER_TOKEN": TOKEN, "AGENTRT_AGENT_SCHEDULE_MIN_INTERVAL_S": "5"}
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        api = Api(up.api_url)
        # Enable the tenant: its SOA is bootstrapped, Active, and greets.
        enabled = api.client.put("/features/standing-agents", json={"enabled": True})
        assert enabled.status_code == 200, enabled.text
        soa = enabled.json()["soaInstanceId"]
        assert [a["instanceId"] for a in api.get("/agents")["agents"]] == [soa]
        _until(lambda: _agent_messages(api, soa), "the greeting")

        # Chat: the scripted model answers.
        api.post(f"/agents/{soa}/messages", {"text": "How are things?"}, status=202)
        _until(
            lambda: any("How are things?" in text for text in _agent_messages(api, soa)),
            "the answer",
        )

        # The agent raises a decision; the operator approves it; the agent resumes once.
        ask = _call("soa_propose_decision", {"title": "Deploy?", "body": "Ship v2 today?"})
        api.post(f"/agents/{soa}/messages", {"text": ask}, status=202)
        open_ = _until(lambda: api.get("/decisions", status="open")["decisions"], "the decision")
        decision = open_[0]
        assert (decision["kind"], decision["soaInstanceId"], decision["title"]) == (
            "decision",
            soa,
            "Deploy?",
        )
        answer = {"resolution": "approve", "resolutionNotes": "go", "respondedBy": "ops"}
        api.post(f"/decisions/{decision['decisionId']}/respond", answer)
        _until(lambda: "OperatorAnsweredEscalation" in _turn_kinds(api, soa), "the resume turn")

        # A mode change from the UI, and one proposed by the agent and approved.
        api.post(f"/agents/{soa}/mode", {"mode": "Incident", "actor": "ops"})
        propose = _call("soa_propose_mode_change", {"mode": "Dialogue", "reason": "chatty"})
        api.post(f"/agents/{soa}/messages", {"text": propose}, status=202)
        change = _until(
            lambda: [
                d
                for d in api.get("/decisions", status="open")["decisions"]
                if d["kind"] == "mode_change"
            ],
            "the mode-change request",
        )[0]
        api.post(f"/decisions/{change['decisionId']}/respond", {"resolution": "approve"})
        changes = api.get(f"/agents/{soa}/mode-changes")["changes"]
        assert [(c["to"], c["source"]) for c in changes] == [
            ("Incident", "ui"),
            ("Dialogue", "approval"),
        ]
        assert api.get(f"/agents/{soa}")["activeMode"] == "Dialogue"

        # Leave one decision open across the restart (Dialogue offers mode proposals).
        later = _call("soa_propose_mode_change", {"mode": "Idle", "reason": "after hours"})
        api.post(f"/agents/{soa}/messages", {"text": later}, status=202)
        pending = _until(
            lambda: api.get("/decisions", status="open")["decisions"], "the open decision"
        )
        agent = _until(
            lambda: (
                (a := api.get(f"/agents/{soa}"))["nextTickAt"] and not a["tickInProgress"] and a
            ),
            "an idle agent with its next heartbeat",
        )
        # A second agent, with a schedule every 10 s that keeps firing across the restart.
        compliance = api.post("/agents", {"agentType": "Compliance"}, status=201)["instanceId"]
        api.post(f"/agents/{compliance}/start")
        every = {"cron": "@every 10s", "overlap": "bufferOne", "catchupWindowSeconds": 600}
        schedule = api.post(f"/agents/{compliance}/schedules", every, status=201)
        before = {
            "agents": [a["instanceId"] for a in api.get("/agents")["agents"]],
            "nextTickAt": agent["nextTickAt"],
            "open": [d["decisionId"] for d in pending],
            "turns": len(_turn_kinds(api, soa)),
        }
        api.client.close()
        _stop(up)
    stopped_at = datetime.now(UTC)

    # Everything (API, worker, Temporal) starts again on the same data.
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        _wait_worker_live(up.api_url)
        api = Api(up.api_url)
        assert [a["instanceId"] for a in api.get("/agents")["agents"]] == before["agents"]
        agent = api.get(f"/agents/{soa}")
        assert agent["status"] == "Active"
        assert agent["nextTickAt"] == before["nextTickAt"]
        assert [d["decisionId"] for d in api.get("/decisions", status="open")["decisions"]] == (
            before["open"]
        )
        # The schedule survived, and its first firing due after the stop happened: caught
        # up if Temporal was still down at that time (bufferOne: it runs even when the
        # firing before it still held the slot), its tick taken by the agent.
        listed = api.get("/schedules")["schedules"]
        assert [s["scheduleId"] for s in listed] == [schedule["scheduleId"]]
        due = stopped_at.replace(microsecond=0) + timedelta(seconds=10 - stopped_at.second % 10)
        _until(lambda: due in _scheduled_turns(api, compliance), f"the firing due at {due}")
        # Still alive: it answers a new message.
        api.post(f"/agents/{soa}/messages", {"text": "Still there?"}, status=202)
        _until(
            lambda: any("Still there?" in text for text in _agent_messages(api, soa)),
            "the answer after the restart",
        )
        # The reply is written during the episode; its ledger turn when the tick completes.
        _until(lambda: len(_turn_kinds(api, soa)) > before["turns"], "the turn of that answer")
        export = api.client.get(f"/agents/{soa}/ledger/export")
        assert export.status_code == 200
        chain = tmp_path / "ledger.ndjson"
        chain.write_text(export.text)
        assert len(export.text.splitlines()) > before["turns"]
        api.client.close()
        _stop(up)
    from runtime.standing_agents.ledger_chain import verify_chain

    turns = [json.loads(line) for line in chain.read_text().splitlines() if line]
    assert verify_chain(turns).ok
