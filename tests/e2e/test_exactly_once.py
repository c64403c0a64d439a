"""An approved edit is applied exactly once, whatever happens to the worker around the vote.

The reproductions of issue 7 (defect 1): `kill -STOP` the worker across the vote, or
`kill -9` it just after. Before the fix the edit ran as a local activity and ran
again when the workflow task was replayed: the file read `MARK++`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
from pathlib import Path

from tests.e2e.sessions.test_session_durability import WorkerFactory, split  # noqa: F401
from tests.session_helpers import Daemon

VOTE = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}


def _edit_prompt(workspace: Path) -> str:
    args = {"file_path": str(workspace / "f"), "old_string": "MARK", "new_string": "MARK+"}
    return f"/call edit {json.dumps(args)}\n/say edited"


async def _park_at_vote(d: Daemon) -> tuple[str, str, str]:
    (d.workspace / "f").write_text("MARK\n")
    sid = (await d.create())["sessionId"]
    response = await d.prompt(sid, _edit_prompt(d.workspace))
    assert response.status_code == 202, response.text
    prompt_id = response.json()["promptId"]
    events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
    return sid, prompt_id, events[-1]["data"]["requestId"]


async def _check_once(d: Daemon, sid: str, prompt_id: str) -> None:
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=120)
    assert (d.workspace / "f").read_text() == "MARK+\n"
    updates = [
        e
        for e in events
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "tool_call_update"
    ]
    assert len(updates) == 1 and updates[0]["data"]["update"]["status"] == "completed", updates
    ids = [e["id"] for e in events]
    assert ids == list(range(1, len(ids) + 1))


def _signal(process: subprocess.Popen[bytes], signum: int) -> None:
    os.kill(process.pid, signum)


async def test_vote_while_the_worker_is_stopped(
    split: tuple[Daemon, WorkerFactory],  # noqa: F811
) -> None:
    d, start_worker = split
    worker = await start_worker()
    sid, prompt_id, rid = await _park_at_vote(d)
    _signal(worker, signal.SIGSTOP)
    try:
        vote = asyncio.create_task(d.client.post(f"/permission/{rid}", json=VOTE))
        await asyncio.sleep(4)
    finally:
        _signal(worker, signal.SIGCONT)
    response = await vote
    assert response.status_code == 200, response.text
    await _check_once(d, sid, prompt_id)


async def test_worker_stopped_just_after_the_vote(
    split: tuple[Daemon, WorkerFactory],  # noqa: F811
) -> None:
    """Stalled past the workflow task timeout (10 s), so its task is retried elsewhere."""
    d, start_worker = split
    worker = await start_worker()
    sid, prompt_id, rid = await _park_at_vote(d)
    response = await d.client.post(f"/permission/{rid}", json=VOTE)
    assert response.status_code == 200, response.text
    await asyncio.sleep(random.uniform(0.0, 0.08))
    _signal(worker, signal.SIGSTOP)
    try:
        await asyncio.sleep(12)
    finally:
        _signal(worker, signal.SIGCONT)
    await _check_once(d, sid, prompt_id)


async def test_worker_killed_just_after_the_vote(
    split: tuple[Daemon, WorkerFactory],  # noqa: F811
) -> None:
    d, start_worker = split
    worker = await start_worker()
    sid, prompt_id, rid = await _park_at_vote(d)
    response = await d.client.post(f"/permission/{rid}", json=VOTE)
    assert response.status_code == 200, response.text
    await asyncio.sleep(random.uniform(0.045, 0.075))
    worker.kill()
    worker.wait()
    await start_worker()
    await _check_once(d, sid, prompt_id)
