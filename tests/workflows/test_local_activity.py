"""A local activity's last timeout is an `ActivityError` when the workflow runs and when it
replays (workflows/activity_calls.py).

Temporal's SDK (1.35) hands the workflow a local activity's final timeout wrapped in an
`ActivityError` while it runs, but unwrapped (a bare `TimeoutError`) when it replays the
activity's marker. Workflow code that handles `ActivityError` then takes another path on
replay: a nondeterminism error, or a workflow failed, after any worker restart. These
tests show the SDK's behaviour and that `call_local_activity` gives both runs one path.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity, workflow
from temporalio.client import WorkflowHistory
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    from runtime.activity_contract import ActivityContract
    from workflows.activity_calls import call_local_activity

SLOW_READ: ActivityContract[None, str] = ActivityContract("slow-read", None, str)


@activity.defn(name="slow-read")
async def slow_read() -> str:
    await asyncio.sleep(5)
    return "late"


async def _after_failure() -> str:
    # A command after the handled failure: replay must reach it by the same path.
    await workflow.sleep(timedelta(seconds=1))
    return "handled"


@workflow.defn(name="RawLocalTimeout")
class RawLocalTimeout:
    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.execute_local_activity(
                "slow-read",
                result_type=str,
                start_to_close_timeout=timedelta(milliseconds=200),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError:
            return await _after_failure()
        return "read"


@workflow.defn(name="WrappedLocalTimeout")
class WrappedLocalTimeout:
    @workflow.run
    async def run(self) -> str:
        try:
            await call_local_activity(
                SLOW_READ,
                None,
                start_to_close_timeout=timedelta(milliseconds=200),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError:
            return await _after_failure()
        return "read"


async def _run_and_fetch(env: WorkflowEnvironment, workflow_name: str) -> WorkflowHistory:
    task_queue = f"la-{uuid.uuid4()}"
    async with Worker(
        env.client,
        task_queue=task_queue,
        workflows=[RawLocalTimeout, WrappedLocalTimeout],
        activities=[slow_read],
    ):
        handle = await env.client.start_workflow(
            workflow_name, id=f"la-{uuid.uuid4()}", task_queue=task_queue
        )
        assert await handle.result() == "handled"
        return await handle.fetch_history()


async def test_the_sdk_replays_a_local_timeout_unwrapped(dev_env: WorkflowEnvironment) -> None:
    # Why call_local_activity exists: if this starts passing, the SDK is fixed and the wrapper
    # is a no-op that can go.
    history = await _run_and_fetch(dev_env, "RawLocalTimeout")
    replayer = Replayer(workflows=[RawLocalTimeout])
    with pytest.raises(workflow.NondeterminismError):
        await replayer.replay_workflow(history)


async def test_a_wrapped_local_timeout_replays_as_it_ran(dev_env: WorkflowEnvironment) -> None:
    history = await _run_and_fetch(dev_env, "WrappedLocalTimeout")
    await Replayer(workflows=[WrappedLocalTimeout]).replay_workflow(history)


def test_workflows_call_activities_through_their_contracts() -> None:
    """Every activity and local activity of workflows/ is called through
    workflows/activity_calls.py: by its contract (typed argument and result, no hand-passed
    `result_type`), a local activity's last timeout the same live and on replay."""
    root = Path(__file__).resolve().parents[2] / "workflows"
    direct = [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*.py"))
        if path.name != "activity_calls.py"
        and any(
            f"workflow.{name}" in path.read_text()
            for name in ("execute_activity", "execute_local_activity", "start_activity")
        )
    ]
    assert direct == []
    assert len(list(root.rglob("*.py"))) > 20
