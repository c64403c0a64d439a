"""Agent-tools activities: run a tool through the gateway, ask the model for the next step."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage, ModelError, ModelProvider, ToolCall, ToolSpec
from runtime.agent_tools.calls import execute_call
from runtime.agent_tools.contracts import (
    CallSummary,
    CallToolInput,
    ModelStepInput,
    ModelStepResult,
    ModelToolCall,
)
from runtime.agent_tools.findings import findings_of
from runtime.agent_tools.models import AgentTurn
from runtime.investigation.catalog import TOOL_DESCRIPTORS
from runtime.store import EventJournal, Store
from runtime.store.journal import NewEvent
from runtime.telemetry import tracer

SYSTEM_PROMPT = (
    "You are an investigation assistant. Use the tools to read the investigation "
    "progressively, cite the objects you rely on, and when a research campaign is "
    "warranted call research.prepare: a human decides whether it runs. You cannot "
    "authorize anything yourself."
)


def tool_specs() -> list[ToolSpec]:
    return [
        ToolSpec(name=d.tool_id, description=d.description, parameters=d.input_schema)
        for d in TOOL_DESCRIPTORS.values()
    ]


class AgentToolsActivities:
    def __init__(
        self,
        store: Store,
        journal: EventJournal,
        provider: ModelProvider,
        *,
        max_results: int = 64,
    ) -> None:
        self.store = store
        self.journal = journal
        self.provider = provider
        self.max_results = max_results

    @activity.defn(name="agent_tools.call_tool")
    async def call_tool(self, request: CallToolInput) -> CallSummary:
        """One idempotent gateway call; the workflow keeps only its references."""
        with tracer.start_as_current_span(f"tool {request.call.tool_id}"):
            record = await asyncio.to_thread(
                execute_call,
                self.store,
                request.instance,
                request.workspace,
                request.call,
                max_results=self.max_results,
            )
        outcome = record.outcome
        if request.transcript_stream and request.tool_call_id:
            message = ChatMessage(
                role="tool",
                tool_call_id=request.tool_call_id,
                content=_tool_message(record.status, outcome.model_dump(mode="json")),
            )
            await asyncio.to_thread(
                self.journal.append_many,
                request.transcript_stream,
                [NewEvent("message", message.model_dump(mode="json"))],
                dedupe_key=f"{request.call.idempotency_key}/message",
            )
        state = (
            outcome.output.get("state") if request.call.tool_id == "research.get_state" else None
        )
        return CallSummary(
            call_id=record.call_id,
            result_id=record.result_id,
            tool_id=record.tool_id,
            status=record.status,
            object_refs=outcome.object_refs[:50],
            diagnostic=outcome.diagnostic,
            replayed=record.replayed,
            research_state=state if isinstance(state, str) else None,
            findings=findings_of(record.tool_id, outcome),
        )

    @activity.defn(name="agent_tools.model_step")
    async def model_step(self, request: ModelStepInput) -> ModelStepResult:
        """Ask the model what to do next; the transcript lives in the journal, not in history.

        Idempotent: when this step's answer is already in the transcript (a retry
        after a crash), it is returned without calling the model again.
        """
        entries = (await self.journal.aread(request.transcript_stream, 0, 10_000)).entries
        for entry in entries:
            if entry.data.get("step") == request.step and entry.data.get("role") == "assistant":
                return _step_result(ChatMessage.model_validate(_message(entry.data)), "")
        if not entries:
            prompt = await asyncio.to_thread(self._prompt, request)
            seed = [
                ChatMessage(role="system", content=SYSTEM_PROMPT),
                ChatMessage(role="user", content=prompt),
            ]
            await self.journal.aappend_many(
                request.transcript_stream,
                [NewEvent("message", m.model_dump(mode="json")) for m in seed],
                dedupe_key=f"{request.transcript_stream}/seed",
            )
            entries = (await self.journal.aread(request.transcript_stream, 0, 10_000)).entries
        messages = [ChatMessage.model_validate(_message(e.data)) for e in entries]
        with tracer.start_as_current_span(f"llm {self.provider.name}"):
            try:
                reply = await heartbeating(self.provider.complete(messages, tool_specs()))
            except ModelError as err:
                # A bad key or request fails the same way every time: don't retry those.
                raise ApplicationError(
                    str(err), type="ModelError", non_retryable=not err.retryable
                ) from err
        answer = ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        await self.journal.aappend_many(
            request.transcript_stream,
            [NewEvent("message", {**answer.model_dump(mode="json"), "step": request.step})],
            dedupe_key=f"{request.transcript_stream}/step-{request.step}",
        )
        return _step_result(answer, reply.served_model)

    def _prompt(self, request: ModelStepInput) -> str:
        with self.store.session() as session:
            turn = session.execute(
                select(AgentTurn).where(
                    AgentTurn.instance == request.instance,  # type: ignore[arg-type]
                    AgentTurn.workspace == request.workspace,  # type: ignore[arg-type]
                    AgentTurn.turn_id == request.turn_id,  # type: ignore[arg-type]
                )
            ).scalar_one_or_none()
        return turn.prompt if turn is not None else ""


def _message(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "step"}


def _step_result(message: ChatMessage, served_model: str) -> ModelStepResult:
    return ModelStepResult(
        content=message.content[:4000],
        tool_calls=[_tool_call(c) for c in message.tool_calls],
        served_model=served_model,
    )


def _tool_call(call: ToolCall) -> ModelToolCall:
    return ModelToolCall(id=call.id, name=call.name, arguments=call.arguments)


def _tool_message(status: str, outcome: dict[str, Any]) -> str:
    """What the model reads back: status, output and references (bounded)."""
    import json

    body = {
        "status": status,
        "output": outcome.get("output", {}),
        "object_refs": outcome.get("object_refs", [])[:20],
        "observations": outcome.get("observations", [])[:10],
        "diagnostic": outcome.get("diagnostic"),
    }
    return json.dumps(body, default=str)[:8000]
