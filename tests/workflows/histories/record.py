"""Record the histories that `tests/workflows/test_replay.py` replays: a few representative runs.

    .venv/bin/python -m tests.workflows.histories.record [name ...]

With names (`session`, `session-device-flow-pause`, `session-auto-shell`, `session-mcp`, `turn`,
`turn-model`, `device-flow`, `standing-agent`, `windows-lease`), only those are recorded.

Keep the histories of earlier code (rename them, e.g. `turn-before-decision-signal.json`)
when recording new ones: workflows started then may still be running, and their
histories must keep replaying (`workflow.patched` versions a change that breaks them).
Each run goes through the real API and worker, in process, on a throwaway Temporal dev
server; the histories are written next to this file as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from runtime.agent_tools.contracts import turn_workflow_id
from runtime.device_flow.contracts import device_flow_workflow_id
from runtime.investigation.demo import ensure_demo
from runtime.sessions.contracts import session_workflow_id
from runtime.settings import Settings
from runtime.standing_agents.contracts import EventKind
from runtime.standing_agents.models import AgentInstance
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.temporal import ensure_search_attributes, temporal_cli_path
from runtime.windows.lease_contracts import lease_workflow_id
from tests.agent_tools_helpers import DEMO_PROMPT, Browser
from tests.fakes.device_idp import FakeIdP
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.windows_pool import FakeWindowsPool
from tests.mcp_helpers import FaultServer, fault_server
from tests.session_helpers import Daemon, write_prompt
from tests.workflows import standing_agent_support as sa
from worker import build_worker

HERE = Path(__file__).parent


async def _session_run(daemon: Daemon) -> str:
    """Prompts through the FIFO: a write behind a permission (approved), a queued prompt,
    an edit refused, a model switch, a persisted approval mode, a prompt without the
    disabled write_file, a recap, then the session closed."""
    sid = (await daemon.create())["sessionId"]
    first = (await daemon.prompt(sid, write_prompt(daemon.workspace, "a.txt"))).json()
    second = (await daemon.prompt(sid, "queued behind the first")).json()
    events = await daemon.wait_for(sid, "permission_request", prompt_id=first["promptId"])
    rid = [e for e in events if e["type"] == "permission_request"][-1]["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    assert (await daemon.client.post(f"/permission/{rid}", json=vote)).status_code == 200
    await daemon.wait_for(sid, "turn_complete", prompt_id=second["promptId"])
    args = {"file_path": str(daemon.workspace / "a.txt"), "old_string": "hi", "new_string": "ho"}
    third = (await daemon.prompt(sid, f"/call edit {json.dumps(args)}")).json()
    events = await daemon.wait_for(sid, "permission_request", prompt_id=third["promptId"])
    rid = [e for e in events if e["type"] == "permission_request"][-1]["data"]["requestId"]
    cancel = {"outcome": {"outcome": "cancelled"}}
    assert (await daemon.client.post(f"/permission/{rid}", json=cancel)).status_code == 200
    await daemon.wait_for(sid, "turn_complete", prompt_id=third["promptId"])
    switched = await daemon.client.post(f"/session/{sid}/model", json={"modelId": "scripted"})
    assert switched.status_code == 200, switched.text
    # Workspace status: a persisted approval mode, a disabled tool at the next prompt, a recap.
    mode = {"mode": "auto-edit", "persist": True}
    assert (await daemon.client.post(f"/session/{sid}/approval-mode", json=mode)).is_success
    off = await daemon.client.post("/workspace/tools/write_file/enable", json={"enabled": False})
    assert off.status_code == 200, off.text
    fourth = (await daemon.prompt(sid, write_prompt(daemon.workspace, "b.txt"))).json()
    await daemon.wait_for(sid, "turn_complete", prompt_id=fourth["promptId"])
    recap = await daemon.client.post(f"/session/{sid}/recap")
    assert recap.status_code == 200, recap.text
    assert (await daemon.client.delete(f"/session/{sid}")).status_code == 204
    return session_workflow_id(sid)


async def _turn_run(browser: Browser, instance: str) -> str:
    """A deterministic turn: to its authorization, approved, resumed, completed."""
    turn = await browser.start_turn(DEMO_PROMPT)
    events = await browser.wait_for_event(turn["turn_id"], "agent.authorization.required")
    required = [e for e in events if e["type"] == "agent.authorization.required"]
    research_id = required[-1]["payload"]["research_id"]
    assert (await browser.decide(research_id, "approve")).status_code == 200
    resumed = await browser.resume(turn["turn_id"])
    assert resumed.status_code in (200, 409), resumed.text
    await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    return turn_workflow_id(instance, "demo", turn["turn_id"])


async def _model_turn_run(browser: Browser, instance: str) -> str:
    """A model turn (the worker's scripted model through the Turn:Model chain): a search,
    then the answer."""
    prompt = '/call investigation.search {"query": "Kestrel Holdings", "limit": 3}\n/say Found.'
    turn = await browser.start_turn(prompt, agent="model")
    await browser.wait_for_event(turn["turn_id"], "agent.turn.completed")
    return turn_workflow_id(instance, "demo", turn["turn_id"])


async def _device_flow_run(
    http: httpx.AsyncClient, idp: FakeIdP, workspace: str
) -> tuple[str, str]:
    """A device flow: a slow_down, the approval, then a new POST that ends the first run's
    grace early (released) and a DELETE of the second."""
    idp.slow_downs = 1
    flow = "/workspace/auth/device-flow"
    first = (await http.post(flow, json={"providerId": "idp"})).json()["deviceFlowId"]
    idp.approve(idp.latest().user_code)
    deadline = time.monotonic() + 60
    while (await http.get(f"{flow}/{first}")).json()["status"] != "authorized":
        assert time.monotonic() < deadline, "the device flow was not authorized"
        await asyncio.sleep(0.2)
    second = (await http.post(flow, json={"providerId": "idp"})).json()["deviceFlowId"]
    assert (await http.delete(f"{flow}/{second}")).status_code == 204
    return device_flow_workflow_id(workspace, "idp"), first


async def _session_device_flow_pause_run(daemon: Daemon, idp: FakeIdP) -> str:
    """A session prompt on a provider whose credential is the device flow of `idp-llm`:
    it pauses on the flow, the user approves, the prompt completes; then the session is
    closed (and Session:Default detached again)."""
    http = daemon.client
    with FakeOpenAI() as model:
        model.queue_text("answered after the device flow")
        provider = {
            "baseUrl": model.base_url,
            "credentials": [{"alias": "device", "deviceFlow": "idp-llm"}],
        }
        assert (await http.put("/api/v1/llm/providers/oauth", json=provider)).status_code == 200
        preset = {"model": "m-device", "provider": "oauth"}
        assert (await http.put("/api/v1/llm/presets/device", json=preset)).status_code == 200
        bind = "/api/v1/llm/sites/Session:Default/preset"
        assert (await http.put(bind, json={"presetId": "device"})).status_code == 200
        sid = (await daemon.create())["sessionId"]
        prompt = (await daemon.prompt(sid, "hello")).json()["promptId"]
        await daemon.wait_for(sid, "auth_device_flow_started")
        idp.approve(idp.latest().user_code)
        await daemon.wait_for(sid, "turn_complete", prompt_id=prompt)
        assert (await http.delete(bind)).status_code in (200, 204)
    assert (await http.delete(f"/session/{sid}")).status_code in (200, 204)
    return session_workflow_id(sid)


async def _session_auto_shell_run(daemon: Daemon) -> str:
    """`auto` mode with the shell on: a command that writes (`touch`), then one that reads
    a file by its absolute path inside the workspace; each runs, asked and approved where
    the mode's shell rule asks (the rule changed with the allow-list: the histories of
    both rules must replay)."""
    sid = (await daemon.create())["sessionId"]
    mode = {"mode": "auto"}
    assert (await daemon.client.post(f"/session/{sid}/approval-mode", json=mode)).is_success
    made = daemon.workspace / "made.txt"
    for command in ("touch made.txt", f"cat {made}"):
        call = json.dumps({"command": command})
        prompt = (await daemon.prompt(sid, f"/call run_shell_command {call}\n/say ran")).json()
        pid = prompt["promptId"]
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, f"{command}: neither asked nor done"
            mine = [e for e in daemon.events(sid) if e.get("promptId") == pid]
            if any(e["type"] == "turn_complete" for e in mine):
                break
            asked = [e for e in mine if e["type"] == "permission_request"]
            if asked:
                rid = asked[-1]["data"]["requestId"]
                vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
                answer = await daemon.client.post(f"/permission/{rid}", json=vote)
                assert answer.status_code == 200, answer.text
                await daemon.wait_for(sid, "turn_complete", prompt_id=pid)
                break
            await asyncio.sleep(0.05)
    assert (await daemon.client.delete(f"/session/{sid}")).status_code == 204
    return session_workflow_id(sid)


async def _session_mcp_run(daemon: Daemon, faults: FaultServer) -> str:
    """MCP tools in a session: an operator's trusted server; a read-only call that runs
    unasked (a local activity), then one with an effect, asked and approved (a regular
    activity under its operation id); then the session closed."""
    entry = {"httpUrl": faults.url, "trust": True}
    put = await daemon.client.put("/workspace/mcp/servers/faults", json=entry)
    assert put.status_code == 200, put.text
    sid = (await daemon.create())["sessionId"]
    read = (await daemon.prompt(sid, "/call mcp__faults__count {}")).json()
    await daemon.wait_for(sid, "turn_complete", prompt_id=read["promptId"])
    effect = (await daemon.prompt(sid, '/call mcp__faults__record {"value": "r"}')).json()
    events = await daemon.wait_for(sid, "permission_request", prompt_id=effect["promptId"])
    rid = [e for e in events if e["type"] == "permission_request"][-1]["data"]["requestId"]
    vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    assert (await daemon.client.post(f"/permission/{rid}", json=vote)).status_code == 200
    await daemon.wait_for(sid, "turn_complete", prompt_id=effect["promptId"])
    assert [c["value"] for c in faults.calls()] == ["r"]
    assert (await daemon.client.delete(f"/session/{sid}")).status_code == 204
    assert (await daemon.client.delete("/workspace/mcp/servers/faults")).status_code == 200
    return session_workflow_id(sid)


async def _standing_agent_run(client: Client, store: Store, task_queue: str) -> tuple[str, str]:
    """An agent's first run: greeted, chatted, escalated, blocked by the rail, then after
    `max_ticks_per_run` ticks continued as new (the recorded run is the first)."""
    agent = sa.create_instance(store, datetime.now(UTC))
    handle = await sa.start(client, agent, task_queue, max_ticks_per_run=4)
    first_run = (await handle.describe()).run_id
    await sa.wait_turns(store, agent, 1)
    script = "\n".join(
        [
            '/call agent_query_memory {"limit": 3}',
            '/call soa_propose_decision {"title": "Ship?", "body": "Ready."}',
            '/call compliance_dossier_record {"title": "t", "content": "c"}',
        ]
    )
    for count, text in ((2, "hello"), (3, script), (4, '/call phase_blocked {"reason": "x"}')):
        await sa.send(
            store, handle, agent, EventKind.OPERATOR_MESSAGE, {"text": text}, datetime.now(UTC)
        )
        await sa.wait_turns(store, agent, count)
    await _finished(client, handle.id, first_run)
    # Deleting the instance ends the next run too.
    with store.session() as db:
        row = db.get(AgentInstance, agent)
        db.delete(row)
        db.commit()
    await client.get_workflow_handle(handle.id).signal("wake")
    return handle.id, first_run


async def _windows_lease_run(http: httpx.AsyncClient) -> str:
    """A Windows lease: leased by a launch, a snapshot, a verb the pool refuses
    (WINDOW_NOT_FOUND), then released (the workflow ends)."""
    tenant = "/api/v1/tenants/acme"
    enabled = await http.put(f"{tenant}/features/windows-pool", json={"enabled": True})
    assert enabled.status_code == 200, enabled.text
    verbs = f"{tenant}/windows/coder"
    launched = await http.post(f"{verbs}/windows_launch", json={"program": "notepad.exe"})
    assert launched.status_code == 200, launched.text
    hwnd = launched.json()["result"]["hwnd"]
    assert (await http.post(f"{verbs}/windows_snapshot", json={"hwnd": hwnd})).is_success
    assert (await http.post(f"{verbs}/windows_focus", json={"hwnd": 1})).status_code == 404
    released = await http.post(f"{verbs}/windows_release", json={})
    assert released.json()["result"]["released"] is True, released.text
    return lease_workflow_id("acme", "coder")


async def _finished(client: Client, workflow_id: str, run_id: str | None = None) -> None:
    deadline = time.monotonic() + 60
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    while time.monotonic() < deadline:
        description = await handle.describe()
        if description.close_time is not None:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{workflow_id} did not finish")


async def record(names: list[str] | None = None) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli_path()),
        data_converter=pydantic_data_converter,
        ui=False,
        dev_server_log_level="error",
    )
    await ensure_search_attributes(env.client)
    async with env:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            workspace = root / "ws"
            workspace.mkdir()
            idp = FakeIdP(interval=1).__enter__()
            pool = FakeWindowsPool(token="record-pool").__enter__()
            settings = Settings(
                workspace=workspace,
                data_dir=root / ".data",
                port=4170,
                task_queue="record",
                token="record",  # the strict mutation routes (approval mode, tool toggle)
                session_shell=True,  # session-auto-shell runs a command
                device_flow_providers=json.dumps(
                    {"idp": idp.provider_config(), "idp-llm": idp.provider_config()}
                ),
                windows_pool_url=pool.base_url,
                windows_pool_token="record-pool",
            )
            store = Store(settings.resolved_database_url)
            upgrade_to_head(store.engine)
            with store.transaction() as db:
                ensure_demo(db, "demo")
            app = create_app(settings, temporal_client=env.client)
            async with (
                build_worker(env.client, settings, store),
                app.router.lifespan_context(app),
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app),
                    base_url="http://127.0.0.1:4170",
                    headers={"Authorization": "Bearer record"},
                ) as http,
            ):
                http.headers["Authorization"] = "Bearer record"
                daemon = Daemon(http, workspace.resolve(), EventJournal(store))
                every = (
                    "session",
                    "session-device-flow-pause",
                    "session-auto-shell",
                    "session-mcp",
                    "turn",
                    "turn-model",
                    "device-flow",
                    "standing-agent",
                    "windows-lease",
                )
                wanted = set(names or every)
                runs: dict[str, tuple[str, str | None]] = {}
                if "session" in wanted:
                    runs["session"] = (await _session_run(daemon), None)
                if "session-device-flow-pause" in wanted:
                    paused = await _session_device_flow_pause_run(daemon, idp)
                    runs["session-device-flow-pause"] = (paused, None)
                if "session-auto-shell" in wanted:
                    runs["session-auto-shell"] = (await _session_auto_shell_run(daemon), None)
                if "session-mcp" in wanted:
                    with fault_server(root) as faults:
                        runs["session-mcp"] = (await _session_mcp_run(daemon, faults), None)
                if "turn" in wanted:
                    browser = await Browser(http).open()
                    runs["turn"] = (await _turn_run(browser, settings.instance), None)
                if "turn-model" in wanted:
                    browser = await Browser(http).open()
                    model_turn = await _model_turn_run(browser, settings.instance)
                    runs["turn-model"] = (model_turn, None)
                if "device-flow" in wanted:
                    # The first run (deviceFlowId is the run id): approved, then released.
                    runs["device-flow"] = await _device_flow_run(http, idp, settings.workspace_cwd)
                if "standing-agent" in wanted:
                    runs["standing-agent"] = await _standing_agent_run(
                        env.client, store, settings.task_queue
                    )
                if "windows-lease" in wanted:
                    runs["windows-lease"] = (await _windows_lease_run(http), None)
                for name, (workflow_id, run_id) in runs.items():
                    handle = env.client.get_workflow_handle(workflow_id, run_id=run_id)
                    await _finished(env.client, workflow_id, run_id)
                    history = await handle.fetch_history()
                    document: dict[str, Any] = json.loads(history.to_json())
                    path = HERE / f"{name}.json"
                    path.write_text(json.dumps({"workflowId": workflow_id, **document}) + "\n")
                    print(f"{path.name}: {len(document['events'])} events of {workflow_id}")
            store.dispose()
            idp.__exit__(None, None, None)
            pool.__exit__(None, None, None)


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:]))
