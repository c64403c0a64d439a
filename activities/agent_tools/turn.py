"""Agent-tools activities: run a tool through the gateway, ask the model for the next step,
read the state of the turn's research after a human decision."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.llm import ChatMessage, ModelProvider, ToolSpec
from activities.llm.gateway import LlmOwner, ModelGateway
from runtime.agent_tools.calls import execute_call
from runtime.agent_tools.contracts import (
    AgentToolsActivityContracts,
    CallSummary,
    CallToolInput,
    ModelStepInput,
    ModelStepResult,
    ResearchRead,
    ResearchStateInput,
)
from runtime.agent_tools.findings import findings_of
from runtime.agent_tools.models import AgentTurn
from runtime.investigation.catalog import TOOL_DESCRIPTORS
from runtime.investigation.research import ResearchNotFound
from runtime.investigation.tools import research_get_state
from runtime.llm.chain import first_attempt
from runtime.llm.config_store import load_chain_plan
from runtime.llm.contracts import TURN_SITE, AttemptOutcome, AttemptReport, AttemptSpec, OwnerKind
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import NewEvent
from runtime.telemetry import tracer

SYSTEM_PROMPT = (
    "You are an investigation assistant. Use the tools to read the investigation "
    "progressively, cite the objects you rely on, and when a research campaign is "
    "warranted call research.prepare: a human decides whether it runs. You cannot "
    "authorize anything yourself."
)
# How many times `read_research` reads again a store that does not show the decision the
# turn was signalled yet (about 10 s with the workflow's retry policy), before it
# answers what the store says: the route that signalled failed before it wrote.
DECISION_READS = 8


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
        settings: Settings,
        gateway: ModelGateway | None = None,
        max_results: int = 64,
    ) -> None:
        self.store = store
        self.journal = journal
        self.provider = provider
        self.settings = settings
        # Model steps are attempts through the gateway; `provider` serves its scripted kind.
        self.gateway = gateway or ModelGateway(
            store, settings, scripted=provider, purpose="AgentToolsTurn"
        )
        self.max_results = max_results

    @AgentToolsActivityContracts.CALL_TOOL.defn
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
                [NewEvent(type="message", data=message.model_dump(mode="json"))],
                dedupe_key=f"{request.call.idempotency_key}/message",
            )
        return CallSummary(
            call_id=record.call_id,
            result_id=record.result_id,
            tool_id=record.tool_id,
            status=record.status,
            object_refs=outcome.object_refs[:50],
            diagnostic=outcome.diagnostic,
            replayed=record.replayed,
            findings=findings_of(record.tool_id, outcome),
        )

    @AgentToolsActivityContracts.READ_RESEARCH.defn
    async def read_research(self, request: ResearchStateInput) -> ResearchRead:
        """The state of the turn's research, read from the store (the source of truth).

        A read, not a gateway call: no call row, no result. The research route signals
        the turn before it writes the decision (so a decision cannot be lost between the
        two), so a store that still shows `prepared` while the turn was told of a
        decision is read again (a retryable failure) up to `DECISION_READS` times.
        """

        def read() -> ResearchRead:
            with self.store.session() as db:
                outcome = research_get_state(db, request.workspace, request.research_id)
            state = outcome.output.get("state")
            return ResearchRead(
                state=str(state),
                object_refs=outcome.object_refs[:50],
                diagnostic=outcome.diagnostic,
            )

        try:
            research = await asyncio.to_thread(read)
        except ResearchNotFound as err:
            raise ApplicationError(str(err), type="research_not_found", non_retryable=True) from err
        waiting = request.expected is not None and research.state == "prepared"
        if waiting and activity.info().attempt < DECISION_READS:
            raise ApplicationError(
                "The decision the turn was told of is not in the store yet",
                type="decision_not_recorded",
            )
        return research

    @AgentToolsActivityContracts.MODEL_STEP.defn
    async def model_step(self, request: ModelStepInput) -> ModelStepResult:
        """One attempt of the turn's model step (`request.attempt`), through the gateway;
        the transcript lives in the journal, not in history.

        Idempotent: when this step's answer is already in the transcript (a retry
        after a crash), it is returned without calling the model again. A failed
        attempt returns its report and keeps nothing: the workflow's chain decides.
        """
        spec = request.attempt
        if spec is None:
            spec = await asyncio.to_thread(self._first_attempt, request)
        entries = (await self.journal.aread(request.transcript_stream, 0, 10_000)).entries
        for entry in entries:
            if entry.data.get("step") == request.step and entry.data.get("role") == "assistant":
                stored = ChatMessage.model_validate(_message(entry.data))
                return _step_result(stored, str(entry.data.get("served_model", "")), _ok(spec))
        if not entries:
            prompt = await asyncio.to_thread(self._prompt, request)
            seed = [
                ChatMessage(role="system", content=SYSTEM_PROMPT),
                ChatMessage(role="user", content=prompt),
            ]
            await self.journal.aappend_many(
                request.transcript_stream,
                [NewEvent(type="message", data=m.model_dump(mode="json")) for m in seed],
                dedupe_key=f"{request.transcript_stream}/seed",
            )
            entries = (await self.journal.aread(request.transcript_stream, 0, 10_000)).entries
        messages = [ChatMessage.model_validate(_message(e.data)) for e in entries]
        owner = LlmOwner(OwnerKind.TURN, request.turn_id, request.workspace)
        report, reply = await self.gateway.attempt(spec, owner, messages, tool_specs())
        if reply is None:
            if request.attempt is None:
                # A turn started before the chain: Temporal retries its one activity, except
                # a bad key or request, which fails the same way every time.
                raise ApplicationError(
                    report.error or report.outcome.value,
                    type="ModelError",
                    non_retryable=report.outcome
                    in (AttemptOutcome.BAD_REQUEST, AttemptOutcome.AUTH_ERROR),
                )
            return ModelStepResult(report=report)
        answer = ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        data = {**answer.model_dump(mode="json"), "step": request.step}
        data["served_model"] = reply.served_model
        await self.journal.aappend_many(
            request.transcript_stream,
            [NewEvent(type="message", data=data)],
            dedupe_key=f"{request.transcript_stream}/step-{request.step}",
        )
        return _step_result(answer, reply.served_model, report)

    def _first_attempt(self, request: ModelStepInput) -> AttemptSpec:
        """The attempt of a step sent without one (its turn began before the chain): the
        first of the live plan."""
        plan = load_chain_plan(self.store, self.settings, TURN_SITE)
        call_id = f"turn/{request.instance}/{request.workspace}/{request.turn_id}/m{request.step}"
        spec = first_attempt(plan, call_id)
        assert spec is not None  # a plan has at least its preset's own entry
        return spec

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
    return {k: v for k, v in data.items() if k not in ("step", "served_model")}


def _step_result(message: ChatMessage, served_model: str, report: AttemptReport) -> ModelStepResult:
    return ModelStepResult(
        content=message.content[:4000],
        tool_calls=list(message.tool_calls),
        served_model=served_model,
        report=report,
    )


def _ok(spec: AttemptSpec) -> AttemptReport:
    """An attempt that found the step's answer in the transcript: ok, nothing paid."""
    return AttemptReport(
        attempt_id=f"{spec.call_id}/a{spec.attempt_index}",
        outcome=AttemptOutcome.OK,
        provider=spec.provider,
        credential_alias=spec.credential_alias,
    )


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
