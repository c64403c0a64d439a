"""The steps of an agent-tools turn and its journal: a tool call through the gateway
(requested, started, completed), the turn's own read of a research's state, the turn's
end, and its events (deduplicated across retries and replays). `TurnWorkflow`
(workflows/agent_tools/turn.py) is a `TurnSteps`: the turn's flow, its messages and its
wait for a human live there. The commands are issued in the same order as when both were
one module, so running turns replay unchanged.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import RetryPolicy

from runtime.search_attributes import STATUS
from workflows.activity_calls import call_activity, call_local_activity

with workflow.unsafe.imports_passed_through():
    from runtime.agent_tools.contracts import (
        AgentToolsActivityContracts,
        CallRequest,
        CallSummary,
        CallToolInput,
        ResearchRead,
        ResearchStateInput,
        TurnInput,
        TurnResult,
        TurnStatus,
    )
    from runtime.agent_tools.events import event_data
    from runtime.store.journal_contracts import (
        APPEND_EVENTS_CONTRACT,
        AppendEventsInput,
        NewEvent,
        dedupe_key,
    )
    from runtime.streams import agent_tools_events_stream
    from workflows.agent_tools.deterministic_agent import summary_refs


# Tool calls are short store reads; a worker lost mid-call is retried after this.
_TOOL_TIMEOUT = timedelta(seconds=15)
TOOL_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=200))
# The research route signals before it writes: a read that does not show the decision
# yet is retried (the activity bounds how long) — quickly, a human is waiting.
_READ_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=2),
    maximum_attempts=12,
)
# A journal write is one short transaction; a worker lost in one is replaced after this.
_DURABLE_EMIT_TIMEOUT = timedelta(seconds=10)


class TurnSteps:
    """What a turn's flow calls (a base of TurnWorkflow, whose state it reads and
    writes: the turn's input, its call history, its research, status and result)."""

    _input: TurnInput | None
    _status: TurnStatus
    _history: list[CallSummary]
    _events: int
    _research_id: str | None
    _decisions: dict[str, Literal["approve", "deny"]]
    _summary: str
    _result: TurnResult | None

    # -- steps ---------------------------------------------------------------------------

    async def _call(
        self,
        tool_id: str,
        tool_input: dict[str, Any],
        key: str,
        *,
        transcript: str | None = None,
        tool_call_id: str | None = None,
    ) -> CallSummary:
        assert self._input is not None
        call_id = str(workflow.uuid4())
        requested = {"tool_id": tool_id, "input": tool_input}
        await self._emit_many(
            [("agent.tool.requested", requested), ("agent.tool.started", {"tool_id": tool_id})],
            call_id=call_id,
        )
        summary: CallSummary = await call_activity(
            AgentToolsActivityContracts.CALL_TOOL,
            CallToolInput(
                instance=self._input.instance,
                workspace=self._input.workspace,
                call=CallRequest(
                    turn_id=self._input.turn_id,
                    call_id=call_id,
                    tool_id=tool_id,
                    input=tool_input,
                    context={"agent": self._input.agent},
                    idempotency_key=f"{workflow.info().workflow_id}/{key}",
                ),
                transcript_stream=transcript,
                tool_call_id=tool_call_id,
            ),
            start_to_close_timeout=_TOOL_TIMEOUT,
            retry_policy=TOOL_RETRY,
        )
        self._history.append(summary)
        await self._emit(
            "agent.tool.completed",
            {
                "tool_id": tool_id,
                "status": summary.status,
                "result_id": summary.result_id,
                "diagnostic": summary.diagnostic,
            },
            call_id=summary.call_id,
            refs=[ref.model_dump() for ref in summary.object_refs[:20]],
        )
        return summary

    async def _read_research(self) -> str:
        """Read the research's state from the store, in the spec's public events.

        The events are those of a `research.get_state` tool call (the spec's sequence:
        the gateway reads the state again, then publishes the result), but the read is
        the turn's own: no call row, no stored result (`result_id` is null).
        """
        assert self._input is not None and self._research_id is not None
        research = self._research_id
        call_id = str(workflow.uuid4())
        tool_id = "research.get_state"
        await self._emit_many(
            [
                ("agent.tool.requested", {"tool_id": tool_id, "input": {"research_id": research}}),
                ("agent.tool.started", {"tool_id": tool_id}),
            ],
            call_id=call_id,
        )
        read: ResearchRead = await call_activity(
            AgentToolsActivityContracts.READ_RESEARCH,
            ResearchStateInput(
                workspace=self._input.workspace,
                research_id=research,
                expected=self._decisions.get(research),
            ),
            start_to_close_timeout=_TOOL_TIMEOUT,
            retry_policy=_READ_RETRY,
        )
        summary = CallSummary(
            call_id=call_id,
            result_id=None,
            tool_id=tool_id,
            status="COMPLETED",
            object_refs=read.object_refs,
            diagnostic=read.diagnostic,
        )
        self._history.append(summary)
        await self._emit(
            "agent.tool.completed",
            {
                "tool_id": tool_id,
                "status": summary.status,
                "result_id": None,
                "diagnostic": summary.diagnostic,
            },
            call_id=call_id,
            refs=[ref.model_dump() for ref in summary.object_refs[:20]],
        )
        return read.state

    async def _research_state_v1(self, key: str) -> str | None:
        """A gateway call, as turns before the decision signal read the state. Their
        recorded results carry `research_state`; a call made now does not, and the
        dedicated read answers instead."""
        assert self._input is not None and self._research_id is not None
        summary = await self._call("research.get_state", {"research_id": self._research_id}, key)
        if summary.research_state is not None:
            return summary.research_state
        read: ResearchRead = await call_activity(
            AgentToolsActivityContracts.READ_RESEARCH,
            ResearchStateInput(workspace=self._input.workspace, research_id=self._research_id),
            start_to_close_timeout=_TOOL_TIMEOUT,
            retry_policy=_READ_RETRY,
        )
        return read.state

    async def _finish(self, status: TurnStatus, result: str, summary: str) -> None:
        assert self._input is not None
        self._summary = summary
        self._result = TurnResult(
            turn_id=self._input.turn_id,
            status=status,
            result=result,
            research_id=self._research_id,
            summary=summary,
        )
        await self._emit(
            "agent.turn.completed",
            {
                "result": result,
                "status": status,
                "summary": summary,
                "research_id": self._research_id,
            },
            refs=([{"kind": "research", "id": self._research_id}] if self._research_id else [])
            + summary_refs(self._history),
        )
        self._status = status
        await self._set_status(status)

    def _current_result(self) -> TurnResult:
        assert self._input is not None
        if self._result is not None:
            return self._result
        return TurnResult(
            turn_id=self._input.turn_id,
            status=self._status,
            research_id=self._research_id,
            summary=self._summary,
        )

    async def _set_status(self, status: str) -> None:
        workflow.upsert_search_attributes([STATUS.value_set(status)])

    # -- events --------------------------------------------------------------------------

    async def _emit(
        self,
        event_type: str,
        payload: dict[str, Any],
        *,
        call_id: str | None = None,
        refs: list[dict[str, str]] | None = None,
        durable: bool = False,
    ) -> None:
        await self._emit_many([(event_type, payload)], call_id=call_id, refs=refs, durable=durable)

    async def _emit_many(
        self,
        events: list[tuple[str, dict[str, Any]]],
        *,
        call_id: str | None = None,
        refs: list[dict[str, str]] | None = None,
        durable: bool = False,
    ) -> None:
        """Journal `events` (deduplicated across retries and replays). `durable`: by a
        regular activity, so that the workflow's state up to here is recorded before a
        client can read them; else by a local activity (recorded with the task's end)."""
        assert self._input is not None
        self._events += 1
        batch = [
            NewEvent(
                type=event_type,
                data=event_data(self._input.turn_id, payload, call_id=call_id, refs=refs),
            )
            for event_type, payload in events
        ]
        append = AppendEventsInput(
            stream=agent_tools_events_stream(self._input.instance, self._input.workspace),
            events=batch,
            retention=self._input.event_retention,
            dedupe_key=dedupe_key(workflow.info().workflow_id, self._events, batch),
        )
        if durable:
            await call_activity(
                APPEND_EVENTS_CONTRACT, append, start_to_close_timeout=_DURABLE_EMIT_TIMEOUT
            )
            return
        await call_local_activity(
            APPEND_EVENTS_CONTRACT, append, start_to_close_timeout=timedelta(seconds=30)
        )
