"""The activities of StandingAgentWorkflow: the tick's store work, model steps, tool calls.

Model steps and tool calls are regular activities (they cost money or have
effects) keyed by operation ids the workflow chose, so a retry finds what its
first attempt did: the stored reply (no second payment), the row written under
the op id (no second message, decision, artifact or task). The episode's
conversation lives in the journal (`agent_episode_stream`), never in history.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import ChatMessage, ModelProvider
from activities.llm import record as llm_record
from activities.llm.gateway import LlmOwner, ModelGateway
from activities.llm.scripted import MODEL_NAME as SCRIPTED
from activities.llm.scripted_agent import ScriptedAgentModel
from activities.mcp.calls import McpCalls, ResolvedTool
from activities.standing_agents.constitution_check import ConstitutionChecker
from activities.standing_agents.mcp_tools import AgentMcpTools
from activities.standing_agents.tasks import assign_coder, propose_task
from runtime.llm.config_store import load_chain_plan
from runtime.llm.cost_warning import AGENT_EVENT as COST_WARNING_EVENT
from runtime.llm.cost_warning import cost_warning
from runtime.llm.reservation import SpendRefusal, SpendRefused
from runtime.llm.routing import AttemptOutcome, AttemptSpec, OwnerKind
from runtime.mcp.names import is_mcp_tool
from runtime.policy.constitution import CONSTITUTION_KEY, parse_rules
from runtime.settings import Settings
from runtime.standing_agents import (
    budget_pause,
    control,
    episode,
    mcp_calls,
    queue,
    spend,
    tick_cap,
    ticks,
    tool_catalog,
    tools,
)
from runtime.standing_agents.agent_journal import entry_data
from runtime.standing_agents.catalog import PHASE_BLOCKED, PHASE_COMPLETE, PLANNING_SITE
from runtime.standing_agents.contracts import ActionOutcome, AttentionKind
from runtime.standing_agents.workflow_contracts import (
    ACTION_ENTRY,
    ACTION_SUMMARY_MAX,
    ActionRecord,
    ApprovedMcpCallInput,
    BeginTickInput,
    BeginTickResult,
    BudgetRefusal,
    CompleteTickInput,
    CompleteTickResult,
    InstanceView,
    LoadInstanceInput,
    ModelStepInput,
    ModelStepResult,
    NextEventInput,
    NextEventResult,
    ResumeInput,
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
# A pre-chain model step's failures Temporal may still retry (as it did before the chain).
_RETRYABLE = frozenset(
    {AttemptOutcome.RATE_LIMITED, AttemptOutcome.SERVER_ERROR, AttemptOutcome.TIMEOUT}
)
RESULT_LIMIT = 4000


class StandingAgentActivities:
    def __init__(
        self,
        store: Store,
        journal: EventJournal,
        provider: ModelProvider,
        settings: Settings,
        mcp: McpCalls | None = None,
    ) -> None:
        self.store = store
        self.journal = journal
        self.provider = provider
        self.settings = settings
        # The sessions' scripted model answers prompts; agents need one that ends episodes.
        own = ScriptedAgentModel() if provider.name == SCRIPTED else provider
        self.gateway = ModelGateway(store, settings, scripted=own, purpose=llm_record.AGENT_PURPOSE)
        self.constitution = ConstitutionChecker()
        self.mcp = AgentMcpTools(mcp, store)

    # --- the loop (local activities) -----------------------------------------------------

    @StandingAgentActivityContracts.LOAD_INSTANCE.defn
    async def load_instance(self, request: LoadInstanceInput) -> InstanceView:
        return await asyncio.to_thread(
            ticks.load_instance, self.store, self.settings, request.instance_id
        )

    @StandingAgentActivityContracts.NEXT_EVENT.defn
    async def next_event(self, request: NextEventInput) -> NextEventResult:
        return await asyncio.to_thread(
            ticks.next_event,
            self.store,
            self.settings,
            request.tenant,
            request.instance_id,
            request.generation,
            request.now,
        )

    # --- the tick ------------------------------------------------------------------------

    @StandingAgentActivityContracts.BEGIN_TICK.defn
    async def begin_tick(self, request: BeginTickInput) -> BeginTickResult:
        return await asyncio.to_thread(ticks.begin_tick, self.store, self.settings, request)

    @StandingAgentActivityContracts.COMPLETE_TICK.defn
    async def complete_tick(self, request: CompleteTickInput) -> CompleteTickResult:
        stored = await self._stored_actions(request) if request.actions else {}
        done = await asyncio.to_thread(
            ticks.complete_tick, self.store, self.settings, request, stored
        )
        stream = agent_stream(request.tenant, request.instance_id)
        if done.turn:
            await self.journal.aappend_many(
                stream,
                [NewEvent(type="agent.turn", data=entry_data(done.turn))],
                dedupe_key=f"turn/{request.event.event_id}",
            )
        if done.result.closed:
            status = {"instanceId": request.instance_id, "status": "Closed", "reason": "stuck"}
            await self.journal.aappend_many(
                stream,
                [NewEvent(type="agent.status", data=entry_data(status))],
                dedupe_key=f"status/{request.event.event_id}",
            )
        if done.stuck_decision_id is not None:
            await self._journal_decision(
                request.tenant, request.instance_id, done.stuck_decision_id, "stuck"
            )
        if done.budget_decision_id is not None:
            paused = {
                "instanceId": request.instance_id,
                "status": "Paused",
                "reason": "budget_reached",
                "axis": done.budget_axis or "",
            }
            await self.journal.aappend_many(
                stream,
                [NewEvent(type="agent.status", data=entry_data(paused))],
                dedupe_key=f"status/{request.event.event_id}",
            )
            await self._journal_decision(
                request.tenant, request.instance_id, done.budget_decision_id, "budget_reached"
            )
        return done.result

    @StandingAgentActivityContracts.RESUME_REGENERATED.defn
    async def resume_regenerated(self, request: ResumeInput) -> bool:
        """The weekly credit's window regenerated: the agent paused on it resumes."""
        resumed = await asyncio.to_thread(
            budget_pause.resume_if_lifted,
            self.store,
            self.settings,
            request.instance_id,
            request.now,
        )
        if resumed is None:
            return False
        await asyncio.to_thread(control.journal_status, self.journal, resumed)
        return True

    async def _stored_actions(self, request: CompleteTickInput) -> dict[str, dict[str, Any]]:
        """The full results the tool activities wrote to the episode journal, by op id."""
        transcript = agent_episode_stream(
            request.tenant, request.instance_id, request.event.event_id
        )
        entries = (await self.journal.aread(transcript, 0, 100_000)).entries
        return {str(e.data.get("opId")): dict(e.data) for e in entries if e.type == ACTION_ENTRY}

    # --- the episode ---------------------------------------------------------------------

    @StandingAgentActivityContracts.MODEL_STEP.defn
    async def model_step(self, request: ModelStepInput) -> ModelStepResult:
        """One attempt of one LLM call of the episode (`request.attempt`, chosen by the
        workflow's chain): paid once per call, whatever the attempts.

        A request without `attempt` (scheduled by a workflow from before the chain) is
        its own single attempt, numbered by the activity's attempt, and raises on a
        failure as it did then, so that Temporal's retries still apply to it.
        """
        spec = request.attempt or await self._legacy_attempt(request)
        # The tick is at work: its lease stays fresh against the tenant's tick cap.
        await asyncio.to_thread(
            tick_cap.refresh_tick_lease,
            self.store,
            request.instance_id,
            request.generation,
            request.now,
        )
        stored = await asyncio.to_thread(llm_record.stored_reply, self.store, request.call_id)
        transcript = agent_episode_stream(
            request.tenant, request.instance_id, request.event.event_id
        )
        messages: list[ChatMessage] = []
        if stored is None:
            # The week's credit, re-checked before every call against the spend so far.
            gate = await asyncio.to_thread(
                spend.credit_gate, self.store, self.settings, request.tenant, request.now
            )
            if not gate.ok:
                return ModelStepResult(
                    credit_exhausted=True,
                    credit_regenerates_at=gate.regenerates_at,
                    call_id=request.call_id,
                )
            messages = await self._messages(request, transcript)
        # With a stored reply the gateway returns it at once (the messages are not read).
        owner = LlmOwner(OwnerKind.AGENT, request.instance_id, request.tenant)
        offered = tool_catalog.specs_for(request.mode.tools)
        if stored is None:
            offered += await self.mcp.specs(request.tenant, request.agent_type, request.mode.tools)
        # Reserve before you spend: the attempt's worst case must fit the tick's dollars
        # and the week's credit, beside the tenant's other calls in flight.
        reserve = spend.AgentSpendGate(
            settings=self.settings,
            tenant=request.tenant,
            now=request.now,
            tick_cap_usd=request.tick_max_cost_usd,
            tick_spent_usd=request.tick_spent_usd,
            tick_call_prefix=request.call_id.rsplit("/", 1)[0] + "/",
        )
        try:
            report, reply = await self.gateway.attempt(
                spec,
                owner,
                messages,
                offered,
                max_tokens=request.max_output_tokens,
                overlay_may_lower=not request.output_cap_fixed,
                now=request.now,
                gate=reserve,
            )
        except SpendRefused as refused:
            return _refused(request.call_id, refused.refusal)
        if reply is None:
            if request.attempt is None:
                retryable = report.outcome in _RETRYABLE
                raise ApplicationError(
                    report.error or report.outcome.value,
                    type="ModelError",
                    non_retryable=not retryable,
                )
            return ModelStepResult(call_id=request.call_id, report=report)
        warning = cost_warning(spec, report)
        if warning is not None:
            # Once per attempt, a retry with the stored reply included (its report says
            # the same): the operator sees that the credit is spent at a guessed price.
            body = {"instanceId": request.instance_id, "callId": request.call_id, **warning}
            await self.journal.aappend_many(
                agent_stream(request.tenant, request.instance_id),
                [NewEvent(type=COST_WARNING_EVENT, data=entry_data(body))],
                dedupe_key=f"cost/{report.attempt_id}",
            )
        answer = ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        await self.journal.aappend_many(
            transcript,
            [NewEvent(type="message", data=answer.model_dump(mode="json"))],
            dedupe_key=f"assistant/{request.step}",
        )
        return ModelStepResult(
            tool_calls=reply.tool_calls,
            tokens=reply.usage.prompt_tokens + reply.usage.completion_tokens,
            cost_usd=report.cost_usd,
            served_model=reply.served_model,
            call_id=request.call_id,
            report=report,
        )

    async def _legacy_attempt(self, request: ModelStepInput) -> AttemptSpec:
        site = PLANNING_SITE[request.agent_type]
        plan = await asyncio.to_thread(load_chain_plan, self.store, self.settings, site)
        entry = plan.entries[0]
        return AttemptSpec(
            call_id=request.call_id,
            attempt_index=activity.info().attempt,
            site=plan.site,
            preset_id=plan.preset_id,
            fallback_step=0,
            provider=entry.provider,
            credential_alias=entry.credential_aliases[0],
            model=entry.model,
        )

    async def _messages(self, request: ModelStepInput, transcript: str) -> list[ChatMessage]:
        """The episode's conversation so far, opening and nudge written first (once)."""
        if request.step == 1:
            row = await asyncio.to_thread(ticks.event_row, self.store, request.event.event_id)
            if row is None:
                raise ApplicationError("the event is gone", non_retryable=True)
            opening = await asyncio.to_thread(
                episode.opening,
                self.store,
                tenant=request.tenant,
                instance_id=request.instance_id,
                agent_type=request.agent_type,
                generation=request.generation,
                event=queue.to_event(row),
                mode=request.mode,
                now=request.now,
            )
            await self.journal.aappend_many(
                transcript,
                [NewEvent(type="message", data=m.model_dump(mode="json")) for m in opening],
                dedupe_key="opening",
            )
        if request.nudge:
            nudge = ChatMessage(role="user", content=episode.NUDGE)
            await self.journal.aappend_many(
                transcript,
                [NewEvent(type="message", data=nudge.model_dump(mode="json"))],
                dedupe_key=f"nudge/{request.step}",
            )
        entries = (await self.journal.aread(transcript, 0, 100_000)).entries
        return [ChatMessage.model_validate(e.data) for e in entries if e.type == "message"]

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
        context = tools.ToolContext(
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
        except tools.ToolInputError as err:
            return failed(str(err))
        except tools.BoundaryError as err:
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
            row = await asyncio.to_thread(
                tools.stored_message_row, self.store, str(result["messageId"])
            )
            if row is not None:
                await self.journal.aappend_many(
                    agent_stream(request.tenant, request.instance_id),
                    [NewEvent(type="agent.message", data=entry_data(row))],
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


def _refused(call_id: str, refusal: SpendRefusal) -> ModelStepResult:
    """No call was made: the reservation did not fit the tick or the week."""
    weekly = refusal.axis == spend.CREDIT_AXIS
    return ModelStepResult(
        call_id=call_id,
        credit_exhausted=weekly,
        credit_regenerates_at=refusal.regenerates_at if weekly else None,
        refusal=BudgetRefusal(
            axis=refusal.axis,
            cap_usd=refusal.cap_usd,
            spent_usd=refusal.spent_usd,
            reserve_usd=refusal.reserve_usd,
        ),
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
