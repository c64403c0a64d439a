"""One prompt's episode in a session: model step, tools (asked, refused or run), model
step... and the session's journal writes. `SessionWorkflow` (workflows/sessions/session.py)
is a `PromptEpisode`: the queue, the updates and the session's lifecycle live there, what
one prompt does here. The commands are issued in the same order as when both were one
module, so running sessions replay unchanged.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError

from workflows import patches
from workflows.activity_calls import call_activity, call_local_activity
from workflows.sessions.permissions import SessionPermissions

with workflow.unsafe.imports_passed_through():
    from runtime.llm.contracts import (
        ATTEMPT_START_TO_CLOSE,
        SESSION_SITE,
        SETTINGS_PROVIDER,
        AttemptReport,
        AttemptSpec,
        ModelBinding,
        ToolCall,
    )
    from runtime.mcp.contracts import is_mcp_tool
    from runtime.sessions.approval_modes import (
        is_mutating,
        is_rejection,
        needs_permission,
        tool_kind,
    )
    from runtime.sessions.approval_modes_v0 import needs_permission_v0
    from runtime.sessions.contracts import (
        ModelStepInput,
        ModelStepResult,
        OpenPromptInput,
        PromptItem,
        SessionActivityContracts,
        SessionInput,
        StopReason,
        ToolPreview,
        ToolStepInput,
    )
    from runtime.sessions.streams import session_event
    from runtime.store.journal_contracts import (
        APPEND_EVENTS_CONTRACT,
        AppendEventsInput,
        dedupe_key,
    )
    from runtime.streams import session_stream
    from runtime.tools import Dispatch
    from workflows.llm.chain import ATTEMPT_RETRY, resolve_chain, run_chain


# The bound of a local activity, and the retry of a step's short activities.
LOCAL_TIMEOUT = timedelta(minutes=2)
STEP_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=100))
# Side effects are idempotent (the operation ledger), so they may retry until they land.
_EFFECT_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=5)
)


class PromptCancelled(Exception):
    """The active prompt was cancelled (POST cancel, a deadline, or the session closing)."""


class PromptEpisode:
    """The model steps and tool calls of the active prompt (a base of SessionWorkflow,
    whose state it reads: the session's input, approval mode, model choice, always-allowed
    tools, permissions and the active prompt's cancel flag)."""

    _input: SessionInput | None
    _approval_mode: str
    _model_id: str
    _model_binding: ModelBinding | None
    _provider: str
    _always: set[str]
    _permissions: SessionPermissions
    _cancel_active: bool
    _cancel_announced: str | None
    _windows_used: bool
    _events: int

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
            start_to_close_timeout=LOCAL_TIMEOUT,
            retry_policy=STEP_RETRY,
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
                    start_to_close_timeout=LOCAL_TIMEOUT,
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
                start_to_close_timeout=LOCAL_TIMEOUT,
                retry_policy=STEP_RETRY,
            )
            return result
        result = await call_activity(
            SessionActivityContracts.MODEL_STEP,
            request,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=STEP_RETRY,
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
            raise PromptCancelled()
        if self._cancel_active:
            raise PromptCancelled()
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
            start_to_close_timeout=LOCAL_TIMEOUT,
            retry_policy=STEP_RETRY,
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
                    raise PromptCancelled()
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
                    retry_policy=STEP_RETRY,
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
                start_to_close_timeout=LOCAL_TIMEOUT,
                retry_policy=STEP_RETRY,
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


def _has_effect(name: str, preview: ToolPreview) -> bool:
    """Whether a call runs as a regular activity under its operation id: what its tool's
    descriptor says (runtime/tools.Dispatch, in the preview); a preview recorded before
    it carried that, or of a name no tool has, by the name (unknown tools count as
    mutating, and fail there: not found)."""
    if preview.dispatch is not None:
        return preview.dispatch != Dispatch.LOCAL.value
    return is_mutating(name)
