"""SessionWorkflow: one daemon session — its FIFO of prompts, its permissions, its settings.

Prompts arrive as updates (validated before they enter history: a full queue is
refused, not queued), run one at a time, and each runs one LLM episode: model
step, tools (asking permission according to the approval mode), model step...
Permission requests wait on a durable timer (default 5 minutes): it fires even
when the worker was down at the deadline. Events go to the journal with dedupe
keys, so a crash of the worker mid-prompt neither loses nor repeats one.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributePair
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from runtime.search_attributes import KIND, STATUS, TENANT
from workflows import patches
from workflows.activity_calls import call_activity, call_local_activity
from workflows.llm.model_failure import attempt_views, is_exhausted
from workflows.sessions.permissions import SessionPermissions

with workflow.unsafe.imports_passed_through():
    from runtime.coding_tasks.contracts import (
        CODER_FINISHED_SIGNAL,
        CoderReport,
        task_workflow_id,
    )
    from runtime.failures import UpdateExpired
    from runtime.llm.contracts import ToolCall
    from runtime.llm.routing import (
        ATTEMPT_START_TO_CLOSE,
        DEVICE_FLOW_FAILED,
        SESSION_SITE,
        SETTINGS_PROVIDER,
        AttemptReport,
        AttemptSpec,
    )
    from runtime.mcp.names import is_mcp_tool
    from runtime.policy.approval import (
        InvalidApprovalMode,
        is_approval_mode,
        is_mutating,
        is_rejection,
        needs_permission,
        tool_kind,
    )
    from runtime.policy.approval_v0 import needs_permission_v0
    from runtime.sessions.contracts import (
        CancelRequest,
        CloseRequest,
        CodingTaskRef,
        ModelStepInput,
        ModelStepResult,
        ModelSwitchResult,
        ModeSwitchResult,
        OpenPromptInput,
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
        ToolPreview,
        ToolStepInput,
        VoteRequest,
        VoteResult,
        WorkerBound,
    )
    from runtime.sessions.errors import PromptQueueFull, SessionNotFound
    from runtime.sessions.streams import session_event
    from runtime.store.journal_contracts import (
        APPEND_EVENTS_CONTRACT,
        AppendEventsInput,
        dedupe_key,
    )
    from runtime.streams import session_stream
    from runtime.tools import Dispatch
    from runtime.windows.lease import (
        SESSION_TENANT,
        SETTLE_SIGNAL,
        SettleRequest,
        lease_workflow_id,
        session_holder,
    )
    from workflows.llm.chain import ATTEMPT_RETRY, resolve_chain, run_chain


_LOCAL = timedelta(minutes=2)
_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=100))
# Side effects are idempotent (the operation ledger), so they may retry until they land.
_EFFECT_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=5)
)


def session_workflow_id(session_id: str) -> str:
    return f"session/{session_id}"


def session_search_attributes(request: SessionInput) -> list[SearchAttributePair[Any]]:
    return [
        SearchAttributePair(KIND, "session"),
        SearchAttributePair(TENANT, request.workspace_cwd),
        SearchAttributePair(STATUS, "idle"),
    ]


class _Cancelled(Exception):
    """The active prompt was cancelled (POST cancel, a deadline, or the session closing)."""


@workflow.defn(name="SessionWorkflow")
class SessionWorkflow:
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
                start_to_close_timeout=_LOCAL,
                retry_policy=_RETRY,
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
        except _Cancelled:
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

    async def _with_deadline(self, item: PromptItem) -> StopReason:
        assert self._input is not None and item.deadline_ms is not None
        episode = asyncio.create_task(self._episode(item))
        try:
            await workflow.wait_condition(
                lambda: episode.done(), timeout=timedelta(milliseconds=item.deadline_ms)
            )
        except TimeoutError:
            self._cancel_active = True
            await self._emit(
                "prompt_deadline_exceeded",
                {
                    "sessionId": self._input.session_id,
                    "promptId": item.prompt_id,
                    "deadlineMs": item.deadline_ms,
                },
                prompt_id=item.prompt_id,
            )
        result: StopReason = await episode
        return result

    async def _episode(self, item: PromptItem) -> StopReason:
        assert self._input is not None
        run_id = workflow.info().run_id
        # The text is in the store, never in history: an activity reads it.
        await call_local_activity(
            SessionActivityContracts.OPEN_PROMPT,
            OpenPromptInput(
                session_id=self._input.session_id,
                prompt_id=item.prompt_id,
                run_id=run_id,
                originator=item.originator,
                retention=self._input.event_retention,
                workspace_cwd=self._input.workspace_cwd,
            ),
            start_to_close_timeout=_LOCAL,
            retry_policy=_RETRY,
        )
        for step in range(self._input.max_steps):
            decision: ModelStepResult = await self._cancellable(
                self._model_step(item, step, run_id)
            )
            if not decision.tool_calls:
                return decision.stop_reason
            for call in decision.tool_calls:
                await self._tool(item, call, run_id, step)
        return "max_tokens"

    async def _model_step(self, item: PromptItem, step: int, run_id: str) -> ModelStepResult:
        if not workflow.patched(patches.MODEL_STEPS_WALK_THE_FALLBACK_CHAIN):
            return await self._model_step_v1(item, step, run_id)
        assert self._input is not None
        # Session:Default's chain, read now (live): a binding changed since the last step
        # applies. The session's own model counts only while the site still resolves to
        # the binding it was chosen under (load_chain_plan): otherwise the binding's model.
        plan = await resolve_chain(
            SESSION_SITE, self._model_id, self._model_binding, self._input.preset_id
        )
        # The attempts' results, in order: the chain ends on the successful one.
        results: list[ModelStepResult] = []

        async def attempt(spec: AttemptSpec) -> AttemptReport:
            assert self._input is not None
            request = ModelStepInput(
                session_id=self._input.session_id,
                prompt_id=item.prompt_id,
                step=step,
                run_id=run_id,
                model_id=spec.model,
                shell_enabled=self._input.shell_enabled,
                retention=self._input.event_retention,
                attempt=spec,
                tenant=self._input.workspace_cwd,
            )
            result: ModelStepResult
            if spec.provider == SETTINGS_PROVIDER and self._provider == "scripted":
                # Built in and instant: a local activity keeps a prompt to few workflow tasks.
                result = await call_local_activity(
                    SessionActivityContracts.MODEL_STEP,
                    request,
                    start_to_close_timeout=_LOCAL,
                    retry_policy=ATTEMPT_RETRY,
                )
            else:
                result = await call_activity(
                    SessionActivityContracts.MODEL_STEP,
                    request,
                    # Past it, /attempts calls a row still in flight a timeout.
                    start_to_close_timeout=ATTEMPT_START_TO_CLOSE,
                    heartbeat_timeout=timedelta(seconds=10),
                    retry_policy=ATTEMPT_RETRY,
                )
            assert result.report is not None
            results.append(result)
            return result.report

        call_id = model_call_id(self._input.session_id, item, step)
        await run_chain(
            plan,
            call_id,
            attempt,
            workspace=self._input.workspace_cwd,
            session_id=self._input.session_id,
            # A pause on a device flow ends on the prompt's cancel (the task's cancel alone
            # can be swallowed: workflows/patches.py, DEVICE_FLOW_PAUSE_CANCEL).
            cancelled=lambda: self._cancel_active,
        )
        return results[-1]

    async def _model_step_v1(self, item: PromptItem, step: int, run_id: str) -> ModelStepResult:
        """The model step of prompts started before the model chain (a patch), as they ran."""
        assert self._input is not None
        request = ModelStepInput(
            session_id=self._input.session_id,
            prompt_id=item.prompt_id,
            step=step,
            run_id=run_id,
            model_id=self._model_id,
            shell_enabled=self._input.shell_enabled,
            retention=self._input.event_retention,
        )
        result: ModelStepResult
        if self._provider == "scripted":
            # Built in and instant: a local activity keeps a prompt to few workflow tasks.
            result = await call_local_activity(
                SessionActivityContracts.MODEL_STEP,
                request,
                start_to_close_timeout=_LOCAL,
                retry_policy=_RETRY,
            )
            return result
        result = await call_activity(
            SessionActivityContracts.MODEL_STEP,
            request,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=_RETRY,
        )
        return result

    async def _cancellable(self, coroutine: Any) -> Any:
        """Await an activity, cancelling it when the prompt is cancelled."""
        task = asyncio.create_task(coroutine)
        await workflow.wait_condition(lambda: task.done() or self._cancel_active)
        if not task.done():
            task.cancel()
            try:
                await task
            except (CancelledError, ActivityError, BaseException):
                pass
            raise _Cancelled()
        if self._cancel_active:
            raise _Cancelled()
        return task.result()

    async def _tool(self, item: PromptItem, call: ToolCall, run_id: str, step: int) -> None:
        assert self._input is not None
        step_input = ToolStepInput(
            session_id=self._input.session_id,
            prompt_id=item.prompt_id,
            workspace_cwd=self._input.workspace_cwd,
            run_id=run_id,
            step=step,
            call=call,
            shell_enabled=self._input.shell_enabled,
            retention=self._input.event_retention,
        )
        preview: ToolPreview = await call_local_activity(
            SessionActivityContracts.PREVIEW_TOOL,
            step_input,
            start_to_close_timeout=_LOCAL,
            retry_policy=_RETRY,
        )
        command = call.arguments.get("command")
        if preview.disabled:
            # Disabled (`tools.disabled`) when this prompt began: never run, never asked.
            step_input.action = "refuse"
            step_input.refusal = f"Tool {call.name} is disabled in this workspace"
            await self._run_tool(step_input)
            return
        shell_command = command if isinstance(command, str) else None
        if tool_kind(call.name) == "execute" and preview.shell_fenced is None:
            # A preview recorded before the allow-list: replay the decision made then.
            verdict = needs_permission_v0(
                self._approval_mode, call.name, frozenset(self._always), command=shell_command
            )
        else:
            verdict = needs_permission(
                self._approval_mode,
                call.name,
                frozenset(self._always),
                command=shell_command,
                workspace=self._input.workspace_cwd,
                fenced=preview.shell_fenced is True,
                kind="read" if preview.dispatch is not None and preview.kind == "read" else None,
            )
        if verdict == "deny":
            step_input.action = "refuse"
            step_input.refusal = f"{call.name} is not allowed in {self._approval_mode} mode"
        elif verdict == "ask":
            outcome = await self._permissions.ask(
                self._input,
                item,
                call,
                preview,
                cancelled=lambda: self._cancel_active,
                announce_cancel=self._announce_cancel,
            )
            option = outcome.get("optionId")
            if outcome.get("outcome") != "selected" or is_rejection(option):
                step_input.action = "refuse"
                step_input.refusal = "The user rejected this tool call."
                if outcome.get("outcome") == "cancelled" and self._cancel_active:
                    raise _Cancelled()
            elif option == "proceed_always":
                self._always.add(call.name)
        if (
            step_input.action == "run"
            and call.name.startswith("windows_")
            and workflow.patched(patches.SESSION_WINDOWS_TOOLS)
        ):
            # A verb on the session's leased Windows machine: one attempt (a click is not
            # repeated), the same update id on a retry after a lost worker.
            self._windows_used = True
            await self._cancellable(
                call_activity(
                    SessionActivityContracts.WINDOWS_TOOL,
                    step_input,
                    start_to_close_timeout=timedelta(minutes=15),
                    retry_policy=_EFFECT_RETRY,
                )
            )
            return
        if (
            step_input.action == "run"
            and preview.dispatch is not None
            and is_mcp_tool(call.name)
            and workflow.patched(patches.SESSION_MCP_TOOLS)
        ):
            await self._mcp_tool(step_input, preview)
            return
        if step_input.action == "run" and _has_effect(call.name, preview):
            # A side effect: a regular activity (a local one runs again when a workflow
            # task is replayed), applied exactly once through the operation ledger, and
            # to the content the call was proposed (and maybe approved) on.
            step_input.expected_hash = preview.target_hash
            await self._cancellable(
                call_activity(
                    SessionActivityContracts.RUN_EFFECT,
                    step_input,
                    start_to_close_timeout=timedelta(minutes=10),
                    heartbeat_timeout=timedelta(seconds=10),
                    retry_policy=_EFFECT_RETRY,
                )
            )
            return
        # Reads and refusals: only the journal is written, with dedupe keys.
        await self._run_tool(step_input)

    async def _mcp_tool(self, step_input: ToolStepInput, preview: ToolPreview) -> None:
        """An MCP tool's call: a read-only one as a local activity (it may repeat), any
        other as a regular activity under the call's operation id, retried until it lands
        (the ledger makes a retry return the first result, or `outcome_unknown`)."""
        bound = timedelta(milliseconds=preview.timeout_ms or 600_000) + timedelta(seconds=30)
        step_input.mcp = preview.mcp
        if preview.dispatch == "local":
            await self._cancellable(
                call_local_activity(
                    SessionActivityContracts.MCP_READ,
                    step_input,
                    start_to_close_timeout=bound,
                    retry_policy=_RETRY,
                )
            )
            return
        await self._cancellable(
            call_activity(
                SessionActivityContracts.MCP_CALL,
                step_input,
                start_to_close_timeout=bound,
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=_EFFECT_RETRY,
            )
        )

    async def _run_tool(self, step_input: ToolStepInput) -> None:
        """Reads and refusals: a local activity; only the journal is written (dedupe keys)."""
        await self._cancellable(
            call_local_activity(
                SessionActivityContracts.RUN_TOOL,
                step_input,
                start_to_close_timeout=_LOCAL,
                retry_policy=_RETRY,
            )
        )

    async def _announce_cancel(self, item: PromptItem) -> None:
        """`prompt_cancelled`, once per prompt, before what the cancel resolves."""
        assert self._input is not None
        if self._cancel_announced == item.prompt_id:
            return
        self._cancel_announced = item.prompt_id
        await self._emit(
            "prompt_cancelled", {"sessionId": self._input.session_id}, prompt_id=item.prompt_id
        )

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

    async def _emit(
        self,
        event_type: str,
        data: dict[str, Any],
        *,
        prompt_id: str | None = None,
        originator: str | None = None,
    ) -> None:
        assert self._input is not None
        self._events += 1
        event = session_event(event_type, data, prompt_id=prompt_id, originator=originator)
        await call_local_activity(
            APPEND_EVENTS_CONTRACT,
            AppendEventsInput(
                stream=session_stream(self._input.session_id),
                events=[event],
                retention=self._input.event_retention,
                dedupe_key=dedupe_key(workflow.info().run_id, self._events, [event]),
            ),
            start_to_close_timeout=timedelta(seconds=30),
        )


def model_call_id(session_id: str, item: PromptItem, step: int) -> str:
    """The logical model call of a prompt's step: its attempts and stored reply hang on it."""
    return f"session/{session_id}/{item.prompt_id}/s{step}"


def _check_bound(request: WorkerBound) -> None:
    """Refuse an update its sender stopped waiting for (it answered 503 already)."""
    if request.accept_before_ms is None:
        return
    now_ms = int(workflow.now().timestamp() * 1000)
    if now_ms > request.accept_before_ms:
        raise UpdateExpired().application_error()


def _has_effect(name: str, preview: ToolPreview) -> bool:
    """Whether a call runs as a regular activity under its operation id: what its tool's
    descriptor says (runtime/tools.Dispatch, in the preview); a preview recorded before
    it carried that, or of a name no tool has, by the name (unknown tools count as
    mutating, and fail there: not found)."""
    if preview.dispatch is not None:
        return preview.dispatch != Dispatch.LOCAL.value
    return is_mutating(name)


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
