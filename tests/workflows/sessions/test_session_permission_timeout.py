"""The permission timeout is a Temporal timer: on the time-skipping server, and across a
worker that was down when it fell due."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from activities.llm import ScriptedModel
from runtime.approvals.ledger import get_approval
from runtime.approvals.projection import permission_approval
from runtime.sessions.contracts import PromptItem, SessionInput, SubmitPrompt, session_workflow_id
from runtime.sessions.prompts import preview, save_prompt
from runtime.sessions.streams import envelope
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.streams import session_stream
from tests.history_helpers import wait_for_pending_timers_to_fire
from tests.session_helpers import write_prompt
from worker import build_worker
from workflows.sessions.session import SessionWorkflow


def _store(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    upgrade_to_head(store.engine)
    return store


async def _wait(
    journal: EventJournal, sid: str, event_type: str, timeout: float = 60
) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = [envelope(e) for e in journal.read(session_stream(sid)).entries]
        if any(e["type"] == event_type for e in events):
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"{event_type} never arrived")


async def _start_prompt(
    client: Client, store: Store, task_queue: str, workspace: Path, timeout_ms: int
) -> str:
    sid = str(uuid.uuid4())
    handle = await client.start_workflow(
        SessionWorkflow.run,
        SessionInput(
            session_id=sid, workspace_cwd=str(workspace), permission_timeout_ms=timeout_ms
        ),
        id=session_workflow_id(sid),
        task_queue=task_queue,
    )
    text = write_prompt(workspace, "t.txt")
    item = PromptItem(prompt_id=str(uuid.uuid4()), preview=preview(text))
    save_prompt(store, sid, item.prompt_id, text)
    await handle.execute_update(SessionWorkflow.submit_prompt, SubmitPrompt(item=item))
    return sid


async def _finish(client: Client, sid: str) -> None:
    """Cancel the session and wait until the worker has processed it: a workflow task left
    pending on a queue nobody polls would stop the time-skipping server from skipping."""
    handle = client.get_workflow_handle(session_workflow_id(sid))
    await handle.cancel()
    with contextlib.suppress(WorkflowFailureError):
        await handle.result()


def _check_timed_out(events: list[dict[str, object]], store: Store) -> None:
    types = [e["type"] for e in events]
    assert "permission_audit" in types
    audit = next(e for e in events if e["type"] == "permission_audit")
    assert audit["data"]["event"] == "permission.timeout"  # type: ignore[index]
    resolved = next(e for e in events if e["type"] == "permission_resolved")
    assert resolved["data"]["outcome"] == {"outcome": "cancelled"}  # type: ignore[index]
    assert types.index("permission_audit") < types.index("permission_resolved")
    # Its approval expired (issue 22), whatever worker was up when the timer fired.
    request_id = str(resolved["data"]["requestId"])  # type: ignore[index]
    with store.engine.connect() as connection:
        approval = get_approval(connection, permission_approval(request_id))
    assert approval is not None
    timeout_ms = audit["data"]["timeoutMs"]  # type: ignore[index]
    assert (approval.state, approval.end_reason) == ("expired", f"no answer within {timeout_ms} ms")


async def test_five_minute_timeout_on_the_time_skipping_server(
    time_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    store = _store(tmp_path)
    journal = EventJournal(store)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(task_queue=task_queue, data_dir=tmp_path)
    async with build_worker(time_env.client, settings, store, ScriptedModel()):
        sid = await _start_prompt(time_env.client, store, task_queue, workspace, 300_000)
        await _wait(journal, sid, "permission_request")
        await time_env.sleep(timedelta(minutes=4))
        events = [envelope(e) for e in journal.read(session_stream(sid)).entries]
        assert "permission_resolved" not in [e["type"] for e in events]
        await time_env.sleep(timedelta(minutes=1, seconds=5))
        events = await _wait(journal, sid, "turn_complete")
        await _finish(time_env.client, sid)
    _check_timed_out(events, store)
    assert not (workspace / "t.txt").exists()
    store.dispose()


async def test_timeout_fires_across_a_worker_restart(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    store = _store(tmp_path)
    journal = EventJournal(store)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(task_queue=task_queue, data_dir=tmp_path)
    async with build_worker(dev_env.client, settings, store, ScriptedModel()):
        sid = await _start_prompt(dev_env.client, store, task_queue, workspace, 1500)
        await _wait(journal, sid, "permission_request")
    # No worker while the timer falls due: the server records it fired.
    handle = dev_env.client.get_workflow_handle(session_workflow_id(sid))
    await wait_for_pending_timers_to_fire(handle)
    types = [e.type for e in journal.read(session_stream(sid)).entries]
    assert "permission_resolved" not in types
    async with build_worker(dev_env.client, settings, store, ScriptedModel()):
        events = await _wait(journal, sid, "turn_complete")
        await _finish(dev_env.client, sid)
    _check_timed_out(events, store)
    store.dispose()
