"""One tick's episode of a standing agent: model steps through the site's model chain,
tool calls (each an activity keyed by its op id), approved MCP calls, until the model
completes, blocks, escalates or a budget axis stops it. `StandingAgentWorkflow`
(workflows/standing_agents/agent.py) is a `TickEpisode`: the loop, the tick's begin and
passivation live there, the episode here. The commands are issued in the same order as
when both were one module, so running agents replay unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from workflows import patches
from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.llm.contracts import ATTEMPT_START_TO_CLOSE, AttemptReport, AttemptSpec
    from runtime.standing_agents.catalog import (
        PHASE_BLOCKED,
        PHASE_COMPLETE,
        PLANNING_SITE,
    )
    from runtime.standing_agents.contracts import (
        ActionOutcome,
    )
    from runtime.standing_agents.tick_budget import (
        BudgetUsage,
        exhausted_axis,
    )
    from runtime.standing_agents.workflow_contracts import (
        ACTION_SUMMARY_MAX,
        HISTORY_GUARD_REASON,
        ActionRecord,
        ApprovedMcpCallInput,
        BeginTickResult,
        EventRef,
        InstanceView,
        ModelStepInput,
        ModelStepResult,
        RunToolInput,
        RunToolResult,
        StandingAgentActivityContracts,
        StandingAgentInput,
    )
    from workflows.llm.chain import ATTEMPT_RETRY, resolve_chain, run_chain

# An approved MCP call is bounded by its server's timeout (at most qwen-code's 600 s).
_MCP_CALL_TIMEOUT = timedelta(minutes=11)
# What a blocked turn keeps of the chain's failure (every attempt's provider and outcome).
CHAIN_FAILURE_MAX = 2000
# A model call costs money and may be slow: heartbeated, retried a few times.
_MODEL_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=5,
)
# Tool effects are idempotent by op id, so retrying is safe; a tool still failing after
# that many tries ends the episode (the turn records it) instead of wedging the agent.
_TOOL_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=20,
)


@dataclass
class EpisodeOutcome:
    """What an episode leaves for the ledger turn (small: tool calls and counters)."""

    actions: list[ActionRecord] = field(default_factory=list)
    llm_calls: int = 0
    llm_call_id: str | None = None
    served_model: str | None = None
    cost_usd: float = 0.0
    completed: bool = False
    blocked: bool = False
    # A real phase_blocked turn (or the history guard): what the STUCK guard counts.
    phase_blocked: bool = False
    summary: str | None = None
    wait_condition: str | None = None
    # The weekly credit ran out before a model call: when it regenerates.
    credit_stopped: bool = False
    credit_regenerates_at: datetime | None = None
    credit_reserve: float | None = None
    # The tick stopped at an axis of its budget: which, its cap and the tick's use of it.
    budget_axis: str | None = None
    budget_cap: float | None = None
    budget_spent: float | None = None


class _CreditStop(Exception):
    """The week's credit ran out before an attempt of the chain: no call was made."""

    def __init__(self, step: ModelStepResult) -> None:
        super().__init__("credit_exhausted")
        self.step = step


class TickEpisode:
    """The model steps and tool calls of one tick (a base of StandingAgentWorkflow; it
    keeps no state of its own)."""

    async def _model_step(self, request: ModelStepInput) -> ModelStepResult:
        result: ModelStepResult = await call_activity(
            StandingAgentActivityContracts.MODEL_STEP,
            request,
            start_to_close_timeout=timedelta(minutes=10),
            # Heartbeated every 2 s: a lost worker's call is retried within 10 s.
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=_MODEL_RETRY,
        )
        return result

    async def _chained_model_step(self, request: ModelStepInput) -> ModelStepResult:
        """One LLM call through its site's fallback chain: one activity per attempt.

        Raises:
            ApplicationError: the chain's failure (`run_chain`).
        """
        # A mode's preset, when set, wins over the type's site binding (§2.5, §3.7).
        plan = await resolve_chain(
            PLANNING_SITE[request.agent_type], preset_override=request.mode.preset_id
        )
        done: list[ModelStepResult] = []

        async def attempt(spec: AttemptSpec) -> AttemptReport:
            step: ModelStepResult = await call_activity(
                StandingAgentActivityContracts.MODEL_STEP,
                request.model_copy(update={"attempt": spec}),
                # Past it, /attempts calls a row still in flight a timeout.
                start_to_close_timeout=ATTEMPT_START_TO_CLOSE,
                # Heartbeated every 2 s: a lost worker's attempt times out within 10 s
                # and the chain makes the next one.
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=ATTEMPT_RETRY,
            )
            if step.credit_exhausted or step.report is None:
                raise _CreditStop(step)
            done.append(step)
            return step.report

        try:
            await run_chain(plan, request.call_id, attempt)
        except _CreditStop as stop:
            return stop.step
        return done[-1]

    async def _run_tool(self, request: RunToolInput) -> RunToolResult:
        result: RunToolResult = await call_activity(
            StandingAgentActivityContracts.RUN_TOOL,
            request,
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=_TOOL_RETRY,
        )
        return result

    async def _run_approved_mcp_call(
        self,
        request: StandingAgentInput,
        instance: InstanceView,
        event: EventRef,
        begin: BeginTickResult,
        decision_id: str,
    ) -> ActionRecord:
        """The MCP call a human approved, once; its outcome reaches the episode in the
        answer's event. A failure of the activity itself is the action's error."""
        try:
            ran: RunToolResult = await call_activity(
                StandingAgentActivityContracts.RUN_APPROVED_MCP_CALL,
                ApprovedMcpCallInput(
                    tenant=request.tenant,
                    instance_id=request.instance_id,
                    agent_type=request.agent_type,
                    generation=instance.generation,
                    event_id=event.event_id,
                    decision_id=decision_id,
                    mode_tools=begin.mode.tools if begin.mode is not None else [],
                ),
                start_to_close_timeout=_MCP_CALL_TIMEOUT,
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=_TOOL_RETRY,
            )
        except ActivityError as err:
            return ActionRecord(
                tool="mcp",
                outcome=ActionOutcome.ERROR,
                summary=_cause(err)[:ACTION_SUMMARY_MAX],
            )
        return ran.action

    async def _episode(
        self,
        request: StandingAgentInput,
        instance: InstanceView,
        event: EventRef,
        begin: BeginTickResult,
        *,
        tool_calls: int = 0,
    ) -> EpisodeOutcome:
        """LLM calls and tool calls until phase_complete / phase_blocked / the budget
        (`tool_calls`: what the tick already called before the episode)."""
        assert begin.mode is not None
        mode = begin.mode
        out = EpisodeOutcome()
        usage = BudgetUsage(tool_calls=tool_calls)
        started = workflow.now()
        prefix = f"agent/{request.tenant}/{request.instance_id}/{event.event_id}"
        nudged = False
        nudge_next = False
        tool_number = 0
        while True:
            usage.seconds = (workflow.now() - started).total_seconds()
            axis = exhausted_axis(begin.budget, usage)
            if axis is not None:
                out.wait_condition = f"budget_exhausted:{axis}"
                out.budget_axis = axis
                out.budget_cap = getattr(begin.budget, f"max_{axis}")
                out.budget_spent = float(getattr(usage, axis))
                return out
            if out.llm_calls >= request.max_model_turns:
                out.blocked = out.phase_blocked = True
                out.summary = HISTORY_GUARD_REASON
                out.wait_condition = f"blocked: {HISTORY_GUARD_REASON}"
                return out
            out.llm_calls += 1
            step_input = ModelStepInput(
                tenant=request.tenant,
                instance_id=request.instance_id,
                agent_type=request.agent_type,
                generation=instance.generation,
                event=event,
                mode=mode,
                call_id=f"{prefix}/llm{out.llm_calls}",
                step=out.llm_calls,
                nudge=nudge_next,
                max_output_tokens=begin.budget.max_output_tokens_per_turn,
                output_cap_fixed=begin.foundational,
                now=workflow.now(),
                # The foundational phase's dollar axis is the week's credit, which the
                # reservation checks live (a snapshot of what was left would be stale).
                tick_max_cost_usd=None if begin.foundational else begin.budget.max_cost_usd,
                tick_spent_usd=usage.cost_usd,
            )
            try:
                if workflow.patched(patches.LLM_CHAIN):
                    step = await self._chained_model_step(step_input)
                else:
                    step = await self._model_step(step_input)
            except ApplicationError as err:
                # Every provider of the chain failed (or refused the request): a blocked
                # turn naming each attempt; the agent waits for its next event, alive.
                out.blocked = True
                out.summary = str(err.message)[:CHAIN_FAILURE_MAX]
                out.wait_condition = f"blocked: {err.type or 'model_error'}"
                return out
            except ActivityError as err:
                # The provider refused (bad key, bad request) or kept failing: the turn
                # records it and the agent waits for its next event, alive.
                out.wait_condition = f"model_error: {_cause(err)}"[:200]
                return out
            if step.refusal is not None and not step.credit_exhausted:
                # The call's worst case does not fit what is left of the tick's dollars:
                # reserve before you spend, so the tick stops short of its cap.
                out.llm_calls -= 1  # no call was made
                out.wait_condition = f"budget_exhausted:{step.refusal.axis}"
                out.budget_axis = step.refusal.axis
                out.budget_cap = step.refusal.cap_usd
                out.budget_spent = step.refusal.spent_usd
                return out
            if step.credit_exhausted:
                out.llm_calls -= 1  # no call was made
                out.wait_condition = "credit_exhausted: waiting for the weekly window"
                out.credit_stopped = True
                out.credit_regenerates_at = step.credit_regenerates_at
                if step.refusal is not None:
                    out.credit_reserve = step.refusal.reserve_usd
                return out
            nudge_next = False
            usage.turns += 1
            usage.tokens += step.tokens
            usage.cost_usd += step.cost_usd
            out.cost_usd += step.cost_usd
            out.llm_call_id = step.call_id
            out.served_model = step.served_model
            if not step.tool_calls:
                if nudged:
                    out.wait_condition = "no tool call after the nudge"
                    return out
                nudged = nudge_next = True
                continue
            for call in step.tool_calls:
                usage.seconds = (workflow.now() - started).total_seconds()
                tool_number += 1
                try:
                    ran = await self._run_tool(
                        RunToolInput(
                            tenant=request.tenant,
                            instance_id=request.instance_id,
                            agent_type=request.agent_type,
                            generation=instance.generation,
                            event_id=event.event_id,
                            op_id=f"{prefix}/tool{tool_number}/{call.id}",
                            call=call,
                            mode_tools=mode.tools,
                            exhausted_axis=exhausted_axis(begin.budget, usage),
                            now=workflow.now(),
                        )
                    )
                except ActivityError as err:
                    out.actions.append(
                        ActionRecord(
                            tool=call.name,
                            arguments=call.arguments,
                            outcome=ActionOutcome.ERROR,
                            summary=_cause(err)[:ACTION_SUMMARY_MAX],
                        )
                    )
                    out.wait_condition = f"tool_failed: {call.name}"
                    return out
                usage.tool_calls += 1
                out.actions.append(ran.action)
                if ran.action.outcome != ActionOutcome.OK:
                    continue
                if call.name == PHASE_COMPLETE:
                    out.completed = True
                    out.summary = ran.action.summary
                    out.wait_condition = "next_event"
                    return out
                if call.name == PHASE_BLOCKED:
                    out.blocked = out.phase_blocked = True
                    out.summary = ran.action.summary
                    out.wait_condition = f"blocked: {out.summary}"
                    return out


def _cause(err: ActivityError) -> str:
    cause = err.cause
    return str(cause) if cause is not None else str(err)
