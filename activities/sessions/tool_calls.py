"""A session's tool calls: previewed and announced, refused, run once under the
operation ledger (files, commands, MCP tools with effects) or run again freely (reads),
and each reported to the session's journal and transcript (with dedupe keys).

`SessionActivities` (activities/sessions/session.py) is a `SessionToolActivities`: the
model steps live there, the tool calls here, on the same store, journal and settings.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage
from activities.mcp.calls import McpCalls
from activities.sessions.windows_tools import run_windows_tool
from activities.workspace import (
    ToolResult,
    WorkspaceTools,
    describe_call,
    failed_result,
    run_once,
    shell_fenced,
    target_hash,
)
from runtime.llm.contracts import ImageRef
from runtime.mcp.contracts import McpBinding, is_mcp_tool
from runtime.sessions.approval_modes import TOOL_KINDS, is_mutating
from runtime.sessions.contracts import (
    SessionActivityContracts,
    TaskDecisionInput,
    ToolPreview,
    ToolStepInput,
    ToolStepResult,
)
from runtime.sessions.streams import session_event
from runtime.sessions.tools import SESSION_TOOLS
from runtime.settings import Settings
from runtime.standing_agents import coder_decisions
from runtime.store import EventJournal, JournalEntry, Store
from runtime.store.journal_contracts import NewEvent
from runtime.store.operations import OperationLedger
from runtime.streams import session_stream, session_transcript_stream
from runtime.tools import Dispatch


class SessionToolActivities:
    """The tool activities of a session (a base of SessionActivities, which sets the
    store, journal, settings, MCP calls and operation ledger they use)."""

    store: Store
    journal: EventJournal
    settings: Settings
    mcp: McpCalls | None
    ledger: OperationLedger

    @SessionActivityContracts.PREVIEW_TOOL.defn
    async def preview_tool(self, request: ToolStepInput) -> ToolPreview:
        """Describe the call (diff preview for edits) and announce it as a pending tool_call."""
        invocation = request.call
        data_dir = self.settings.resolved_data_dir
        tool_call = await asyncio.to_thread(
            describe_call, Path(request.workspace_cwd), invocation, data_dir
        )
        update = {**tool_call, "sessionUpdate": "tool_call"}
        event = session_event(
            "session_update",
            {"sessionId": request.session_id, "update": update},
            prompt_id=request.prompt_id,
        )
        await self._append(
            session_stream(request.session_id),
            [event],
            f"{request.run_id}/{request.call_key}/preview",
            request.retention,
        )
        expected = await asyncio.to_thread(
            target_hash, Path(request.workspace_cwd), invocation, data_dir
        )
        fenced = await asyncio.to_thread(
            shell_fenced, Path(request.workspace_cwd), data_dir, invocation
        )
        transcript = session_transcript_stream(request.session_id)
        entries = (await self.journal.aread(transcript, 0, 100_000)).entries
        preview = ToolPreview(
            tool_call=tool_call,
            kind=TOOL_KINDS.get(request.call.name, "other"),
            target_hash=expected,
            shell_fenced=fenced,
            disabled=request.call.name in disabled_for(entries, request.prompt_id),
        )
        descriptor = SESSION_TOOLS.get(request.call.name)
        if descriptor is not None:
            # The one dispatch rule (runtime/tools.Dispatch): the workflow reads it here.
            preview = preview.model_copy(update={"dispatch": descriptor.dispatch.value})
        if self.mcp is not None and is_mcp_tool(request.call.name):
            preview = await self._mcp_preview(request, preview)
        return preview

    async def _mcp_preview(self, request: ToolStepInput, preview: ToolPreview) -> ToolPreview:
        """How an MCP call is dispatched, from its server's annotations: a read-only tool
        of a trusted server is a `read` for the approval mode; any other asks. A tool that
        cannot be found now is dispatched at most once (and fails, not found)."""
        assert self.mcp is not None
        resolved = await self.mcp.resolve(request.workspace_cwd, request.call.name)
        if resolved is None:
            return preview.model_copy(update={"dispatch": Dispatch.AT_MOST_ONCE.value})
        descriptor = resolved.tool.descriptor
        annotations = descriptor.annotations
        trusted_read = resolved.tool.trusted and annotations.readOnlyHint
        dispatch = descriptor.dispatch
        if dispatch is Dispatch.LOCAL and not trusted_read:
            # An untrusted server's readOnlyHint is only its word: the call runs once,
            # under the ledger, like any other (a local activity may run again).
            dispatch = (
                Dispatch.EXACTLY_ONCE if annotations.idempotentHint else (Dispatch.AT_MOST_ONCE)
            )
        return preview.model_copy(
            update={
                "dispatch": dispatch.value,
                "kind": "read" if trusted_read else "other",
                "timeout_ms": int(resolved.config.timeout_seconds * 1000),
                "mcp": McpBinding(
                    server=resolved.tool.server,
                    tool=resolved.tool.tool,
                    fingerprint=resolved.config.fingerprint(),
                ),
            }
        )

    @SessionActivityContracts.RUN_TOOL.defn
    async def run_tool(self, request: ToolStepInput) -> ToolStepResult:
        """Run a read-only call, or refuse any call; report it and answer the model.

        A local activity: it may run again when a workflow task is replayed, so it
        never runs a tool with a side effect (those go through `run_effect`).
        """
        if request.action == "refuse":
            result = failed_result(request.refusal or "refused")
        elif is_mutating(request.call.name):
            raise ApplicationError(
                f"{request.call.name} has side effects: it runs through session.run_effect",
                type="tool_has_side_effects",
                non_retryable=True,
            )
        else:
            result = await self._tools(request).run(request.call)
        return await self._report(request, result)

    @SessionActivityContracts.WINDOWS_TOOL.defn
    async def windows_tool(self, request: ToolStepInput) -> ToolStepResult:
        """A windows_* call, through the session's Windows lease
        (activities/sessions/windows_tools.py)."""
        result = await run_windows_tool(self.store, self.settings, activity.client(), request)
        return await self._report(request, result)

    @SessionActivityContracts.TASK_DECISION.defn
    async def task_decision(self, request: TaskDecisionInput) -> None:
        """agentrt's coder asks: the permission request on its tenant's decision queue,
        once per request (its answer votes: api/standing_agents/decisions.py)."""
        await asyncio.to_thread(
            lambda: coder_decisions.coder_decision(
                self.store,
                tenant=request.task.tenant,
                title=request.title,
                body=(
                    f"agentrt's coder, working coding task {request.task.task_id}, asks "
                    "permission for a tool call; the answer is the option to vote."
                ),
                options=request.options,
                asked_by="agentrt-coder",
                task_id=request.task.task_id,
                op_id=f"permission/{request.request_id}",
                extra={"sessionId": request.session_id, "requestId": request.request_id},
            )
        )

    @SessionActivityContracts.MCP_READ.defn
    async def mcp_read(self, request: ToolStepInput) -> ToolStepResult:
        """A read-only MCP tool's call (a local activity: it may run again on replay)."""
        result = await self._mcp().read(
            request.workspace_cwd, request.call, _image_scope(request), request.mcp
        )
        return await self._report(request, result)

    @SessionActivityContracts.MCP_CALL.defn
    async def mcp_call(self, request: ToolStepInput) -> ToolStepResult:
        """Any other MCP tool's call, once, under the call's operation id."""
        result = await heartbeating(
            self._mcp().run_once(
                request.workspace_cwd,
                request.call,
                request.op_id,
                _image_scope(request),
                request.mcp,
            )
        )
        return await self._report(request, result)

    def _mcp(self) -> McpCalls:
        if self.mcp is None:
            raise ApplicationError(
                "this worker has no MCP pool", type="mcp_unavailable", non_retryable=True
            )
        return self.mcp

    @SessionActivityContracts.RUN_EFFECT.defn
    async def run_effect(self, request: ToolStepInput) -> ToolStepResult:
        """Run a call with a side effect, exactly once (files) or at most once (commands).

        A regular activity: Temporal retries it when its worker dies or stalls, and the
        operation ledger turns every retry into a no-op that returns the first result.
        """
        result = await heartbeating(
            run_once(
                self._tools(request),
                self.ledger,
                request.call,
                op_id=request.op_id,
                expected_hash=request.expected_hash,
            )
        )
        return await self._report(request, result)

    def _tools(self, request: ToolStepInput) -> WorkspaceTools:
        return WorkspaceTools(
            Path(request.workspace_cwd),
            request.shell_enabled,
            search_timeout=self.settings.session_search_timeout_ms / 1000,
            data_dir=self.settings.resolved_data_dir,
            search_children=self.settings.search_children,
        )

    async def _report(self, request: ToolStepInput, result: ToolResult) -> ToolStepResult:
        """The call's `tool_call_update` event and its answer in the transcript (idempotent)."""
        key = f"{request.run_id}/{request.call_key}"
        status = result.status
        text = result.output_text if result.status == "completed" else (result.error or "")
        content = result.content
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": request.call.id,
            "status": status,
            "content": content
            or [{"type": "content", "content": {"type": "text", "text": text[:4000]}}],
        }
        event = session_event(
            "session_update",
            {"sessionId": request.session_id, "update": update},
            prompt_id=request.prompt_id,
        )
        await self._append(
            session_stream(request.session_id), [event], f"{key}/update", request.retention
        )
        answer = ChatMessage(
            role="tool",
            tool_call_id=request.call.id,
            content=json.dumps({"status": status, "output": text[:16_000]}),
            images=[ImageRef(ref=ref) for ref in result.image_refs],
        )
        await self._append(
            session_transcript_stream(request.session_id),
            [transcript_message(answer, request.prompt_id)],
            f"{key}/answer",
            None,
        )
        return ToolStepResult(status=status)

    async def _append(
        self, stream: str, events: list[NewEvent], dedupe_key: str, retention: int | None
    ) -> None:
        await asyncio.to_thread(
            self.journal.append_many, stream, events, retention=retention, dedupe_key=dedupe_key
        )


def _image_scope(request: ToolStepInput) -> str:
    return f"session-{request.session_id}"


def transcript_message(message: ChatMessage, prompt_id: str) -> NewEvent:
    """A message of the session's transcript, tagged with its prompt."""
    return NewEvent(type="message", data={**message.model_dump(mode="json"), "promptId": prompt_id})


def disabled_for(entries: list[JournalEntry], prompt_id: str) -> set[str]:
    """The tools disabled when `prompt_id` began (recorded with its user message)."""
    for entry in entries:
        data = entry.data
        if data.get("promptId") == prompt_id and data.get("role") == "user":
            names = data.get("disabledTools")
            return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
    return set()
