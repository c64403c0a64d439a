"""TurnWorkflow: one agent-tools turn, from the user's prompt to the published result.

USER → AGENT → PLAN → TOOL_REQUEST → TOOL_RESULT → AUTHORIZATION_REQUIRED → RESULT.
Every tool call is an activity; every event goes to the journal through a local
activity with a dedupe key, so a worker killed mid-turn neither loses nor
repeats an event. The wait at AUTHORIZATION_REQUIRED is a workflow condition:
it survives any restart, and only a human decision lets the turn finish. The
research route signals the decision (`research_decided`); the `resume` update's
validator decides on it whether the turn can resume; the turn then reads the
research's state from the store (`agent_tools.read_research`, the source of truth)
and publishes its result.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import SearchAttributePair
from temporalio.exceptions import ActivityError, ApplicationError

from runtime.search_attributes import starting
from workflows import patches
from workflows.activity_calls import call_activity
from workflows.agent_tools.steps import TOOL_RETRY, TurnSteps
from workflows.llm.model_failure import attempt_views, is_exhausted

with workflow.unsafe.imports_passed_through():
    from runtime.agent_tools.contracts import (
        TURN_STATE_QUERY,
        AgentToolsActivityContracts,
        CallSummary,
        ModelStepInput,
        ModelStepResult,
        ResearchDecided,
        ResumeRequest,
        TurnInput,
        TurnResult,
        TurnState,
        TurnStatus,
    )
    from runtime.agent_tools.errors import AuthorizationPending, ResearchDenied, TurnNotWaiting
    from runtime.investigation.research import decision_route
    from runtime.llm.contracts import (
        TURN_SITE,
        AttemptReport,
        AttemptSpec,
    )
    from runtime.streams import turn_transcript_stream
    from runtime.windows.lease_contracts import (
        SETTLE_SIGNAL,
        SettleRequest,
        lease_workflow_id,
        turn_holder,
    )
    from workflows.agent_tools.deterministic_agent import PLAN, next_step, summarize
    from workflows.agent_tools.turn_outcome import model_turn_outcome
    from workflows.llm.chain import ATTEMPT_RETRY, resolve_chain, run_chain


_GRANTED = ("authorized", "admitted", "running", "completed")
_MODEL_TIMEOUT = timedelta(minutes=5)


def turn_search_attributes(request: TurnInput) -> list[SearchAttributePair[Any]]:
    return starting("turn", request.workspace, status="running", mode=request.agent)


@workflow.defn(name="TurnWorkflow")
class TurnWorkflow(TurnSteps):
    def __init__(self) -> None:
        self._input: TurnInput | None = None
        self._status: TurnStatus = "running"
        self._history: list[CallSummary] = []
        self._events = 0
        self._research_id: str | None = None
        self._resume: ResumeRequest | None = None
        self._resumes = 0
        self._decided: ResearchDecided | None = None  # wakes a turn of the old protocol
        # research id -> the decision signalled
        self._decisions: dict[str, Literal["approve", "deny"]] = {}
        self._summary = ""
        self._result: TurnResult | None = None

    # -- messages ------------------------------------------------------------------------

    @workflow.query(name=TURN_STATE_QUERY)
    def state(self) -> TurnState:
        assert self._input is not None
        return TurnState(
            turn_id=self._input.turn_id,
            workspace=self._input.workspace,
            agent=self._input.agent,
            status=self._status,
            research_id=self._research_id,
            steps=len(self._history),
            summary=self._summary,
        )

    # An update, not a signal: the HTTP caller waits for the turn's answer, and the
    # validator refuses a resume the turn is not waiting for before it enters history.
    @workflow.update
    async def resume(self, request: ResumeRequest) -> TurnResult:
        self._resume = request
        self._status = "resuming"
        await workflow.wait_condition(lambda: self._status != "resuming")
        if self._result is None:
            # Waiting again: the store did not confirm the decision signalled.
            assert self._input is not None and self._research_id is not None
            raise AuthorizationPending(
                turn_id=self._input.turn_id, research_id=self._research_id
            ).application_error()
        return self._current_result()

    @resume.validator
    def _validate_resume(self, request: ResumeRequest) -> None:
        assert self._input is not None
        turn_id = self._input.turn_id
        research = self._research_id
        if self._status != "awaiting_authorization" or self._resume is not None or not research:
            raise TurnNotWaiting(turn_id=turn_id, status=self._status).application_error()
        decision = self._decisions.get(research)
        if decision is None:
            raise AuthorizationPending(turn_id=turn_id, research_id=research).application_error()
        if decision == "deny":
            raise ResearchDenied(turn_id=turn_id, research_id=research).application_error()

    # A signal from the research flow, never from the agent. It carries the decision, for
    # the resume validator; the turn still reads the state from the store before it ends.
    # Kept for any research id: a decision may come before the turn saw its research.
    @workflow.signal
    def research_decided(self, decided: ResearchDecided) -> None:
        self._decisions[decided.research_id] = decided.decision
        if decided.research_id == self._research_id:
            self._decided = decided

    # -- the turn ------------------------------------------------------------------------

    @workflow.run
    async def run(self, request: TurnInput) -> TurnResult:
        self._input = request
        await self._emit(
            "agent.turn.started", {"prompt": request.prompt[:1000], "agent": request.agent}
        )
        try:
            if request.agent == "model":
                await self._run_model_agent(request)
            else:
                await self._run_deterministic_agent(request)
            if self._research_id is not None:
                await self._await_authorization(request)
            elif self._status == "running":
                await self._finish("completed", "COMPLETED", summarize(self._history, None))
        except (ActivityError, ApplicationError) as err:
            if isinstance(err, ApplicationError) and not is_exhausted(err):
                raise
            await self._fail(request, err)
        if workflow.patched(patches.TURN_SETTLES_ITS_WINDOWS_LEASE):
            await self._settle_windows(request)
        assert self._result is not None
        return self._result

    async def _settle_windows(self, request: TurnInput) -> None:
        """The turn is the holder `turn-{turnId}` of a Windows lease in its workspace's
        tenant: its end releases the machine, if a client leased one for it."""
        lease = workflow.get_external_workflow_handle(
            lease_workflow_id(request.workspace, turn_holder(request.turn_id))
        )
        try:
            await lease.signal(SETTLE_SIGNAL, SettleRequest(reason="turn_finished"))
        except Exception:
            pass  # no lease for this turn: nothing is held

    async def _fail(self, request: TurnInput, err: ActivityError | ApplicationError) -> None:
        """`agent.error`: an activity failed, or every attempt of a model step did (the
        message names each attempt's provider, alias and outcome)."""
        payload: dict[str, Any]
        if isinstance(err, ApplicationError):
            message = err.message
            payload = {"message": message[:500], "attempts": attempt_views(err, camel=False)}
        else:
            message = str(err.cause or err)
            payload = {"message": message[:500]}
        await self._emit("agent.error", payload)
        self._status = "failed"
        await self._set_status("failed")
        self._result = TurnResult(turn_id=request.turn_id, status="failed", summary=message[:500])

    async def _run_deterministic_agent(self, request: TurnInput) -> None:
        await self._emit("agent.plan.updated", {"steps": PLAN, "agent": "deterministic"})
        while len(self._history) < request.max_steps:
            step = next_step(request.prompt, request.turn_id, self._history)
            if step is None:
                return
            summary = await self._call(step.tool_id, step.input, f"d{len(self._history)}")
            if await self._authorization_needed(summary):
                return

    async def _run_model_agent(self, request: TurnInput) -> None:
        stream = turn_transcript_stream(request.instance, request.workspace, request.turn_id)
        for step in range(request.max_steps):
            decision = await self._model_step(request, stream, step)
            if not decision.tool_calls:
                self._summary = decision.content[:2000]
                if self._research_id is None:
                    # A tool that failed and was never retried successfully: the model's
                    # answer cannot be trusted to say so, the turn does.
                    status, result, closing = model_turn_outcome(self._history, self._summary)
                    await self._finish(status, result, closing)
                return
            await self._emit(
                "agent.plan.updated",
                {
                    "steps": [c.name for c in decision.tool_calls],
                    "agent": "model",
                    "model": decision.served_model,
                },
            )
            for tool_call in decision.tool_calls:
                summary = await self._call(
                    tool_call.name,
                    tool_call.arguments,
                    f"m{step}-{tool_call.id}",
                    transcript=stream,
                    tool_call_id=tool_call.id,
                )
                if await self._authorization_needed(summary):
                    return
        await self._finish("completed", "COMPLETED", "Stopped after the step budget.")

    async def _model_step(self, request: TurnInput, stream: str, step: int) -> ModelStepResult:
        base = ModelStepInput(
            instance=request.instance,
            workspace=request.workspace,
            turn_id=request.turn_id,
            transcript_stream=stream,
            step=step,
        )
        if not workflow.patched(patches.MODEL_STEPS_WALK_THE_FALLBACK_CHAIN):
            # Turns started before the chain: one activity, retried by Temporal.
            before: ModelStepResult = await call_activity(
                AgentToolsActivityContracts.MODEL_STEP,
                base,
                start_to_close_timeout=_MODEL_TIMEOUT,
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=TOOL_RETRY,
            )
            return before
        # Turn:Model's chain, read now: a binding changed since the last step applies.
        plan = await resolve_chain(TURN_SITE)
        # The attempts' results, in order: the chain ends on the successful one.
        results: list[ModelStepResult] = []

        async def attempt(spec: AttemptSpec) -> AttemptReport:
            result: ModelStepResult = await call_activity(
                AgentToolsActivityContracts.MODEL_STEP,
                base.model_copy(update={"attempt": spec}),
                start_to_close_timeout=_MODEL_TIMEOUT,
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=ATTEMPT_RETRY,  # the chain owns retries
            )
            assert result.report is not None
            results.append(result)
            return result.report

        call_id = f"{workflow.info().workflow_id}/m{step}"
        await run_chain(plan, call_id, attempt)
        return results[-1]

    async def _authorization_needed(self, summary: CallSummary) -> bool:
        if summary.status != "AUTHORIZATION_REQUIRED":
            return False
        research = next((r.id for r in summary.object_refs if r.kind == "research"), None)
        if research is None:
            return False
        self._research_id = research
        # Waiting from now on (state only, no command). A client may resume as soon as it
        # reads the event below: the event is written by an activity, which runs only once
        # the workflow task that scheduled it is recorded, so any worker that takes the
        # turn afterwards rebuilds this state before it validates the resume. (Written by a
        # local activity, the event could be read while that task was still in flight: a
        # worker killed then left a history in which the turn was still running.)
        self._status = "awaiting_authorization"
        await self._emit(
            "agent.authorization.required",
            {
                "research_id": research,
                "decision_route": decision_route(research),
                "resume_route": "/api/v1/agent-tools/turns/"
                f"{self._input.turn_id if self._input else ''}/resume",
            },
            call_id=summary.call_id,
            refs=[{"kind": "research", "id": research}],
            durable=workflow.patched(patches.AUTHORIZATION_EVENT_AFTER_ITS_WAIT_IS_RECORDED),
        )
        return True

    async def _await_authorization(self, request: TurnInput) -> None:
        if not workflow.patched(patches.DECISION_SIGNAL_CARRIES_THE_DECISION):
            await self._await_authorization_v1(request)
            return
        assert self._research_id is not None
        research = self._research_id
        while True:
            if self._resume is None:  # else a resume came first: it is "resuming"
                self._status = "awaiting_authorization"
            await self._set_status("awaiting_authorization")
            # An approval waits for the resume (the spec: the UI asks for it); a denial
            # ends the turn at once.
            await workflow.wait_condition(
                lambda: self._resume is not None or self._decisions.get(research) == "deny"
            )
            state = await self._read_research()
            if state == "denied":
                await self._finish("denied", "DENIED", summarize(self._history, state))
                return
            if state in _GRANTED:
                if self._resume is not None:
                    await self._finish("completed", "COMPLETED", summarize(self._history, state))
                    return
                # Told "deny", but an approval is what the store holds (two deciders
                # raced, and the store has the one that was written).
                self._decisions[research] = "approve"
            else:
                # The decision signalled was never written (its route failed after the
                # signal): the turn waits for a decision again.
                self._decisions.pop(research, None)
            self._resume = None

    async def _await_authorization_v1(self, request: TurnInput) -> None:
        """The wait of turns started before the decision signal carried the decision (a
        patch), as they ran."""
        while True:
            if self._resume is None:
                self._status = "awaiting_authorization"
            await self._set_status("awaiting_authorization")
            await workflow.wait_condition(
                lambda: self._resume is not None or self._decided is not None
            )
            self._resumes += 1
            state = await self._research_state_v1(f"r{self._resumes}")
            if state == "denied":
                await self._finish("denied", "DENIED", summarize(self._history, state))
                return
            if state in _GRANTED and self._resume is not None:
                await self._finish("completed", "COMPLETED", summarize(self._history, state))
                return
            # Not decided yet (a resume that raced the decision): keep waiting.
            self._resume = None
            self._decided = None
