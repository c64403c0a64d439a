"""Session activities: one model step of a prompt's episode, and the workspace tools.

Each writes its own events (streamed `agent_message_chunk`s, `tool_call`,
`tool_call_update`) to the session's journal stream with dedupe keys, and keeps
the conversation in a transcript stream of the journal — never in workflow history.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage, ModelError, ModelProvider, OpenAIProvider, ToolCall
from activities.workspace_tools import ToolInvocation, WorkspaceTools, describe_call, tool_specs
from runtime.policy.approval import TOOL_KINDS
from runtime.sessions.contracts import (
    ModelStepInput,
    ModelStepResult,
    ModelToolCall,
    StopReason,
    ToolPreview,
    ToolStepInput,
    ToolStepResult,
)
from runtime.sessions.streams import session_event, session_stream
from runtime.settings import Settings
from runtime.store import EventJournal
from runtime.store.journal import NewEvent

SYSTEM_PROMPT = (
    "You are a coding agent working in the user's workspace. Use the tools to read and "
    "change files; mutating tools may need the user's permission."
)
_STOP: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


def transcript_stream(session_id: str) -> str:
    return f"session-transcript/{session_id}"


class SessionActivities:
    def __init__(self, journal: EventJournal, provider: ModelProvider, settings: Settings) -> None:
        self.journal = journal
        self.provider = provider
        self.settings = settings

    def _provider_for(self, model_id: str) -> ModelProvider:
        if isinstance(self.provider, OpenAIProvider) and model_id != self.provider.model:
            return OpenAIProvider(
                base_url=self.settings.openai_base_url,
                model=model_id,
                api_key=self.settings.openai_api_key,
            )
        return self.provider

    @activity.defn(name="session.model_step")
    async def model_step(self, request: ModelStepInput) -> ModelStepResult:
        """Ask the model for the next step of a prompt; stream its text as session updates."""
        transcript = transcript_stream(request.session_id)
        stream = session_stream(request.session_id)
        key = f"{request.run_id}/{request.prompt_id}/s{request.step}"
        if request.user_text is not None:
            user = ChatMessage(role="user", content=request.user_text)
            await self._append(transcript, [_message(user, request)], f"{key}/user", None)
        entries = (await self.journal.aread(transcript, 0, 100_000)).entries
        for entry in entries:  # a retried step whose answer is already stored
            data = entry.data
            if (
                data.get("promptId") == request.prompt_id
                and data.get("step") == request.step
                and data.get("role") == "assistant"
            ):
                return _result(ChatMessage.model_validate(_chat(data)), data.get("finish", "stop"))
        messages = [ChatMessage(role="system", content=SYSTEM_PROMPT)] + [
            ChatMessage.model_validate(_chat(e.data)) for e in entries
        ]
        chunks = 0

        async def on_delta(text: str) -> None:
            nonlocal chunks
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

        provider = self._provider_for(request.model_id)
        try:
            reply = await heartbeating(
                provider.complete(messages, tool_specs(request.shell_enabled), on_delta=on_delta)
            )
        except ModelError as err:
            raise ApplicationError(
                str(err), type="ModelError", non_retryable=not err.retryable
            ) from err
        answer = ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        record = {
            **_message(answer, request).data,
            "step": request.step,
            "finish": reply.finish_reason,
        }
        await self._append(transcript, [NewEvent("message", record)], f"{key}/answer", None)
        return _result(answer, reply.finish_reason)

    @activity.defn(name="session.preview_tool")
    async def preview_tool(self, request: ToolStepInput) -> ToolPreview:
        """Describe the call (diff preview for edits) and announce it as a pending tool_call."""
        invocation = _invocation(request)
        tool_call = await asyncio.to_thread(describe_call, Path(request.workspace_cwd), invocation)
        update = {**tool_call, "sessionUpdate": "tool_call"}
        event = session_event(
            "session_update",
            {"sessionId": request.session_id, "update": update},
            prompt_id=request.prompt_id,
        )
        await self._append(
            session_stream(request.session_id),
            [event],
            f"{request.run_id}/{request.prompt_id}/{request.call.id}/preview",
            request.retention,
        )
        return ToolPreview(tool_call=tool_call, kind=TOOL_KINDS.get(request.call.name, "other"))

    @activity.defn(name="session.run_tool")
    async def run_tool(self, request: ToolStepInput) -> ToolStepResult:
        """Run (or refuse) the call; report a tool_call_update and answer the model."""
        key = f"{request.run_id}/{request.prompt_id}/{request.call.id}"
        if request.action == "refuse":
            status, text, content = "failed", request.refusal or "refused", []
        else:
            tools = WorkspaceTools(
                Path(request.workspace_cwd),
                request.shell_enabled,
                search_timeout=self.settings.session_search_timeout_ms / 1000,
            )
            result = await tools.run(_invocation(request))
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
        )
        await self._append(
            transcript_stream(request.session_id),
            [
                NewEvent(
                    "message", {**answer.model_dump(mode="json"), "promptId": request.prompt_id}
                )
            ],
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


def _invocation(request: ToolStepInput) -> ToolInvocation:
    return ToolInvocation(
        tool_name=request.call.name,
        arguments=request.call.arguments,
        tool_call_id=request.call.id,
    )


def _message(message: ChatMessage, request: ModelStepInput) -> NewEvent:
    return NewEvent("message", {**message.model_dump(mode="json"), "promptId": request.prompt_id})


def _chat(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in ("role", "content", "tool_calls", "tool_call_id")}


def _result(message: ChatMessage, finish: str) -> ModelStepResult:
    return ModelStepResult(
        content=message.content[:4000],
        tool_calls=[_tool_call(c) for c in message.tool_calls],
        stop_reason=_STOP.get(finish, "end_turn"),
    )


def _tool_call(call: ToolCall) -> ModelToolCall:
    return ModelToolCall(id=call.id, name=call.name, arguments=call.arguments)
