"""The pool activities called by name from a workflow (as the lease workflow calls them), on
Temporal's time-skipping server against the loopback pool: results and typed errors cross
Temporal intact, and no failure is retried behind the workflow's back."""

from __future__ import annotations

import uuid
from pathlib import Path

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.windows.pool import WindowsPoolActivities
from runtime.failures import decode_failure
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.windows.contracts import (
    POOL_RETRY_POLICY,
    CallVerbInput,
    CallVerbResult,
    CloseSessionInput,
    CloseSessionResult,
    OpenSessionInput,
    PoolSession,
    WindowsPoolActivity,
)
from runtime.windows.errors import WindowsError
from runtime.windows.verbs import (
    SESSION_ACTIVITY_TIMEOUT,
    WindowsVerb,
    activity_timeout,
    validate_and_clamp,
)
from tests.fakes.windows_pool import FakeWindowsPool
from worker import workflow_runner

TOKEN = "probe-token"


class ProbeResult(BaseModel):
    launched: dict[str, object]
    error: dict[str, object] | None = None
    closed: bool


@workflow.defn(name="WindowsPoolProbe")
class WindowsPoolProbe:
    @workflow.run
    async def run(self, holder: str) -> ProbeResult:
        session: PoolSession = await workflow.execute_activity(
            WindowsPoolActivity.OPEN_SESSION,
            OpenSessionInput(tenant="acme", holder=holder, lease_ms=300_000),
            result_type=PoolSession,
            start_to_close_timeout=SESSION_ACTIVITY_TIMEOUT,
            retry_policy=POOL_RETRY_POLICY,
        )

        async def call(verb: WindowsVerb, args: dict[str, object]) -> CallVerbResult:
            clamped = validate_and_clamp(verb, dict(args))
            data = CallVerbInput(
                tenant="acme", holder=holder, session=session, verb=verb, args=clamped
            )
            result: CallVerbResult = await workflow.execute_activity(
                WindowsPoolActivity.CALL_VERB,
                data,
                result_type=CallVerbResult,
                start_to_close_timeout=activity_timeout(verb, clamped),
                retry_policy=POOL_RETRY_POLICY,
            )
            return result

        launched = await call(WindowsVerb.LAUNCH, {"program": "notepad.exe"})
        error = None
        try:
            await call(WindowsVerb.FOCUS, {"hwnd": 1})
        except ActivityError as err:
            decoded = decode_failure(err.cause)
            assert isinstance(decoded, WindowsError)
            error = decoded.body()
        closed: CloseSessionResult = await workflow.execute_activity(
            WindowsPoolActivity.CLOSE_SESSION,
            CloseSessionInput(session_id=session.session_id),
            result_type=CloseSessionResult,
            start_to_close_timeout=SESSION_ACTIVITY_TIMEOUT,
            retry_policy=POOL_RETRY_POLICY,
        )
        return ProbeResult(launched=launched.result, error=error, closed=closed.closed)


async def test_activities_by_name_from_a_workflow(
    time_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    upgrade_to_head(store.engine)
    with FakeWindowsPool(token=TOKEN) as pool:
        settings = Settings(windows_pool_url=pool.base_url, windows_pool_token=TOKEN)
        acts = WindowsPoolActivities(settings, EventJournal(store))
        async with Worker(
            time_env.client,
            task_queue=task_queue,
            workflows=[WindowsPoolProbe],
            activities=[acts.open_session, acts.renew, acts.close_session, acts.call_verb],
            workflow_runner=workflow_runner(),
        ):
            result = await time_env.client.execute_workflow(
                WindowsPoolProbe.run, "coder-9", id=f"probe-{uuid.uuid4()}", task_queue=task_queue
            )
        await acts.client.aclose()
    assert result.launched["title"] == "Untitled - Notepad"
    assert result.error is not None and result.error["code"] == "WINDOW_NOT_FOUND"
    assert result.error["data"] == {
        "httpStatus": 404,
        "retryable": False,
        "poolDetail": {"code": "WINDOW_NOT_FOUND", "hwnd": 1},
    }
    assert result.closed is True
    # One focus request: the refusal was not retried by Temporal.
    assert len([p for _, p, _ in pool.requests if p.endswith("/desktop/focus")]) == 1
    assert list(pool.closed.values()) == [["notepad.exe"]]
