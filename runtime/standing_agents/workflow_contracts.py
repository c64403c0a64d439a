"""What crosses the boundary between StandingAgentWorkflow and its activities.

The workflow calls activities by NAME (`StandingAgentActivity`), never importing
them. Payloads are small: ids, counters, tool calls and outcomes. Transcripts,
memory, the ops digest and tool results stay in the store and the journal
(`agent_episode_stream`), so a months-long agent's history holds none of them.

How the control side (the API) drives the workflow:
- it writes the store first (the `agent_instances` row, events in
  `agent_event_queue`), then starts the workflow with `StandingAgentInput` (id
  `agent_workflow_id(tenant, instance_id)`, WorkflowAlreadyStarted is fine) or
  sends it the signal `wake` (no payload);
- the workflow re-reads the instance row at every loop, so status, mode and
  generation changes need nothing but `wake`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, Field

from runtime.activity_contract import ActivityContract
from runtime.llm.contracts import AttemptReport, AttemptSpec, ToolCall
from runtime.standing_agents.contracts import (
    ActionOutcome,
    AgentType,
    DecisionKind,
    EventKind,
    ModeDefinition,
    TickBudget,
)

# The workflow type, its one signal and its query, by name (the API starts and wakes it).
WORKFLOW_NAME = "StandingAgentWorkflow"
WAKE_SIGNAL = "wake"
STATUS_QUERY = "status"
# Ticks between two continue-as-new when the server does not suggest one earlier.
DEFAULT_TICKS_PER_RUN = 500
# History guard (every phase, whatever the budget): an episode ends blocked with reason
# HISTORY_GUARD_REASON after this many model turns, so one episode's history stays bounded
# even when every budget axis is unlimited (the foundational phase).
MAX_MODEL_TURNS_PER_EPISODE = 200
HISTORY_GUARD_REASON = "history_guard"
# What a tool call's outcome carries through history: a bounded summary of its result
# (the full result is in the episode journal, `ACTION_ENTRY` entries, keyed by op id).
ACTION_SUMMARY_MAX = 500
ACTION_ENTRY = "action"


class StandingAgentActivity(StrEnum):
    """The standing-agent activities, by name: activities/standing_agents/ implements
    them, and StandingAgentWorkflow calls them by these names."""

    LOAD_INSTANCE = "agent.load_instance"  # local
    NEXT_EVENT = "agent.next_event"  # local
    BEGIN_TICK = "agent.begin_tick"
    MODEL_STEP = "agent.model_step"
    RUN_TOOL = "agent.run_tool"
    # An MCP call a human approved on the decision queue, run once under the decision's id.
    RUN_APPROVED_MCP_CALL = "agent.run_approved_mcp_call"
    COMPLETE_TICK = "agent.complete_tick"
    # An agent paused on the weekly credit resumes when the window regenerates (local).
    RESUME_REGENERATED = "agent.resume_regenerated"


class CarriedState(BaseModel):
    """What survives continue-as-new: the workflow's own counters (the rest is in the store)."""

    ticks_total: int = 0
    llm_calls_total: int = 0
    tool_calls_total: int = 0
    runs: int = 0


class StandingAgentInput(BaseModel):
    """StandingAgentWorkflow's input: the agent, and the counters a run hands the next
    one across continue-as-new (`state`; None for the first run)."""

    tenant: str
    instance_id: str
    agent_type: AgentType
    state: CarriedState | None = None
    # Continue-as-new after this many ticks in one run (the server may suggest it earlier).
    max_ticks_per_run: int = DEFAULT_TICKS_PER_RUN
    # The history guard's model turns per episode (tests lower it; see the constant).
    max_model_turns: int = MAX_MODEL_TURNS_PER_EPISODE


class InstanceView(BaseModel):
    """The instance row as the loop needs it (re-read at every iteration)."""

    exists: bool = True
    status: str = ""
    # False when the tenant's `standing-agents` feature is off: the agent does not tick.
    feature_enabled: bool = True
    active_mode: str | None = None
    generation: int = 0
    # Paused on the weekly credit: when its window regenerates and the agent resumes.
    budget_resume_at: datetime | None = None


class LoadInstanceInput(BaseModel):
    """LOAD_INSTANCE's argument: the instance whose row the loop reads."""

    instance_id: str


class ResumeInput(BaseModel):
    """Resume an agent paused on the weekly credit once its window regenerated."""

    instance_id: str
    generation: int
    now: datetime


class BudgetReached(BaseModel):
    """A tick stopped at a budget (issue 21, item 9): the agent pauses on it.

    `cap` and `spent` are in the axis's unit (tokens, tool calls, seconds, dollars,
    turns); for the weekly credit the store fills them in at the pause."""

    axis: str
    cap: float | None = None
    spent: float | None = None
    # The weekly credit's regeneration: the agent resumes then by itself.
    resume_at: datetime | None = None
    # The worst case of the call the credit refused (it must fit when the agent resumes).
    reserve: float | None = None


class NextEventInput(BaseModel):
    """NEXT_EVENT's argument: the agent's next event due at `now`, in its generation
    `generation` (after a reset, the old generation finds none)."""

    tenant: str
    instance_id: str
    generation: int
    now: datetime


class EventRef(BaseModel):
    """An event as it crosses history: its identity only (activities read the payload)."""

    event_id: str
    sequence_number: int
    kind: EventKind


class NextEventResult(BaseModel):
    """NEXT_EVENT's result: the event to tick on, or when to look again."""

    event: EventRef | None = None
    # When the next event (at least the heartbeat) falls due; None: nothing pending.
    wake_at: datetime | None = None


class BeginTickInput(BaseModel):
    """BEGIN_TICK's argument: the tick on `event`, for the agent's generation `generation`."""

    tenant: str
    instance_id: str
    agent_type: AgentType
    generation: int
    event: EventRef
    now: datetime


class BeginTickResult(BaseModel):
    """The lease was taken (or not), and what the tick needs to decide."""

    leased: bool
    # Not leased because the tenant runs its maximum of ticks: wait, then try again.
    throttled: bool = False
    plan_hash: str = ""
    previous_hash: str | None = None
    consecutive_idle_ticks: int = 0
    consecutive_blocked_turns: int = 0
    forced_replan_every: int = 20
    max_blocked_turns: int = 3
    enforce_stuck_guard: bool = True
    # Mode resolution (fail-closed): either a mode or the reason there is none.
    mode: ModeDefinition | None = None
    mode_error: str | None = None
    budget: TickBudget = Field(default_factory=TickBudget)
    foundational: bool = False
    credit_ok: bool = True
    # When the oldest spend leaves the credit window (the gate reopens), if exhausted.
    credit_regenerates_at: datetime | None = None
    # The event answers an MCP call's decision with approve: the call to run, once.
    approved_mcp_call: str | None = None


class ModelStepInput(BaseModel):
    """MODEL_STEP's argument: the `step`-th model call of the tick on `event`, under the
    tick's mode and budget."""

    tenant: str
    instance_id: str
    agent_type: AgentType
    generation: int
    event: EventRef
    mode: ModeDefinition
    call_id: str  # agent/{tenant}/{id}/{event_id}/llm{n}
    step: int
    nudge: bool = False  # append the synthetic nudge before asking
    max_output_tokens: int | None = None
    # The foundational phase's cap: a preset overlay's maxOutputTokens does not lower it.
    output_cap_fixed: bool = False
    now: datetime
    # The attempt of the call's fallback chain this step makes (None: a step scheduled
    # before the chain existed, its own single attempt).
    attempt: AttemptSpec | None = None
    # The tick's dollar axis (None: unlimited) and what the tick spent before this call:
    # the attempt's worst case is reserved against it (runtime/standing_agents/spend.py).
    tick_max_cost_usd: float | None = None
    tick_spent_usd: float = 0.0


class BudgetRefusal(BaseModel):
    """A model call not made because its worst case did not fit a budget."""

    axis: str  # "cost_usd" (the tick's dollars) | "weekly_credit"
    cap_usd: float
    spent_usd: float
    reserve_usd: float


class ModelStepResult(BaseModel):
    """MODEL_STEP's result: the tool calls the model asked for and what the call cost,
    or why no call was made (the weekly credit, a budget's refusal)."""

    # Set when the weekly credit was spent (or cannot hold this call's worst case) before
    # this call: no call was made.
    credit_exhausted: bool = False
    credit_regenerates_at: datetime | None = None
    # Set when a budget refused this call's reservation: no call was made.
    refusal: BudgetRefusal | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tokens: int = 0
    cost_usd: float = 0.0
    served_model: str | None = None
    call_id: str
    # How the attempt ended (no tool calls unless ok); None when no attempt was made.
    report: AttemptReport | None = None


class RunToolInput(BaseModel):
    """RUN_TOOL's argument: one tool call of the tick's episode, run under the operation
    id `op_id`, checked against the mode's tools (`mode_tools`)."""

    tenant: str
    instance_id: str
    agent_type: AgentType
    generation: int
    event_id: str
    op_id: str  # agent/{tenant}/{id}/{event_id}/tool{n}/{call_id}
    call: ToolCall
    mode_tools: list[str]
    # Set when the tick's budget is spent: the call is recorded blocked, not run.
    exhausted_axis: str | None = None
    now: datetime


class ActionRecord(BaseModel):
    """One tool call of a turn and its bounded outcome (what history carries).

    The full result is written by the tool activity to the episode journal under
    `op_id`; the complete-tick write copies it into `agent_state_ledger_actions`.
    """

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    outcome: ActionOutcome
    blocked_reason: str | None = None
    violations: list[str] = Field(default_factory=list)
    op_id: str | None = None
    # At most ACTION_SUMMARY_MAX characters (phase tools: their summary or reason).
    summary: str | None = None
    # The call became a decision on the tenant's queue (an MCP tool not read-only).
    decision_id: str | None = None


class RunToolResult(BaseModel):
    """RUN_TOOL's and RUN_APPROVED_MCP_CALL's result: the call and its bounded outcome."""

    action: ActionRecord


class ApprovedMcpCallInput(BaseModel):
    """Run the MCP call a decision proposed, once: `op_id` derives from the decision."""

    tenant: str
    instance_id: str
    agent_type: AgentType
    generation: int
    event_id: str
    decision_id: str
    # The tick's mode's toolset (none when the mode did not resolve: nothing runs).
    mode_tools: list[str] = Field(default_factory=list)

    @property
    def op_id(self) -> str:
        """The call's operation id, derived from its decision (so it runs once)."""
        return f"agent-mcp/{self.tenant}/{self.decision_id}"


class CompleteTickInput(BaseModel):
    """The single passivation write of a tick (idempotent by event id)."""

    tenant: str
    instance_id: str
    generation: int
    event: EventRef
    now: datetime
    decision_kind: DecisionKind
    plan_hash: str
    active_mode: str | None = None
    actions: list[ActionRecord] = Field(default_factory=list)
    wait_condition: str | None = None
    reasoning_summary: str | None = None
    llm_call_id: str | None = None
    served_model: str | None = None
    cost_usd: float = 0.0
    consecutive_idle_ticks: int = 0
    consecutive_blocked_turns: int = 0
    close_stuck: bool = False
    stuck_reason: str | None = None
    # The next heartbeat no earlier than this (the credit window reopening).
    not_before: datetime | None = None
    # Credit exhausted before any model call on a non-heartbeat event: record no turn,
    # leave the event unconsumed and visible again at `not_before` (spec §3.4.9).
    defer: bool = False
    # The tick stopped at a budget: the agent pauses on it and raises `budget_reached`.
    budget_reached: BudgetReached | None = None


class CompleteTickResult(BaseModel):
    """COMPLETE_TICK's result: the seq of the ledger turn written (0: none, a reset
    won or the event was deferred), when the next heartbeat falls due, whether the
    agent was closed as stuck, and whether it paused on a budget."""

    seq: int
    next_tick_at: datetime | None = None
    closed: bool = False
    # The agent paused on a budget (its `budget_reached` attention request).
    paused_on_budget: bool = False


class AgentStatusView(BaseModel):
    """The `status` query: what the loop is doing now (cheap, from workflow state)."""

    instance_id: str
    status: str
    active_mode: str | None = None
    generation: int = 0
    phase: str = "starting"  # waiting | sleeping | ticking
    current_event_id: str | None = None
    state: CarriedState = Field(default_factory=CarriedState)


class StandingAgentActivityContracts:
    """Each StandingAgentActivity with the types of its argument and result."""

    LOAD_INSTANCE: Final = ActivityContract(
        StandingAgentActivity.LOAD_INSTANCE, LoadInstanceInput, InstanceView
    )
    NEXT_EVENT: Final = ActivityContract(
        StandingAgentActivity.NEXT_EVENT, NextEventInput, NextEventResult
    )
    BEGIN_TICK: Final = ActivityContract(
        StandingAgentActivity.BEGIN_TICK, BeginTickInput, BeginTickResult
    )
    COMPLETE_TICK: Final = ActivityContract(
        StandingAgentActivity.COMPLETE_TICK, CompleteTickInput, CompleteTickResult
    )
    RESUME_REGENERATED: Final = ActivityContract(
        StandingAgentActivity.RESUME_REGENERATED, ResumeInput, bool
    )
    MODEL_STEP: Final = ActivityContract(
        StandingAgentActivity.MODEL_STEP, ModelStepInput, ModelStepResult
    )
    RUN_TOOL: Final = ActivityContract(StandingAgentActivity.RUN_TOOL, RunToolInput, RunToolResult)
    RUN_APPROVED_MCP_CALL: Final = ActivityContract(
        StandingAgentActivity.RUN_APPROVED_MCP_CALL, ApprovedMcpCallInput, RunToolResult
    )
