"""SessionWorkflow: one daemon session — its FIFO of prompts, its permissions, its settings.

Prompts arrive as updates (validated before they enter history: a full queue is
refused, not queued), run one at a time, and each runs one LLM episode: model
step, tools (asking permission according to the approval mode), model step...
Permission requests wait on a durable timer (default 5 minutes): it fires even
when the worker was down at the deadline. Events go to the journal with dedupe
keys, so a crash of the worker mid-prompt neither loses nor repeats one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from runtime.search_attributes import STATUS
from workflows import patches
from workflows.activity_calls import call_activity, call_local_activity
from workflows.llm.model_failure import attempt_views, is_exhausted
from workflows.sessions.episode import LOCAL_TIMEOUT, STEP_RETRY, PromptCancelled, PromptEpisode
from workflows.sessions.permissions import SessionPermissions

with workflow.unsafe.imports_passed_through():
    from runtime.coding_tasks.contracts import (
        CODER_FINISHED_SIGNAL,
        CoderReport,
        task_workflow_id,
    )
    from runtime.failures import UpdateExpired
    from runtime.llm.contracts import (
        DEVICE_FLOW_FAILED,
    )
    from runtime.sessions.approval_modes import (
        InvalidApprovalMode,
        is_approval_mode,
    )
    from runtime.sessions.contracts import (
        CancelRequest,
        CloseRequest,
        CodingTaskRef,
        ModelSwitchResult,
        ModeSwitchResult,
        PersistApprovalModeInput,
        PromptItem,
        PromptView,
        RecapInput,
        RecapRequest,
        RecapResult,
        SessionActivityContracts,
        SessionInput,
        SessionStatus,
        SetModelRequest,
        SetModeRequest,
        StopReason,
        SubmitPrompt,
        SubmitResult,
        VoteRequest,
        VoteResult,
        WorkerBound,
    )
    from runtime.sessions.errors import PromptQueueFull, SessionNotFound
    from runtime.windows.lease_contracts import (
        SESSION_TENANT,
        SETTLE_SIGNAL,
        SettleRequest,
        lease_workflow_id,
        session_holder,
    )


@workflow.defn(name="SessionWorkflow")
class SessionWorkflow(PromptEpisode):
    # @workflow.init: an update may arrive in the very first activation, before run().
    @workflow.init
    def __init__(self, request: SessionInput) -> None:
        self._input: SessionInput | None = request
        # Continue-as-new carries the queue, settings and event counter over.
        self._queue: list[PromptItem] = list(request.queue)
        self._active: PromptItem | None = None
        self._cancel_active = False
        self._closing: CloseRequest | None = None
        self._permissions = SessionPermissions(self._emit, self._set_status)
        self._approval_mode = request.approval_mode
        self._model_id = request.model_id
        # What Session:Default resolved to when the session chose `_model_id`: the choice
        # holds while it still resolves so (load_chain_plan).
        self._model_binding = request.model_binding
        # The deployment's provider as last reported by the API (SubmitPrompt,
        # SetModelRequest): a session outlives a switch of AGENTRT_MODEL_PROVIDER.
        self._provider = request.model_provider
        self._always: set[str] = set(request.always_allowed)
        self._events = request.event_counter
        self._last_turn: dict[str, Any] | None = None
        self._cancel_announced: str | None = None
        self._windows_used = request.windows_used

    # -- queries -------------------------------------------------------------------------

    @workflow.query
    def status(self) -> SessionStatus:
        assert self._input is not None

        def view(item: PromptItem, state: Literal["running", "queued"]) -> PromptView:
            return PromptView(
                prompt_id=item.prompt_id,
                text=item.preview,
                queued_at_ms=item.queued_at_ms,
                state=state,
            )

        return SessionStatus(
            session_id=self._input.session_id,
            active_prompt=view(self._active, "running") if self._active else None,
            queued=[view(item, "queued") for item in self._queue],
            pending_permissions=self._permissions.views(),
            approval_mode=self._approval_mode,
            model_id=self._model_id,
            model_binding=self._model_binding,
            closed=self._closing is not None,
            last_turn=self._last_turn,
        )

    # -- prompts -------------------------------------------------------------------------

    # An update, not a signal: the caller learns at once whether the prompt was
    # accepted, and a full queue is refused by the validator without touching history.
    @workflow.update
    async def submit_prompt(self, request: SubmitPrompt) -> SubmitResult:
        assert self._input is not None
        item = request.item
        position = len(self._queue) + (1 if self._active else 0)
        if position >= self._input.max_pending_prompts:
            # Validators of updates delivered together all see the queue before any of
            # their handlers ran: the handler has the last word.
            raise self._queue_full().application_error()
        if request.model_provider is not None:
            self._provider = request.model_provider
        # Queued before the first await, so the next handler counts it.
        self._queue.append(item)
        if position:
            item.queued = True
            await self._emit(
                "pending_prompt_added",
                {
                    "sessionId": self._input.session_id,
                    "promptId": item.prompt_id,
                    "text": item.preview,
                    "queuedAt": item.queued_at_ms,
                },
                prompt_id=item.prompt_id,
                originator=item.originator,
            )
        return SubmitResult(position=position)

    @submit_prompt.validator
    def _validate_prompt(self, request: SubmitPrompt) -> None:
        assert self._input is not None
        _check_bound(request)
        if self._closing is not None:
            # Closing is closed: the prompt is answered as for any closed session.
            raise SessionNotFound(session_id=self._input.session_id).application_error()
        if len(self._queue) + (1 if self._active else 0) >= self._input.max_pending_prompts:
            raise self._queue_full().application_error()

    def _queue_full(self) -> PromptQueueFull:
        assert self._input is not None
        return PromptQueueFull(
            session_id=self._input.session_id, limit=self._input.max_pending_prompts
        )

    @workflow.signal
    def cancel(self, request: CancelRequest) -> None:
        """Cancel the active prompt only; queued prompts still run (spec: multi-prompt)."""
        if request.prompt_id is not None and (
            self._active is None or self._active.prompt_id != request.prompt_id
        ):
            # A blocking caller went away while its prompt was still queued.
            self._queue = [p for p in self._queue if p.prompt_id != request.prompt_id]
            return
        if self._active is not None:
            self._cancel_active = True

    # -- permissions ---------------------------------------------------------------------

    # The sub-machine is `workflows.sessions.permissions`; the update stays here, under
    # its name, since that name is what running sessions and the API know.
    @workflow.update
    async def vote(self, request: VoteRequest) -> VoteResult:
        return await self._permissions.vote(request)

    @vote.validator
    def _validate_vote(self, request: VoteRequest) -> None:
        _check_bound(request)
        self._permissions.validate_vote(request)

    # -- settings ------------------------------------------------------------------------

    @workflow.update
    async def set_approval_mode(self, request: SetModeRequest) -> ModeSwitchResult:
        assert self._input is not None
        previous = self._approval_mode
        if request.persist:
            # `tools.approvalMode` of the workspace: sessions created later start in it.
            await call_local_activity(
                SessionActivityContracts.PERSIST_APPROVAL_MODE,
                PersistApprovalModeInput(
                    workspace_cwd=self._input.workspace_cwd, mode=request.mode
                ),
                start_to_close_timeout=LOCAL_TIMEOUT,
                retry_policy=STEP_RETRY,
            )
        self._approval_mode = request.mode
        data: dict[str, Any] = {
            "sessionId": self._input.session_id,
            "previous": previous,
            "next": request.mode,
            "persisted": request.persist,
        }
        if request.originator:
            data["originatorClientId"] = request.originator
        await self._emit("approval_mode_changed", data, originator=request.originator)
        return ModeSwitchResult(previous=previous, mode=request.mode, persisted=request.persist)

    @set_approval_mode.validator
    def _validate_mode(self, request: SetModeRequest) -> None:
        _check_bound(request)
        if not is_approval_mode(request.mode):
            raise InvalidApprovalMode().application_error()

    @workflow.update
    async def set_model(self, request: SetModelRequest) -> ModelSwitchResult:
        assert self._input is not None
        if request.model_provider is not None:
            self._provider = request.model_provider
        if request.binding is not None:
            # Validated against Session:Default's primary provider as bound now.
            scripted_only = request.binding_scripted
        else:
            # An update sent before the API resolved the binding (replayed histories).
            scripted_only = self._provider == "scripted"
        allowed = not scripted_only or request.model_id == "scripted"
        data = {"sessionId": self._input.session_id, "modelId": request.model_id}
        if not allowed:
            error = (
                f"model {request.model_id!r} is not available (the scripted provider "
                "serves only 'scripted')"
            )
            await self._emit(
                "model_switch_failed", {**data, "error": error}, originator=request.originator
            )
            return ModelSwitchResult(ok=False, model_id=request.model_id, error=error)
        self._model_id = request.model_id
        self._model_binding = request.binding
        await self._emit("model_switched", data, originator=request.originator)
        return ModelSwitchResult(ok=True, model_id=request.model_id)

    @set_model.validator
    def _validate_model(self, request: SetModelRequest) -> None:
        _check_bound(request)

    @workflow.update
    async def recap(self, request: RecapRequest) -> RecapResult:
        """A one-sentence "where are we" of the session, from the model (spec: best
        effort, one attempt, 60 s; any failure is `recap: null`, never an error)."""
        assert self._input is not None
        try:
            result: RecapResult = await call_activity(
                SessionActivityContracts.RECAP,
                RecapInput(
                    session_id=self._input.session_id,
                    model_id=self._model_id,
                    model_binding=self._model_binding,
                    tenant=self._input.workspace_cwd,
                ),
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError:
            return RecapResult(recap=None)
        return result

    @recap.validator
    def _validate_recap(self, request: RecapRequest) -> None:
        assert self._input is not None
        _check_bound(request)
        if self._closing is not None:
            raise SessionNotFound(session_id=self._input.session_id).application_error()

    @workflow.update
    async def close(self, request: CloseRequest) -> None:
        self._closing = request
        if self._active is not None:
            self._cancel_active = True
        await workflow.wait_condition(lambda: self._active is None)

    @close.validator
    def _validate_close(self, request: CloseRequest) -> None:
        _check_bound(request)

    # -- the session ---------------------------------------------------------------------

    @workflow.run
    async def run(self, request: SessionInput) -> None:
        while True:
            await workflow.wait_condition(
                lambda: (
                    bool(self._queue)
                    or self._closing is not None
                    or workflow.info().is_continue_as_new_suggested()
                )
            )
            if self._closing is not None:
                break
            # Between prompts, when Temporal suggests it: idle, and busy too (the queue is
            # carried over), so a session that is never idle still starts a new history.
            if workflow.info().is_continue_as_new_suggested() and (
                not self._queue or workflow.patched(patches.SESSION_CONTINUES_AS_NEW_WHILE_BUSY)
            ):
                await workflow.wait_condition(workflow.all_handlers_finished)
                # A close taken during that wait ends the session here: the new run would
                # not know of it.
                if self._closing is not None and workflow.patched(
                    patches.SESSION_CLOSE_DURING_CONTINUE_AS_NEW
                ):
                    break
                workflow.continue_as_new(self._carry_over(request))
            item = self._queue.pop(0)
            await self._run_prompt(item)
        await self._close()

    def _carry_over(self, request: SessionInput) -> SessionInput:
        return request.model_copy(
            update={
                "approval_mode": self._approval_mode,
                "model_id": self._model_id,
                "model_binding": self._model_binding,
                "model_provider": self._provider,
                "always_allowed": sorted(self._always),
                "event_counter": self._events,
                "queue": list(self._queue),
                "windows_used": self._windows_used,
            }
        )

    async def _run_prompt(self, item: PromptItem) -> None:
        assert self._input is not None
        session_id = self._input.session_id
        queued_behind = item.queued
        self._active = item
        self._cancel_active = False
        await self._set_status("running")
        if queued_behind:
            await self._emit(
                "pending_prompt_started",
                {"sessionId": session_id, "promptId": item.prompt_id, "text": item.preview},
                prompt_id=item.prompt_id,
            )
        stop: StopReason
        try:
            if item.deadline_ms:
                stop = await self._with_deadline(item)
            else:
                stop = await self._episode(item)
        except PromptCancelled:
            stop = "cancelled"
        except ApplicationError as err:
            if not is_exhausted(err):
                raise
            # Every attempt of a model step failed (or a 400 ended the chain).
            data = {
                "sessionId": session_id,
                "promptId": item.prompt_id,
                "error": err.message[:1000],
                # What the SDKs read on a turn_error (`code`, `message`).
                "code": err.type,
                "message": err.message[:1000],
                "attempts": attempt_views(err, camel=True),
            }
            if err.type == DEVICE_FLOW_FAILED:
                # A credential's device flow failed: the flow's errorKind ends the call.
                data["errorKind"] = err.message
            await self._emit("turn_error", data, prompt_id=item.prompt_id)
            stop = "error"
        except ActivityError as err:
            await self._emit(
                "turn_error",
                {
                    "sessionId": session_id,
                    "promptId": item.prompt_id,
                    "error": str(err.cause or err)[:1000],
                },
                prompt_id=item.prompt_id,
            )
            stop = "error"
        if stop == "cancelled":
            await self._announce_cancel(item)
            await self._permissions.cancel_all()
        if stop != "error":
            await self._emit(
                "turn_complete",
                {"sessionId": session_id, "stopReason": stop, "promptId": item.prompt_id},
                prompt_id=item.prompt_id,
            )
        if queued_behind:
            await self._emit(
                "pending_prompt_completed",
                {
                    "sessionId": session_id,
                    "promptId": item.prompt_id,
                    "state": "cancelled" if stop == "cancelled" else "completed",
                },
                prompt_id=item.prompt_id,
            )
        if item.coding_task is not None and workflow.patched(patches.SESSION_CODING_TASK_REPORT):
            await _report_to_task(item.coding_task, self._input.session_id, stop)
        self._last_turn = {
            "promptId": item.prompt_id,
            "stopReason": stop,
            "promptText": item.preview,
        }
        self._active = None
        self._cancel_active = False
        await self._set_status("idle")

    async def _close(self) -> None:
        assert self._input is not None and self._closing is not None
        await self._permissions.cancel_all()
        data: dict[str, Any] = {"sessionId": self._input.session_id, "reason": "client_close"}
        if self._closing.closed_by:
            data["closedBy"] = self._closing.closed_by
        await self._emit("session_closed", data, originator=self._closing.closed_by)
        await self._settle_windows()
        await self._set_status("closed")
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _settle_windows(self) -> None:
        """The session is the holder `session-{id}` of a Windows lease (tenant `default`),
        whether its tools or a direct client took it: closing releases the machine."""
        assert self._input is not None
        # Sessions closed before the patch signalled only after their own windows_* calls.
        if (
            not workflow.patched(patches.SESSION_CLOSE_SETTLES_ITS_WINDOWS_LEASE)
            and not self._windows_used
        ):
            return
        lease = workflow.get_external_workflow_handle(
            lease_workflow_id(SESSION_TENANT, session_holder(self._input.session_id))
        )
        try:
            await lease.signal(SETTLE_SIGNAL, SettleRequest(reason="session_closed"))
        except Exception:
            # No lease runs any more (released, expired or evicted): nothing is held.
            workflow.logger.info("no Windows lease to settle")

    async def _set_status(self, status: str) -> None:
        workflow.upsert_search_attributes([STATUS.value_set(status)])


def _check_bound(request: WorkerBound) -> None:
    """Refuse an update its sender stopped waiting for (it answered 503 already)."""
    if request.accept_before_ms is None:
        return
    now_ms = int(workflow.now().timestamp() * 1000)
    if now_ms > request.accept_before_ms:
        raise UpdateExpired().application_error()


async def _report_to_task(task: CodingTaskRef, session_id: str, stop: str) -> None:
    """Tell the coding task its coder's prompt ended (its workflow settles it)."""
    handle = workflow.get_external_workflow_handle(task_workflow_id(task.tenant, task.task_id))
    try:
        await handle.signal(
            CODER_FINISHED_SIGNAL, CoderReport(session_id=session_id, stop_reason=stop)
        )
    except Exception:
        # The task's workflow ended (cancelled or expired meanwhile): nothing to settle.
        workflow.logger.info("coding task %s no longer waits for its coder", task.task_id)
