"""The activities of StandingAgentWorkflow: the tick's store work, model steps, tool calls.

Model steps and tool calls are regular activities (they cost money or have
effects) keyed by operation ids the workflow chose, so a retry finds what its
first attempt did: the stored reply (no second payment), the row written under
the op id (no second message, decision, artifact or task). The episode's
conversation lives in the journal (`agent_episode_stream`), never in history.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.llm import ChatMessage, ModelProvider
from activities.llm import record as llm_record
from activities.llm.gateway import LlmOwner, ModelGateway
from activities.llm.scripted import MODEL_NAME as SCRIPTED
from activities.mcp.calls import McpCalls
from activities.standing_agents.constitution_check import ConstitutionChecker
from activities.standing_agents.mcp_tools import AgentMcpTools
from activities.standing_agents.scripted_model import ScriptedAgentModel
from activities.standing_agents.tool_calls import StandingAgentToolActivities
from runtime.llm.config_store import load_chain_plan
from runtime.llm.contracts import AttemptOutcome, AttemptSpec, OwnerKind
from runtime.llm.cost_warning import AGENT_EVENT as COST_WARNING_EVENT
from runtime.llm.cost_warning import cost_warning
from runtime.llm.reservation import SpendRefusal, SpendRefused
from runtime.settings import Settings
from runtime.standing_agents import (
    budget_pause,
    control,
    episode,
    queue,
    spend,
    tick_cap,
    ticks,
    tool_catalog,
)
from runtime.standing_agents.agent_journal import entry_data
from runtime.standing_agents.catalog import PLANNING_SITE
from runtime.standing_agents.workflow_contracts import (
    ACTION_ENTRY,
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
    StandingAgentActivityContracts,
)
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import NewEvent
from runtime.streams import agent_episode_stream, agent_stream

# A pre-chain model step's failures Temporal may still retry (as it did before the chain).
_RETRYABLE = frozenset(
    {AttemptOutcome.RATE_LIMITED, AttemptOutcome.SERVER_ERROR, AttemptOutcome.TIMEOUT}
)


class StandingAgentActivities(StandingAgentToolActivities):
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
