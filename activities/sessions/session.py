"""Session activities: a prompt's opening, one model step of its episode, and the recap;
the tool calls are their base, `SessionToolActivities` (activities/sessions/tool_calls.py).

Each writes its own events (streamed `agent_message_chunk`s) to the session's journal
stream with dedupe keys, and keeps the conversation in a transcript stream of the
journal — never in workflow history.
"""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage, ModelProvider
from activities.llm.gateway import LlmOwner, ModelGateway
from activities.mcp.calls import McpCalls
from activities.sessions.tool_calls import SessionToolActivities, disabled_for, transcript_message
from activities.sessions.windows_tools import windows_enabled, windows_tool_specs
from activities.workspace import (
    tool_specs,
)
from runtime.llm.chain import first_attempt
from runtime.llm.config_store import load_chain_plan
from runtime.llm.contracts import (
    SESSION_SITE,
    AttemptOutcome,
    AttemptReport,
    AttemptSpec,
    ImageRef,
    OwnerKind,
)
from runtime.llm.cost_warning import SESSION_EVENT as COST_WARNING_EVENT
from runtime.llm.cost_warning import cost_warning
from runtime.llm.models import LlmCallAttempt
from runtime.sessions.contracts import (
    ModelStepInput,
    ModelStepResult,
    OpenPromptInput,
    PersistApprovalModeInput,
    RecapInput,
    RecapResult,
    SessionActivityContracts,
    StopReason,
)
from runtime.sessions.prompts import load_prompt
from runtime.sessions.streams import session_event
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import NewEvent
from runtime.store.operations import OperationLedger
from runtime.streams import session_stream, session_transcript_stream
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


class SessionActivities(SessionToolActivities):
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
        message = transcript_message(user, request.prompt_id)
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

        disabled = disabled_for(entries, request.prompt_id)
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
            **transcript_message(answer, request.prompt_id).data,
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
