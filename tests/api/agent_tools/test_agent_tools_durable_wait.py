"""A client that read `agent.authorization.required` can always resume the turn (issue 18,
item 13), even when the worker that journaled the event dies before its workflow task is
recorded: the event is journaled only once the wait it announces is in the history.

The worker is a process stalled at the worst moment (`tests/stalling_worker.py`): inside
the journal write of that event, after the row is committed (a client can read it), before
the write returns. It is killed there (-9); a client decides and resumes at once, before
another worker is up; the next worker takes the turn with the resume already waiting.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateStage
from temporalio.testing import WorkflowEnvironment

from runtime.agent_tools.contracts import ResumeRequest, turn_workflow_id
from runtime.investigation.demo import ensure_demo
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.agent_tools_helpers import DEMO_PROMPT, Browser
from tests.conftest import ApiFactory
from tests.worker_processes import WorkerProcesses, kill9, until_polling, worker_env
from workflows.agent_tools.turn import TurnWorkflow

AUTHORIZATION = "agent.authorization.required"


def _stalling_worker(env: WorkflowEnvironment, settings: Settings) -> subprocess.Popen[str]:
    """`tests/stalling_worker.py` on the test's queue: it prints `committed` and stalls once
    it has journaled the authorization event."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stalling_worker", AUTHORIZATION],
        env=worker_env(
            env, settings.task_queue, settings.resolved_data_dir, settings.resolved_workspace
        ),
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
async def rig(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[Browser, Settings, WorkerProcesses]]:
    settings = Settings(data_dir=tmp_path / ".data", workspace=tmp_path, task_queue=task_queue)
    store = Store(settings.resolved_database_url)
    upgrade_to_head(store.engine)
    with store.transaction() as session:
        ensure_demo(session, "demo")
    store.dispose()
    workers = WorkerProcesses(dev_env, task_queue, settings.resolved_data_dir, tmp_path)
    client = await api(data_dir=settings.data_dir, task_queue=task_queue)
    yield await Browser(client).open(), settings, workers
    workers.close()


# Long by design (about 20 s): the killed worker's workflow task times out on the server
# (10 s) before the next worker redoes it.
async def test_a_resume_sent_once_the_event_is_read_survives_the_worker_that_wrote_it(
    rig: tuple[Browser, Settings, WorkerProcesses], dev_env: WorkflowEnvironment
) -> None:
    browser, settings, workers = rig
    stalling = _stalling_worker(dev_env, settings)
    try:
        await until_polling(dev_env, settings.task_queue, stalling)
        turn_id = (await browser.start_turn(DEMO_PROMPT))["turn_id"]
        assert stalling.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(stalling.stdout.readline), 120)
        assert line == "committed\n"
        kill9(stalling)  # its workflow task, which ran the write, is never recorded
    finally:
        if stalling.poll() is None:
            kill9(stalling)
    # What a client sees: the event. It decides and resumes at once; no worker is up yet.
    events = await browser.wait_for_event(turn_id, AUTHORIZATION)
    research_id = events[-1]["payload"]["research_id"]
    assert (await browser.decide(research_id, "approve")).status_code == 200
    handle = dev_env.client.get_workflow_handle(
        turn_workflow_id(settings.instance, "demo", turn_id)
    )
    resume = asyncio.create_task(
        handle.start_update(
            TurnWorkflow.resume,
            ResumeRequest(),
            id=f"resume-{uuid.uuid4()}",
            wait_for_stage=WorkflowUpdateStage.COMPLETED,
            rpc_timeout=timedelta(seconds=180),
        )
    )
    await workers.start()
    update = await resume
    result = await update.result(rpc_timeout=timedelta(seconds=180))
    assert result.status == "completed"
    kinds = [e["type"] for e in await browser.events() if e["turn_id"] == turn_id]
    assert kinds.count(AUTHORIZATION) == 1
    assert kinds[-1] == "agent.turn.completed"
