"""CodingTaskWorkflow: the timers of one coding task (runtime/coding_tasks).

Id `coding-task/{tenant}/{taskId}`, started when the task is created. The store holds the
task and every transition is a compare-and-swap there (the API and the MCP tools write
it, then signal `wake`); this workflow keeps what must happen when nobody calls: at the
task's deadline it settles `expired`; when its holder has not heartbeated for the claim
timeout, the claim is lost and the task is open again. A lost claim and a settlement
release the task's Windows lease (holder `task-{taskId}`); a settlement also wakes the
proposing agent, whose `DependencyCompleted` the settling write enqueued. Then the run
ends. A heartbeat only moves the claim's expiry in the store: the timer, when it fires,
reads it and sleeps again.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from runtime.search_attributes import KIND, STATUS, TENANT
from workflows import patches
from workflows.activity_calls import call_activity, call_local_activity
from workflows.windows.settlement import settle_lease

with workflow.unsafe.imports_passed_through():
    from runtime.coding_tasks.contracts import (
        CODER_FINISHED_SIGNAL,
        OWN_CODER,
        SESSION_ENDED,
        SETTLED,
        SPAWN_SIGNAL,
        TASK_KIND,
        WAKE_SIGNAL,
        WORKFLOW_NAME,
        CoderAliveInput,
        CoderReport,
        CodingTaskActivityContracts,
        CodingTaskInput,
        ExpireInput,
        ExpireResult,
        OwnCoderDone,
        SettleInput,
        SpawnResult,
        TaskState,
        TaskTimers,
        task_prompt_id,
    )
    from runtime.sessions.contracts import CancelRequest, session_workflow_id
    from runtime.windows.lease_contracts import SESSION_TENANT, session_holder, task_holder

_LOCAL = timedelta(minutes=1)
_STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=30)
)
# Wake-ups before the run continues as new (each is a few events of history).
MAX_ITERATIONS = 500
_MIN_WAIT = timedelta(milliseconds=20)
# A coder waiting for a slot of its tenant looks again this often.
_SLOT_WAIT = timedelta(seconds=15)


@workflow.defn(name=WORKFLOW_NAME)
class CodingTaskWorkflow:
    def __init__(self) -> None:
        self._woken = False
        self._spawn = False
        self._report: CoderReport | None = None

    @workflow.signal(name=WAKE_SIGNAL)
    def wake(self) -> None:
        """The task changed in the store (claimed, completed, cancelled): look again."""
        self._woken = True

    @workflow.signal(name=SPAWN_SIGNAL)
    def spawn_coder(self) -> None:
        """The task is claimed for agentrt's own coder: start its session."""
        self._spawn = self._woken = True

    @workflow.signal(name=CODER_FINISHED_SIGNAL)
    def coder_finished(self, report: CoderReport) -> None:
        """agentrt's coder's prompt ended: settle the task with its outcome."""
        self._report = report
        self._woken = True

    @workflow.run
    async def run(self, request: CodingTaskInput) -> None:
        self._spawn = self._spawn or request.spawn
        self._report = self._report or request.report
        workflow.upsert_search_attributes(
            [KIND.value_set(TASK_KIND), TENANT.value_set(request.tenant)]
        )
        shown: TaskState | None = None
        for iteration in range(MAX_ITERATIONS):
            self._woken = False  # cleared before the read: a later wake is not lost
            timers: TaskTimers = await call_local_activity(
                CodingTaskActivityContracts.TIMERS,
                ExpireInput(
                    tenant=request.tenant,
                    task_id=request.task_id,
                    claim_timeout_ms=request.claim_timeout_ms,
                    now=workflow.now(),
                ),
                start_to_close_timeout=_LOCAL,
                retry_policy=_STORE_RETRY,
            )
            if not timers.exists:
                return
            if timers.state != shown:
                shown = timers.state
                workflow.upsert_search_attributes([STATUS.value_set(shown.value)])
            if timers.state in SETTLED:
                if timers.session_id is not None and self._report is None:
                    # Settled under agentrt's coder (cancelled, expired): stop its prompt.
                    await _cancel_coder(timers.session_id, request.task_id)
                if timers.session_id is not None and workflow.patched(
                    patches.CODING_TASK_SETTLES_ITS_CODERS_LEASE
                ):
                    # agentrt's coder's Windows lease is its session's (`session-{id}`):
                    # the task's settlement releases it too.
                    await settle_lease(
                        SESSION_TENANT,
                        session_holder(timers.session_id),
                        f"task_{timers.state.value}",
                    )
                await self._settled(request, timers.state)
                return
            if timers.holder == OWN_CODER and self._report is not None:
                await call_activity(
                    CodingTaskActivityContracts.COMPLETE_OWN,
                    OwnCoderDone(
                        tenant=request.tenant, task_id=request.task_id, report=self._report
                    ),
                    start_to_close_timeout=_LOCAL,
                    retry_policy=_STORE_RETRY,
                )
                continue
            if timers.holder == OWN_CODER and self._spawn:
                spawned: SpawnResult = await call_activity(
                    CodingTaskActivityContracts.SPAWN_CODER,
                    SettleInput(tenant=request.tenant, task_id=request.task_id),
                    start_to_close_timeout=timedelta(minutes=2),
                    retry_policy=_STORE_RETRY,
                )
                if not spawned.waiting:
                    self._spawn = False
                    if workflow.patched(patches.CODING_TASK_CODER_LIVENESS):
                        if spawned.session_ended and spawned.session_id and not self._report:
                            self._report = CoderReport(
                                session_id=spawned.session_id, stop_reason=SESSION_ENDED
                            )
                        continue  # read the task again: its coder's session is watched
                else:
                    # The tenant runs its maximum of coders: look again in a while.
                    try:
                        await workflow.wait_condition(
                            lambda: self._report is not None, timeout=_SLOT_WAIT
                        )
                    except TimeoutError:
                        pass
                    continue
            now = workflow.now()
            due = min(
                (t for t in (timers.deadline, timers.claim_expires_at) if t is not None),
                default=None,
            )
            if due is not None and due <= now:
                expired: ExpireResult = await call_activity(
                    CodingTaskActivityContracts.EXPIRE,
                    ExpireInput(
                        tenant=request.tenant,
                        task_id=request.task_id,
                        claim_timeout_ms=request.claim_timeout_ms,
                        now=now,
                    ),
                    start_to_close_timeout=_LOCAL,
                    retry_policy=_STORE_RETRY,
                )
                if expired.lost_holder is not None and not expired.settled:
                    await settle_lease(request.tenant, task_holder(request.task_id), "claim_lost")
                continue
            # agentrt's coder does not heartbeat: its session is looked at instead.
            watched = (
                timers.session_id
                if timers.holder == OWN_CODER
                and self._report is None
                and not self._spawn
                and workflow.patched(patches.CODING_TASK_CODER_LIVENESS)
                else None
            )
            look_at = now + timedelta(milliseconds=request.claim_timeout_ms)
            wake_at = due
            if watched is not None and (due is None or look_at < due):
                wake_at = look_at
            timeout = max(wake_at - now, _MIN_WAIT) if wake_at is not None else None
            try:
                await workflow.wait_condition(lambda: self._woken, timeout=timeout)
            except TimeoutError:
                if watched is not None and wake_at == look_at:
                    await self._look_at_coder(watched)
            if iteration + 1 >= MAX_ITERATIONS or workflow.info().is_continue_as_new_suggested():
                break
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            request.model_copy(update={"spawn": self._spawn, "report": self._report})
        )

    async def _look_at_coder(self, session_id: str) -> None:
        alive: bool = await call_activity(
            CodingTaskActivityContracts.CODER_ALIVE,
            CoderAliveInput(session_id=session_id),
            start_to_close_timeout=_LOCAL,
            retry_policy=_STORE_RETRY,
        )
        if not alive and self._report is None:
            self._report = CoderReport(session_id=session_id, stop_reason=SESSION_ENDED)

    async def _settled(self, request: CodingTaskInput, state: TaskState) -> None:
        await settle_lease(request.tenant, task_holder(request.task_id), f"task_{state.value}")
        await call_activity(
            CodingTaskActivityContracts.WAKE_AGENT,
            SettleInput(tenant=request.tenant, task_id=request.task_id),
            start_to_close_timeout=_LOCAL,
            retry_policy=_STORE_RETRY,
        )


async def _cancel_coder(session_id: str, task_id: str) -> None:
    """Cancel the prompt agentrt's coder runs the task with (its session stays open)."""
    session = workflow.get_external_workflow_handle(session_workflow_id(session_id))
    try:
        await session.signal(
            "cancel", CancelRequest(originator="agentrt", prompt_id=task_prompt_id(task_id))
        )
    except Exception:
        workflow.logger.info("agentrt's coder of task %s no longer runs", task_id)
