"""Session activities: one model step of a prompt's episode, and the workspace tools.

Each writes its own events (streamed `agent_message_chunk`s, `tool_call`,
`tool_call_update`) to the session's journal stream with dedupe keys, and keeps
the conversation in a transcript stream of the journal — never in workflow history.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage, ModelProvider
from activities.llm.gateway import LlmOwner, ModelGateway
from activities.mcp.calls import McpCalls
from activities.sessions.windows_tools import run_windows_tool, windows_enabled, windows_tool_specs
from activities.workspace import (
    ToolResult,
    WorkspaceTools,
    describe_call,
    failed_result,
    run_once,
    shell_fenced,
    target_hash,
    tool_specs,
)
from runtime.llm.chain import first_attempt
from runtime.llm.config_store import load_chain_plan
from runtime.llm.contracts import ImageRef
from runtime.llm.cost_warning import SESSION_EVENT as COST_WARNING_EVENT
from runtime.llm.cost_warning import cost_warning
from runtime.llm.models import LlmCallAttempt
from runtime.llm.routing import (
    SESSION_SITE,
    AttemptOutcome,
    AttemptReport,
    AttemptSpec,
    OwnerKind,
)
from runtime.mcp.binding import McpBinding
from runtime.mcp.names import is_mcp_tool
from runtime.policy.approval import TOOL_KINDS, is_mutating
from runtime.sessions.contracts import (
    ModelStepInput,
    ModelStepResult,
    OpenPromptInput,
    PersistApprovalModeInput,
    RecapInput,
    RecapResult,
    SessionActivityContracts,
    StopReason,
    TaskDecisionInput,
    ToolPreview,
    ToolStepInput,
    ToolStepResult,
)
from runtime.sessions.prompts import load_prompt
from runtime.sessions.streams import session_event
from runtime.sessions.tools import SESSION_TOOLS
from runtime.settings import Settings
from runtime.standing_agents import coder_decisions
from runtime.store import EventJournal, JournalEntry, Store
from runtime.store.journal_contracts import NewEvent
from runtime.store.operations import OperationLedger
from runtime.streams import session_stream, session_transcript_stream
from runtime.tools import Dispatch
from runtime.windows.screenshots import read_screenshot
from runtime.workspace.settings import APPROVAL_MODE, disabled_tools, set_setting

RECAP_PROMPT = (
    "Summarize where this coding session stands in one sentence: what is being worked "
    "on and what comes next. Answer only with <recap>the sentence</recap>."
)
SYSTEM_PROMPT = (
    "You are a coding agent working in the user's workspace. Use the tools to read and "
    "change files; mutating tools may need the user's permission."
)
# Images a model step shows (the most recent); older ones are sent as their reference.
IMAGES_SHOWN = 3
_STOP: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


class SessionActivities:
    def __init__(
        self,
        store: Store,
        journal: EventJournal,
        provider: ModelProvider,
        settings: Settings,
        gateway: ModelGateway | None = None,
        mcp: McpCalls | None = None,
    ) -> None:
        self.store = store
        # The workspace's MCP tools (activities/mcp): offered to the model, called here.
        self.mcp = mcp
        self.journal = journal
        self.provider = provider
        self.settings = settings
        self.ledger = OperationLedger(store)
        # Model steps are attempts through the gateway; `provider` serves its scripted kind.
        self.gateway = gateway or ModelGateway(
            store, settings, scripted=provider, purpose="SessionPrompt"
        )

    @SessionActivityContracts.OPEN_PROMPT.defn
    async def open_prompt(self, request: OpenPromptInput) -> None:
        """The prompt's text, from the store, to the transcript and the session's stream."""
        text = await asyncio.to_thread(load_prompt, self.store, request.prompt_id)
        if text is None:
            raise ApplicationError(
                f"The text of prompt {request.prompt_id} is not in the store",
                type="prompt_text_missing",
                non_retryable=True,
            )
        key = f"{request.run_id}/{request.prompt_id}"
        user = ChatMessage(role="user", content=text)
        # The tools disabled now (`tools.disabled`) hold for the whole prompt: recorded
        # with its user message, read back by every model step and tool preview.
        disabled = (
            await asyncio.to_thread(disabled_tools, self.store, request.workspace_cwd)
            if request.workspace_cwd
            else []
        )
        message = _message(user, request.prompt_id)
        message.data["disabledTools"] = disabled
        await self._append(
            session_transcript_stream(request.session_id), [message], f"{key}/user", None
        )
        update = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}
        event = session_event(
            "session_update",
            {"sessionId": request.session_id, "update": update},
            prompt_id=request.prompt_id,
            originator=request.originator,
        )
        await self._append(
            session_stream(request.session_id), [event], f"{key}/user_message", request.retention
        )

    @SessionActivityContracts.MODEL_STEP.defn
    async def model_step(self, request: ModelStepInput) -> ModelStepResult:
        """One attempt of a prompt's model step (`request.attempt`), through the gateway;
        its text streams to the session as `agent_message_chunk`s.

        A failed attempt returns its report (the workflow's chain decides what follows)
        and keeps nothing in the transcript. Text it streamed before failing (a stream
        cut mid-way) stays on the session's stream, followed by `model_attempt_failed`
        with the count of its chunks, which a client drops (for an attempt whose worker
        died, the next attempt writes that marker); each attempt's chunks have their
        own dedupe keys.
        """
        transcript = session_transcript_stream(request.session_id)
        stream = session_stream(request.session_id)
        spec = request.attempt
        if spec is None:
            spec = await asyncio.to_thread(self._first_attempt, request)
        key = f"{request.run_id}/{request.prompt_id}/s{request.step}"
        if request.attempt is not None:
            key = f"{key}/a{spec.attempt_index}"
        entries = (await self.journal.aread(transcript, 0, 100_000)).entries
        for entry in entries:  # a step whose answer is already stored (a retry, a resume)
            data = entry.data
            if (
                data.get("promptId") == request.prompt_id
                and data.get("step") == request.step
                and data.get("role") == "assistant"
            ):
                stored = ChatMessage.model_validate(_chat(data))
                return _result(stored, data.get("finish", "stop"), _stored_report(spec))
        messages = await self._with_images(
            [ChatMessage(role="system", content=SYSTEM_PROMPT)]
            + [ChatMessage.model_validate(_chat(e.data)) for e in entries]
        )
        chunks = 0

        async def on_delta(text: str) -> None:
            nonlocal chunks
            if chunks == 0 and request.attempt is not None:
                # Text of this step's earlier attempts whose worker was lost mid-stream
                # (never marked): marked before this attempt's own text follows it.
                await self._mark_lost(request, spec)
            chunks += 1
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }
            event = session_event(
                "session_update",
                {"sessionId": request.session_id, "update": update},
                prompt_id=request.prompt_id,
            )
            await self._append(stream, [event], f"{key}/c{chunks}", request.retention)

        disabled = _disabled_for(entries, request.prompt_id)
        offered = tool_specs(request.shell_enabled)
        if await asyncio.to_thread(windows_enabled, self.store):
            offered += windows_tool_specs()
        if self.mcp is not None and request.tenant:
            # Bounded (a server slow to open is left out of this step) and heartbeating.
            tools = await heartbeating(self.mcp.offered(request.tenant))
            offered += [tool.descriptor.spec() for tool in tools]
        specs = [spec for spec in offered if spec.name not in disabled]
        owner = LlmOwner(OwnerKind.SESSION, request.session_id, request.tenant)
        report, reply = await self.gateway.attempt(spec, owner, messages, specs, on_delta=on_delta)
        if reply is None:
            if chunks:
                await self._discard(request, report, chunks, key)
            if request.attempt is None:
                # A prompt started before the chain: Temporal retries its one activity.
                raise ApplicationError(
                    report.error or report.outcome.value,
                    type="ModelError",
                    non_retryable=report.outcome
                    in (AttemptOutcome.BAD_REQUEST, AttemptOutcome.AUTH_ERROR),
                )
            return ModelStepResult(stop_reason="error", report=report)
        # Before the answer: a step found answered (above) already said it.
        warning = cost_warning(spec, report)
        if warning is not None:
            event = session_event(
                COST_WARNING_EVENT,
                {"sessionId": request.session_id, "promptId": request.prompt_id, **warning},
                prompt_id=request.prompt_id,
            )
            await self._append(stream, [event], f"{key}/cost", request.retention)
        answer = ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        record = {
            **_message(answer, request.prompt_id).data,
            "step": request.step,
            "finish": reply.finish_reason,
        }
        answer_key = f"{request.run_id}/{request.prompt_id}/s{request.step}/answer"
        await self._append(transcript, [NewEvent(type="message", data=record)], answer_key, None)
        return _result(answer, reply.finish_reason, report)

    async def _with_images(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The messages with the data URLs of their last `IMAGES_SHOWN` images, read from
        the journal for this request only (the transcript keeps the references). Older
        images, and pruned ones, stay references: each step resends what it shows, so
        a long desktop session would otherwise grow every request by every screenshot."""
        budget = IMAGES_SHOWN
        shown: list[ChatMessage] = []
        for message in reversed(messages):
            if not message.images:
                shown.append(message)
                continue
            images: list[ImageRef] = []
            for image in reversed(message.images):
                stored = await read_screenshot(self.journal, image.ref) if budget else None
                url = None
                if stored is not None:
                    budget -= 1
                    mime, data = stored
                    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
                images.append(ImageRef(ref=image.ref, data_url=url))
            shown.append(message.model_copy(update={"images": images[::-1]}))
        return shown[::-1]

    def _first_attempt(self, request: ModelStepInput) -> AttemptSpec:
        """The attempt of a step sent without one (its prompt began before the chain):
        the first of the live plan."""
        plan = load_chain_plan(self.store, self.settings, SESSION_SITE, request.model_id)
        call_id = f"session/{request.session_id}/{request.prompt_id}/s{request.step}"
        spec = first_attempt(plan, call_id)
        assert spec is not None  # a plan has at least its preset's own entry
        return spec

    async def _mark_lost(self, request: ModelStepInput, spec: AttemptSpec) -> None:
        """`model_attempt_failed` for each earlier attempt of the step that streamed text
        and has no marker (its worker died: it could not say so), latest first, so that
        each marker's "drop the latest n chunks" holds in order."""
        stream = session_stream(request.session_id)
        base = f"{request.run_id}/{request.prompt_id}/s{request.step}"
        for index in reversed(range(spec.attempt_index)):
            prefix = f"{base}/a{index}/"
            keys = await asyncio.to_thread(self.journal.dedupe_keys, stream, prefix)
            chunks = sum(1 for k in keys if k.removeprefix(prefix).startswith("c"))
            if not chunks or f"{prefix}failed" in keys:
                continue
            lost = AttemptReport(
                attempt_id=f"{spec.call_id}/a{index}",
                outcome=AttemptOutcome.TIMEOUT,
                provider=spec.provider,
                credential_alias=None,
            )
            row = await asyncio.to_thread(_attempt_row, self.store, lost.attempt_id)
            if row is not None:
                lost.provider, lost.credential_alias = row.provider, row.credential_alias
            await self._discard(request, lost, chunks, f"{base}/a{index}")

    async def _discard(
        self, request: ModelStepInput, report: AttemptReport, chunks: int, key: str
    ) -> None:
        """Tell clients the last `chunks` agent_message_chunks of this prompt were a failed
        attempt's: the reply comes from the next attempt, or the prompt ends in error."""
        event = session_event(
            "model_attempt_failed",
            {
                "sessionId": request.session_id,
                "promptId": request.prompt_id,
                "attemptId": report.attempt_id,
                "provider": report.provider,
                "credentialAlias": report.credential_alias,
                "outcome": report.outcome.value,
                "discardedChunks": chunks,
            },
            prompt_id=request.prompt_id,
        )
        await self._append(
            session_stream(request.session_id), [event], f"{key}/failed", request.retention
        )

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
            disabled=request.call.name in _disabled_for(entries, request.prompt_id),
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

    @SessionActivityContracts.PERSIST_APPROVAL_MODE.defn
    async def persist_approval_mode(self, request: PersistApprovalModeInput) -> None:
        """`tools.approvalMode` of the workspace (an idempotent upsert)."""
        await asyncio.to_thread(
            set_setting, self.store, request.workspace_cwd, APPROVAL_MODE, request.mode
        )

    @SessionActivityContracts.RECAP.defn
    async def recap(self, request: RecapInput) -> RecapResult:
        """A one-sentence recap of the session from the model, without tools; the
        transcript is read, never appended to. None with fewer than two messages, or
        when the answer has no `<recap>...</recap>`."""
        transcript = session_transcript_stream(request.session_id)
        entries = (await self.journal.aread(transcript, 0, 100_000)).entries
        dialogue = [
            e.data
            for e in entries
            if e.data.get("role") in ("user", "assistant") and e.data.get("content")
        ]
        if len(dialogue) < 2:
            return RecapResult(recap=None)
        lines = [f"{d['role']}: {str(d['content'])[:2000]}" for d in dialogue[-40:]]
        messages = [
            ChatMessage(role="system", content=RECAP_PROMPT),
            ChatMessage(role="user", content="\n".join(lines)),
        ]
        # One attempt (spec: best effort), on Session:Default's first provider, recorded
        # and priced as the session's like its prompts.
        info = activity.info()
        call_id = f"session/{request.session_id}/recap/{info.workflow_run_id}/{info.activity_id}"
        plan = await asyncio.to_thread(
            load_chain_plan,
            self.store,
            self.settings,
            SESSION_SITE,
            request.model_id,
            request.model_binding,
        )
        spec = first_attempt(plan, call_id)
        if spec is None:
            return RecapResult(recap=None)
        owner = LlmOwner(OwnerKind.SESSION, request.session_id, request.tenant)
        _, reply = await self.gateway.attempt(spec, owner, messages, [])
        return RecapResult(recap=extract_recap(reply.content) if reply is not None else None)

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
            [_message(answer, request.prompt_id)],
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


def _message(message: ChatMessage, prompt_id: str) -> NewEvent:
    """A message of the session's transcript, tagged with its prompt."""
    return NewEvent(type="message", data={**message.model_dump(mode="json"), "promptId": prompt_id})


def _disabled_for(entries: list[JournalEntry], prompt_id: str) -> set[str]:
    """The tools disabled when `prompt_id` began (recorded with its user message)."""
    for entry in entries:
        data = entry.data
        if data.get("promptId") == prompt_id and data.get("role") == "user":
            names = data.get("disabledTools")
            return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
    return set()


def extract_recap(text: str) -> str | None:
    """The text of the first `<recap>...</recap>`, whitespace collapsed; None without one."""
    match = re.search(r"<recap>(.*?)</recap>", text, re.DOTALL)
    if match is None:
        return None
    recap = " ".join(match.group(1).split())
    return recap or None


_CHAT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "images")


def _chat(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in _CHAT_KEYS}


def _result(message: ChatMessage, finish: str, report: AttemptReport) -> ModelStepResult:
    return ModelStepResult(
        content=message.content[:4000],
        tool_calls=list(message.tool_calls),
        stop_reason=_STOP.get(finish, "end_turn"),
        report=report,
    )


def _attempt_row(store: Store, attempt_id: str) -> LlmCallAttempt | None:
    with store.session() as db:
        return db.get(LlmCallAttempt, attempt_id)


def _stored_report(spec: AttemptSpec) -> AttemptReport:
    """An attempt that found the step's answer in the transcript: ok, and nothing paid
    (the attempt that got it was recorded then)."""
    return AttemptReport(
        attempt_id=f"{spec.call_id}/a{spec.attempt_index}",
        outcome=AttemptOutcome.OK,
        provider=spec.provider,
        credential_alias=spec.credential_alias,
    )
