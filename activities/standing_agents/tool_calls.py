"""A standing agent's tool calls: each governed (the mode's tools, the constitution, the
decision queue), run once under its op id, and journalled (the action, its effect, a
decision asked for); and the MCP calls an operator approved. `StandingAgentActivities`
(activities/standing_agents/agent.py) is a `StandingAgentToolActivities`: the loop's
activities and the model steps live there, on the same store, journal and settings.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage
from activities.mcp.calls import ResolvedTool
from activities.standing_agents.constitution_check import ConstitutionChecker
from activities.standing_agents.mcp_tools import AgentMcpTools
from activities.standing_agents.tasks import assign_coder, propose_task
from runtime.mcp.contracts import is_mcp_tool
from runtime.settings import Settings
from runtime.standing_agents import (
    mcp_calls,
    messages,
    ticks,
    tool_catalog,
    tool_context,
    tools,
)
from runtime.standing_agents.agent_journal import entry_data
from runtime.standing_agents.catalog import PHASE_BLOCKED, PHASE_COMPLETE
from runtime.standing_agents.constitution import CONSTITUTION_KEY, parse_rules
from runtime.standing_agents.contracts import ActionOutcome, AttentionKind
from runtime.standing_agents.workflow_contracts import (
    ACTION_ENTRY,
    ACTION_SUMMARY_MAX,
    ActionRecord,
    ApprovedMcpCallInput,
    RunToolInput,
    RunToolResult,
    StandingAgentActivityContracts,
)
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import NewEvent
from runtime.streams import agent_episode_stream, agent_stream
from runtime.tools import ToolArgumentsError

# What a blocked call tells the model (and the ledger): never raised.
BLOCK_BUDGET = "budget_exhausted"
BLOCK_MODE = "tool_not_in_mode"
BLOCK_UNKNOWN = "unknown_tool"
BLOCK_CONSTITUTION = "constitution_violation"
BLOCK_CONSTITUTION_INVALID = "constitution_invalid"
BLOCK_BOUNDARY = "outside_boundary"
BLOCK_CONSTITUTION_TIMEOUT = "constitution_timeout"
# The constitution's regexes run in a child process, bounded: a catastrophic pattern
# blocks the call instead of stalling the worker's event loop (and every workflow on it).
CONSTITUTION_TIMEOUT_S = 2.0
RESULT_LIMIT = 4000


class StandingAgentToolActivities:
    """The tool activities of a standing agent (a base of StandingAgentActivities, which
    sets the store, journal, settings, constitution checker and MCP tools they use)."""

    store: Store
    journal: EventJournal
    settings: Settings
    constitution: ConstitutionChecker
    mcp: AgentMcpTools

    @StandingAgentActivityContracts.RUN_TOOL.defn
    async def run_tool(self, request: RunToolInput) -> RunToolResult:
        """One governed tool call: checks, effect under the op id, result to the transcript."""
        action, result = await self._governed(request)
        transcript = agent_episode_stream(request.tenant, request.instance_id, request.event_id)
        body = result if action.outcome == ActionOutcome.OK else _blocked_body(action, result)
        text = json.dumps(body, default=str)[:RESULT_LIMIT]
        message = ChatMessage(role="tool", content=text, tool_call_id=request.call.id)
        await self.journal.aappend_many(
            transcript,
            [NewEvent(type="message", data=message.model_dump(mode="json"))],
            dedupe_key=f"tool/{request.op_id}",
        )
        await self._journal_action(transcript, action, request.op_id, result)
        return RunToolResult(
            action=action.model_copy(
                update={"op_id": request.op_id, "summary": _summary(request.call.name, result)}
            )
        )

    @StandingAgentActivityContracts.RUN_APPROVED_MCP_CALL.defn
    async def run_approved_mcp_call(self, request: ApprovedMcpCallInput) -> RunToolResult:
        """The MCP call a human approved, once (activities/standing_agents/mcp_tools); its
        outcome goes into the answer's event, which the episode then reads."""
        action, body = await heartbeating(self.mcp.approved_call(request, self._constitution))
        ok = action.outcome == ActionOutcome.OK
        text = body.get("output") if ok else body.get("error")
        shown = {
            "decisionId": request.decision_id,
            "tool": action.tool,
            "outcome": action.outcome.value,
            ("output" if ok else "error"): str(text or "")[: mcp_calls.EVENT_OUTPUT_MAX],
        }
        await asyncio.to_thread(mcp_calls.record_outcome, self.store, request.event_id, shown)
        transcript = agent_episode_stream(request.tenant, request.instance_id, request.event_id)
        await self._journal_action(transcript, action, request.op_id, body)
        return RunToolResult(
            action=action.model_copy(update={"summary": _summary(action.tool, body)})
        )

    async def _governed(self, request: RunToolInput) -> tuple[ActionRecord, dict[str, Any] | None]:
        """The checks, then the effect; (the bounded outcome, the full result)."""
        call = request.call

        def blocked(reason: str, broken: list[str] | None = None) -> ActionRecord:
            return ActionRecord(
                tool=call.name,
                arguments=call.arguments,
                outcome=ActionOutcome.BLOCKED,
                blocked_reason=reason,
                violations=broken or [],
            )

        def failed(error: str) -> tuple[ActionRecord, dict[str, Any]]:
            record = ActionRecord(
                tool=call.name, arguments=call.arguments, outcome=ActionOutcome.ERROR
            )
            return record, {"error": error}

        if request.exhausted_axis is not None:
            return blocked(f"{BLOCK_BUDGET}:{request.exhausted_axis}"), None
        mcp_tool: ResolvedTool | None = None
        if is_mcp_tool(call.name):
            admitted = await self.mcp.admit(
                request.tenant, request.agent_type, request.mode_tools, call.name
            )
            if isinstance(admitted, str):
                return blocked(admitted), None
            mcp_tool = admitted
            try:
                mcp_tool.tool.descriptor.validate(dict(call.arguments))
            except ToolArgumentsError as err:
                return failed(str(err))
        elif call.name not in tool_catalog.TOOLS:
            return blocked(BLOCK_UNKNOWN), None
        elif call.name not in request.mode_tools:
            return blocked(BLOCK_MODE), None
        else:
            problem = tool_catalog.argument_problem(call.name, call.arguments)
            if problem is not None:
                return failed(problem)
        refusal = await self._constitution(request.tenant, call.name, call.arguments)
        if refusal is not None:
            return blocked(*refusal), None
        context = tool_context.ToolContext(
            store=self.store,
            tenant=request.tenant,
            instance_id=request.instance_id,
            agent_type=request.agent_type,
            generation=request.generation,
            op_id=request.op_id,
            now=request.now,
            investigation_workspace=self.settings.agent_tools_workspace,
            workspace_root=Path(self.settings.workspace_cwd),
            data_dir=self.settings.resolved_data_dir,
        )
        if mcp_tool is not None:
            outcome, body, decision_id = await self.mcp.run(context, call, mcp_tool)
            if decision_id is not None:
                await self._journal_decision(
                    request.tenant, request.instance_id, decision_id, AttentionKind.MCP_CALL
                )
            record = ActionRecord(
                tool=call.name,
                arguments=call.arguments,
                outcome=outcome,
                decision_id=decision_id,
            )
            return record, body
        try:
            if call.name == "soa_propose_task":
                result = await heartbeating(
                    propose_task(self.store, self.settings, context, call.arguments)
                )
            elif call.name == "soa_assign_coder":
                result = await assign_coder(self.store, self.settings, context, call.arguments)
            else:
                result = await heartbeating(
                    asyncio.to_thread(tools.HANDLERS[call.name], context, call.arguments)
                )
        except tool_context.ToolInputError as err:
            return failed(str(err))
        except tool_context.BoundaryError as err:
            return blocked(f"{BLOCK_BOUNDARY}: {err}"), None
        await self._journal_effect(request, call.name, result)
        ok = ActionRecord(tool=call.name, arguments=call.arguments, outcome=ActionOutcome.OK)
        return ok, result

    async def _journal_action(
        self, transcript: str, action: ActionRecord, op_id: str, result: dict[str, Any] | None
    ) -> None:
        """The full result stays in the episode's journal (the complete-tick write copies
        it to the ledger's actions); history carries the bounded outcome only."""
        stored = {**action.model_dump(mode="json"), "opId": op_id, "result": result}
        await self.journal.aappend_many(
            transcript,
            [NewEvent(type=ACTION_ENTRY, data=stored)],
            dedupe_key=f"action/{op_id}",
        )

    async def _constitution(
        self, tenant: str, tool: str, arguments: dict[str, Any]
    ) -> tuple[str, list[str]] | None:
        """The constitution's verdict on a call: None, or (reason, the rules it breaks)."""
        configs = await asyncio.to_thread(ticks.tenant_configs, self.store, tenant)
        try:
            rules = parse_rules(configs.get(CONSTITUTION_KEY) or [])
        except ValueError:
            # Fail closed: rules that cannot be read block every governed call.
            return BLOCK_CONSTITUTION_INVALID, []
        broken = await self.constitution.check(rules, tool, arguments, CONSTITUTION_TIMEOUT_S)
        if broken is None:
            return BLOCK_CONSTITUTION_TIMEOUT, []  # fail closed
        if broken:
            return BLOCK_CONSTITUTION, broken
        return None

    async def _journal_effect(
        self, request: RunToolInput, tool: str, result: dict[str, Any]
    ) -> None:
        if tool == "soa_send_message":
            view = await asyncio.to_thread(
                messages.stored_message, self.store, str(result["messageId"])
            )
            if view is not None:
                await self.journal.aappend_many(
                    agent_stream(request.tenant, request.instance_id),
                    [NewEvent(type="agent.message", data=entry_data(view.model_dump(mode="json")))],
                    dedupe_key=f"message/{result['messageId']}",
                )
        elif tool in ("soa_propose_decision", "soa_propose_mode_change"):
            kind = "mode_change" if tool == "soa_propose_mode_change" else "decision"
            await self._journal_decision(
                request.tenant, request.instance_id, str(result["decisionId"]), kind
            )

    async def _journal_decision(
        self, tenant: str, instance_id: str, decision_id: str, kind: str
    ) -> None:
        data = {"decisionId": decision_id, "kind": kind, "status": "open", "event": "raised"}
        await self.journal.aappend_many(
            agent_stream(tenant, instance_id),
            [NewEvent(type="agent.decision", data=entry_data(data))],
            dedupe_key=f"decision/{decision_id}/raised",
        )


def _blocked_body(action: ActionRecord, result: dict[str, Any] | None) -> dict[str, Any]:
    if action.outcome == ActionOutcome.ERROR:
        return result or {"error": "the tool failed"}
    return {"blockedReason": action.blocked_reason, "violations": action.violations}


def _summary(tool: str, result: dict[str, Any] | None) -> str | None:
    """What history carries of a result: a phase tool's summary/reason, else its start."""
    if result is None:
        return None
    if tool in (PHASE_COMPLETE, PHASE_BLOCKED):
        text = result.get("summary") or result.get("reason")
        return str(text)[:ACTION_SUMMARY_MAX] if text else None
    return json.dumps(result, default=str)[:ACTION_SUMMARY_MAX]
