"""Payloads of the agent-tools gateway that cross Temporal or HTTP."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from runtime.activity_contract import ActivityContract
from runtime.agent_tools.findings import Finding
from runtime.investigation.outcomes import ObjectRef, ToolStatus
from runtime.llm.contracts import AttemptReport, AttemptSpec, ToolCall

# A workspace id on the wire (query parameter or body field).
WORKSPACE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

AgentKind = Literal["deterministic", "model"]
TurnStatus = Literal[
    "running", "awaiting_authorization", "resuming", "completed", "denied", "failed"
]

EVENT_TYPES = (
    "agent.turn.started",
    "agent.plan.updated",
    "agent.tool.requested",
    "agent.tool.started",
    "agent.tool.completed",
    "agent.authorization.required",
    "agent.turn.completed",
    "agent.error",
)


class AgentToolsActivity(StrEnum):
    """The agent-tools activities, by name: activities/agent_tools/turn.py implements them,
    and TurnWorkflow calls them by these names (the API never imports an activity)."""

    CALL_TOOL = "agent_tools.call_tool"
    READ_RESEARCH = "agent_tools.read_research"
    MODEL_STEP = "agent_tools.model_step"


class CallRequest(BaseModel):
    """One tool call, from a client (POST /calls) or from a turn's agent."""

    turn_id: str = Field(min_length=1, max_length=200)
    call_id: str | None = None
    tool_id: str = Field(min_length=1, max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    object_refs: list[ObjectRef] = Field(default_factory=list)
    idempotency_key: str = Field(min_length=1, max_length=400)


class CallToolInput(BaseModel):
    """CALL_TOOL's argument: a turn's tool call, run through the gateway of the
    deployment's `instance` in `workspace`."""

    instance: str
    workspace: str
    call: CallRequest
    # The model agent's transcript: where to append the tool's answer, if anywhere.
    transcript_stream: str | None = None
    tool_call_id: str | None = None


class CallSummary(BaseModel):
    """What a workflow keeps of a call: references, never the result's content."""

    call_id: str
    # None for the turn's own read of its research (`ResearchRead`): no stored result.
    result_id: str | None
    tool_id: str
    status: ToolStatus
    object_refs: list[ObjectRef] = Field(default_factory=list)
    diagnostic: str | None = None
    replayed: bool = False
    # Histories recorded before `agent_tools.read_research` carry the research's state
    # here (the gateway call filled it); TurnWorkflow still reads it when replaying them.
    research_state: str | None = None
    # What the result says, in a few bounded statements (runtime.agent_tools.findings),
    # so the turn's summary can quote it without reading the store.
    findings: list[Finding] = Field(default_factory=list)


class TurnInput(BaseModel):
    """TurnWorkflow's input: the turn's prompt and its agent (`deterministic` or `model`),
    the events kept in the workspace's agent-tools stream (`event_retention`) and the
    most steps the agent takes (`max_steps`)."""

    instance: str
    workspace: str
    turn_id: str
    prompt: str
    agent: AgentKind = "deterministic"
    event_retention: int = 128
    max_steps: int = 12


class ResearchDecided(BaseModel):
    """The signal `research_decided`: a research of the turn's workspace was approved or
    denied (sent by the research route before it writes the decision)."""

    research_id: str
    decision: Literal["approve", "deny"]


class ResumeRequest(BaseModel):
    """The update `resume`: continue a turn that waits for its research's authorization."""

    requested_by: str | None = None


class TurnResult(BaseModel):
    """How a turn ended: TurnWorkflow's result, and the answer of its `resume` update."""

    turn_id: str
    status: TurnStatus
    result: ToolStatus | None = None
    research_id: str | None = None
    summary: str = ""


TURN_STATE_QUERY = "state"
"""The turn workflow's query of its `TurnState`, by name for the doors that do not import
the workflow (the Windows holder check)."""


class TurnState(BaseModel):
    """The query `state`: where a turn is now (`GET /turns/{turn_id}`)."""

    turn_id: str
    workspace: str
    agent: AgentKind
    status: TurnStatus
    research_id: str | None = None
    steps: int = 0
    summary: str = ""


class ResearchStateInput(BaseModel):
    """READ_RESEARCH's argument: the research whose state the turn reads from the store."""

    workspace: str
    research_id: str
    # The decision the turn was signalled: the research route signals before it writes,
    # so a store still showing `prepared` is read again for a while (see the activity).
    expected: Literal["approve", "deny"] | None = None


class ResearchRead(BaseModel):
    """The research's state as the turn reads it, with the references it covers."""

    state: str
    object_refs: list[ObjectRef] = Field(default_factory=list)
    diagnostic: str | None = None


class ModelStepInput(BaseModel):
    """MODEL_STEP's argument: step `step` of a model turn, whose conversation is the
    journal stream `transcript_stream`."""

    instance: str
    workspace: str
    turn_id: str
    transcript_stream: str
    step: int
    # One attempt of the step's fallback chain (Turn:Model). None: a step of a turn
    # started before the chain, which makes the first attempt of the live plan.
    attempt: AttemptSpec | None = None


class ModelStepResult(BaseModel):
    """MODEL_STEP's result: what the model answered (its text and the tool calls it
    asked for) and which model served it."""

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    served_model: str = ""
    # What the attempt came to (None from a step without `attempt`); on a failed one the
    # rest is empty and the workflow's chain decides what follows.
    report: AttemptReport | None = None


ModelStepResult.model_rebuild()


def turn_workflow_id(instance: str, workspace: str, turn_id: str) -> str:
    """A turn's workflow id (its routes signal it; an expired research's clock too)."""
    return f"turn/{instance}/{workspace}/{turn_id}"


class AgentToolsActivityContracts:
    """Each AgentToolsActivity with the types of its argument and result."""

    CALL_TOOL: Final = ActivityContract(AgentToolsActivity.CALL_TOOL, CallToolInput, CallSummary)
    READ_RESEARCH: Final = ActivityContract(
        AgentToolsActivity.READ_RESEARCH, ResearchStateInput, ResearchRead
    )
    MODEL_STEP: Final = ActivityContract(
        AgentToolsActivity.MODEL_STEP, ModelStepInput, ModelStepResult
    )
