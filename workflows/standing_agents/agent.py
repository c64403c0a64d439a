"""StandingAgentWorkflow: one long-lived standing agent (spec standing-agents §3.3-§3.5).

Id `agent/{tenant}/{instanceId}`: Temporal's id uniqueness makes it the single
writer of the agent's turns. The store is the source of truth for status, mode,
generation and the event queue; the loop re-reads the instance at every turn:

    load the instance → not Active: wait for `wake` (no timer, costs nothing)
                      → a due event: tick it
                      → else: sleep until the next event's visible_at, or `wake`.

An Active agent always has exactly one future AgentTick heartbeat in the queue
(written by the next-event and complete-tick activities). A tick is: begin (the
lease CAS and what to decide on) → idle (hash unchanged: no LLM call) or an
episode (LLM calls and tool calls, each an activity keyed by an op id) → the
one passivation write. Transcripts stay in the journal; history holds ids,
counters and tool calls only, and the run continues as new before it grows.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from workflows import patches
from workflows.activity_calls import call_activity, call_local_activity
from workflows.standing_agents.episode import EpisodeOutcome, TickEpisode

with workflow.unsafe.imports_passed_through():
    from runtime.search_attributes import KIND, MODE, STATUS, TENANT
    from runtime.standing_agents.catalog import (
        ESCALATION_TOOLS,
        SIDE_EFFECT_TOOLS,
        default_mode,
    )
    from runtime.standing_agents.contracts import (
        ActionOutcome,
        AgentStatus,
        AgentType,
        EventKind,
        agent_workflow_id,
    )
    from runtime.standing_agents.decision_mapper import map_decision
    from runtime.standing_agents.plan_hash import forced_replan_due, is_idle_tick
    from runtime.standing_agents.schedules import EVENT_PREFIX as SCHEDULE_EVENT_PREFIX
    from runtime.standing_agents.stuck_guard import after_turn
    from runtime.standing_agents.tick_budget import (
        CREDIT_AXIS,
        TICK_COST_AXIS,
    )
    from runtime.standing_agents.workflow_contracts import (
        STATUS_QUERY,
        WAKE_SIGNAL,
        WORKFLOW_NAME,
        ActionRecord,
        AgentStatusView,
        BeginTickInput,
        BeginTickResult,
        BudgetReached,
        CarriedState,
        CompleteTickInput,
        CompleteTickResult,
        EventRef,
        InstanceView,
        LoadInstanceInput,
        NextEventInput,
        NextEventResult,
        ResumeInput,
        StandingAgentActivityContracts,
        StandingAgentInput,
    )
    from runtime.windows.lease_contracts import (
        SETTLE_SIGNAL,
        SettleRequest,
        agent_holder,
        lease_workflow_id,
    )

_THROTTLE_RETRY = timedelta(seconds=1)
_LOCAL = timedelta(minutes=1)
_MIN_WAIT = timedelta(milliseconds=20)
_STORE_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=30)
)


def agent_id(request: StandingAgentInput) -> str:
    return agent_workflow_id(request.tenant, request.instance_id)


@workflow.defn(name=WORKFLOW_NAME)
class StandingAgentWorkflow(TickEpisode):
    def __init__(self) -> None:
        self._woken = False
        self._view: AgentStatusView | None = None
        self._shown: tuple[str, str] | None = None
        self._agent_type = AgentType.SOA

    @workflow.signal(name=WAKE_SIGNAL)
    def wake(self) -> None:
        """The store changed (an event, a status, a mode): look again."""
        self._woken = True

    @workflow.query(name=STATUS_QUERY)
    def status(self) -> AgentStatusView | None:
        return self._view

    @workflow.run
    async def run(self, request: StandingAgentInput) -> None:
        self._agent_type = request.agent_type
        state = request.state or CarriedState()
        state = state.model_copy(update={"runs": state.runs + 1})
        view = AgentStatusView(instance_id=request.instance_id, status="", state=state)
        self._view = view
        workflow.upsert_search_attributes(
            [KIND.value_set("agent"), TENANT.value_set(request.tenant)]
        )
        ticks_this_run = 0
        while True:
            # Cleared before the read: a wake that lands after it is not lost.
            self._woken = False
            instance: InstanceView = await call_local_activity(
                StandingAgentActivityContracts.LOAD_INSTANCE,
                LoadInstanceInput(instance_id=request.instance_id),
                start_to_close_timeout=_LOCAL,
                retry_policy=_STORE_RETRY,
            )
            if not instance.exists:
                return  # the instance was deleted: nothing left to run
            self._show(instance)
            if self._continue_as_new_due(request, ticks_this_run):
                break
            if instance.status != AgentStatus.ACTIVE.value or not instance.feature_enabled:
                # Paused, closed, or its tenant's feature is off: no timer, only `wake`;
                # paused on the weekly credit, a durable timer until it regenerates.
                view.phase = "waiting"
                await self._wait_paused(request, instance)
                continue
            found: NextEventResult = await call_local_activity(
                StandingAgentActivityContracts.NEXT_EVENT,
                NextEventInput(
                    tenant=request.tenant,
                    instance_id=request.instance_id,
                    generation=instance.generation,
                    now=workflow.now(),
                ),
                start_to_close_timeout=_LOCAL,
                retry_policy=_STORE_RETRY,
            )
            if found.event is not None:
                view.phase = "ticking"
                view.current_event_id = found.event.event_id
                state = await self._tick(request, instance, found.event, state)
                view.state = state
                view.current_event_id = None
                ticks_this_run += 1
                continue
            view.phase = "sleeping"
            timeout = found.wake_at - workflow.now() if found.wake_at is not None else None
            if timeout is not None and timeout <= timedelta(0):
                continue
            if timeout is not None:
                # A sub-millisecond wait (clocks of µs precision) would be a 0 ms timer.
                timeout = max(timeout, _MIN_WAIT)
            try:
                await workflow.wait_condition(lambda: self._woken, timeout=timeout)
            except TimeoutError:
                pass
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(request.model_copy(update={"state": state}))

    async def _wait_paused(self, request: StandingAgentInput, instance: InstanceView) -> None:
        resume_at = instance.budget_resume_at
        if resume_at is None or instance.status != AgentStatus.PAUSED.value:
            await workflow.wait_condition(lambda: self._woken)
            return
        timeout = max(resume_at - workflow.now(), _MIN_WAIT)
        try:
            await workflow.wait_condition(lambda: self._woken, timeout=timeout)
            return  # woken: the loop looks again (a raised cap may have resumed it)
        except TimeoutError:
            pass
        await call_local_activity(
            StandingAgentActivityContracts.RESUME_REGENERATED,
            ResumeInput(
                instance_id=request.instance_id,
                generation=instance.generation,
                now=workflow.now(),
            ),
            start_to_close_timeout=_LOCAL,
            retry_policy=_STORE_RETRY,
        )

    def _continue_as_new_due(self, request: StandingAgentInput, ticks_this_run: int) -> bool:
        return (
            ticks_this_run >= request.max_ticks_per_run
            or workflow.info().is_continue_as_new_suggested()
        )

    def _show(self, instance: InstanceView) -> None:
        assert self._view is not None
        self._view.status = instance.status
        self._view.active_mode = instance.active_mode
        self._view.generation = instance.generation
        mode = instance.active_mode or default_mode(self._agent_type)
        shown = (instance.status, mode)
        if shown != self._shown:
            self._shown = shown
            workflow.upsert_search_attributes(
                [STATUS.value_set(instance.status), MODE.value_set(mode)]
            )

    async def _tick(
        self,
        request: StandingAgentInput,
        instance: InstanceView,
        event: EventRef,
        state: CarriedState,
    ) -> CarriedState:
        begin: BeginTickResult = await call_activity(
            StandingAgentActivityContracts.BEGIN_TICK,
            BeginTickInput(
                tenant=request.tenant,
                instance_id=request.instance_id,
                agent_type=request.agent_type,
                generation=instance.generation,
                event=event,
                now=workflow.now(),
            ),
            start_to_close_timeout=timedelta(minutes=1),
            retry_policy=_STORE_RETRY,
        )
        if not begin.leased:
            if begin.throttled and workflow.patched(patches.AGENT_TICK_CONCURRENCY_CAP):
                # The tenant runs its maximum of ticks (spec §3.2): wait (a durable timer,
                # jittered so the waiting agents do not all retry at once), then look again;
                # the event stays unconsumed.
                retry = _THROTTLE_RETRY * (1 + workflow.random().random())
                try:
                    await workflow.wait_condition(lambda: self._woken, timeout=retry)
                except TimeoutError:
                    pass
            return state  # stopped, reset, closed or throttled: the loop looks again
        idle = is_idle_tick(event.kind.value, begin.plan_hash, begin.previous_hash)
        planned = not idle or forced_replan_due(
            begin.consecutive_idle_ticks, begin.forced_replan_every
        )
        approved: ActionRecord | None = None
        if begin.approved_mcp_call is not None and workflow.patched(
            patches.AGENT_APPROVED_MCP_CALL
        ):
            approved = await self._run_approved_mcp_call(
                request, instance, event, begin, begin.approved_mcp_call
            )
        result = EpisodeOutcome()
        not_before = None
        mode_name = begin.mode.name if begin.mode is not None else instance.active_mode
        if not planned:
            result.wait_condition = "idle: nothing changed since the last tick"
        elif begin.mode is None:
            # Fail closed: an unresolvable mode is a blocked turn with no LLM call.
            result.blocked = True
            result.summary = begin.mode_error
            result.wait_condition = "mode_unresolved"
        elif not begin.credit_ok:
            result.wait_condition = "credit_exhausted: waiting for the weekly window"
            result.credit_stopped = True
            result.credit_regenerates_at = begin.credit_regenerates_at
        else:
            result = await self._episode(
                request, instance, event, begin, tool_calls=1 if approved else 0
            )
        if approved is not None:
            result.actions.insert(0, approved)
        if result.credit_stopped:
            not_before = result.credit_regenerates_at
        # Only a heartbeat is consumed unanswered when the credit is spent; anything else
        # waits, unconsumed, for the window to regenerate: a schedule's tick too (its note
        # asks for work; no history before schedules has one, so replays are unchanged).
        defer = (
            result.credit_stopped
            and result.llm_calls == 0
            and (
                event.kind != EventKind.AGENT_TICK
                or event.event_id.startswith(SCHEDULE_EVENT_PREFIX)
            )
        )
        decision = map_decision(
            event.kind,
            llm_called=result.llm_calls > 0,
            escalated=_any_ok(result.actions, ESCALATION_TOOLS) or _any_decision(result.actions),
            acted_with_tool=_any_ok(result.actions, SIDE_EFFECT_TOOLS)
            or (approved is not None and approved.outcome == ActionOutcome.OK),
            completed=result.completed,
            blocked=result.blocked,
        )
        verdict = after_turn(
            # An unresolvable mode is blocked but not the agent's doing: only phase_blocked
            # (and the history guard) count towards STUCK, and a tick with no model call
            # leaves the count as it was.
            blocked=result.phase_blocked,
            consecutive_blocked=begin.consecutive_blocked_turns,
            max_blocked=begin.max_blocked_turns,
            enforce=begin.enforce_stuck_guard,
            planned=result.llm_calls > 0
            or not workflow.patched(patches.STUCK_GUARD_COUNTS_PLANNED_TURNS),
        )
        done: CompleteTickResult = await call_activity(
            StandingAgentActivityContracts.COMPLETE_TICK,
            CompleteTickInput(
                tenant=request.tenant,
                instance_id=request.instance_id,
                generation=instance.generation,
                event=event,
                now=workflow.now(),
                decision_kind=decision,
                plan_hash=begin.plan_hash,
                active_mode=mode_name,
                actions=result.actions,
                wait_condition=result.wait_condition,
                reasoning_summary=result.summary,
                llm_call_id=result.llm_call_id,
                served_model=result.served_model,
                cost_usd=result.cost_usd,
                consecutive_idle_ticks=0 if planned else begin.consecutive_idle_ticks + 1,
                consecutive_blocked_turns=verdict.consecutive_blocked,
                close_stuck=verdict.close,
                stuck_reason=result.summary,
                not_before=not_before,
                defer=defer,
                budget_reached=_budget_reached(result, begin),
            ),
            start_to_close_timeout=timedelta(minutes=1),
            retry_policy=_STORE_RETRY,
        )
        # Closed by the STUCK guard, or by a loop guard the store applies (the result says).
        if (verdict.close or done.closed) and workflow.patched(
            patches.STUCK_CLOSE_SETTLES_WINDOWS_LEASE
        ):
            await _settle_windows(request.tenant, request.instance_id)
        return state.model_copy(
            update={
                "ticks_total": state.ticks_total + 1,
                "llm_calls_total": state.llm_calls_total + result.llm_calls,
                "tool_calls_total": state.tool_calls_total + len(result.actions),
            }
        )


def _budget_reached(result: EpisodeOutcome, begin: BeginTickResult) -> BudgetReached | None:
    """What the tick stopped at, if a budget: the agent pauses on it (issue 21, item 9)."""
    if result.credit_stopped:
        return BudgetReached(
            axis=CREDIT_AXIS,
            resume_at=result.credit_regenerates_at,
            reserve=result.credit_reserve,
        )
    if result.budget_axis is None:
        return None
    if begin.foundational and result.budget_axis == TICK_COST_AXIS:
        # The foundational phase's dollar axis is what was left of the week's credit.
        return BudgetReached(axis=CREDIT_AXIS)
    return BudgetReached(axis=result.budget_axis, cap=result.budget_cap, spent=result.budget_spent)


def _any_ok(actions: list[ActionRecord], names: frozenset[str]) -> bool:
    return any(a.outcome == ActionOutcome.OK and a.tool in names for a in actions)


def _any_decision(actions: list[ActionRecord]) -> bool:
    """A call became a decision on the queue (an MCP tool awaiting approval)."""
    return any(a.outcome == ActionOutcome.OK and a.decision_id is not None for a in actions)


async def _settle_windows(tenant: str, instance_id: str) -> None:
    """Release the agent's Windows lease, if a client took one for it."""
    lease = workflow.get_external_workflow_handle(
        lease_workflow_id(tenant, agent_holder(instance_id))
    )
    try:
        await lease.signal(SETTLE_SIGNAL, SettleRequest(reason="agent_closed"))
    except Exception:
        pass  # no lease for this agent: nothing is held
