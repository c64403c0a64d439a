"""The standing agents' vocabulary, in the spec's words (spec standing-agents §2.1, §3.1).

Every layer (api/, workflows/, activities/) names agents, events, decisions and
activities through these enums, so `grep` finds a concept everywhere it lives.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

# The tenant feature that turns standing agents on (default off), and the agent-tools
# feature names a tenant can set at PUT /api/v1/tenants/{tenant}/features/{feature}.
STANDING_AGENTS_FEATURE = "standing-agents"


class AgentType(StrEnum):
    """§2.1 (a): the persisted discriminant of an `agent_instances` row (native standing types)."""

    SOA = "Soa"
    COMPLIANCE = "Compliance"
    PROMPT_REDACTOR = "PromptRedactor"


class AgentStatus(StrEnum):
    """An agent instance's status: only an `Active` agent ticks; a `Paused` or `Closed` one
    waits for a `wake`."""

    ACTIVE = "Active"
    PAUSED = "Paused"
    CLOSED = "Closed"


class EventKind(StrEnum):
    """§3.1 AgentEventKind, exactly."""

    AGENT_INITIALIZED = "AgentInitialized"
    AGENT_TICK = "AgentTick"
    OPERATOR_MESSAGE = "OperatorMessage"
    OPERATOR_ANSWERED_ESCALATION = "OperatorAnsweredEscalation"
    MISSION_STATE_CHANGED = "MissionStateChanged"
    DECISION_RESOLVED = "DecisionResolved"
    DEPENDENCY_COMPLETED = "DependencyCompleted"
    EXTERNAL_SIGNAL_RECEIVED = "ExternalSignalReceived"


# The kinds a client may post at POST .../agents/{id}/events (the others have their own
# routes: messages, decision answers, start/reset, and the heartbeat is the workflow's).
EXTERNAL_EVENT_KINDS: frozenset[EventKind] = frozenset(
    {
        EventKind.MISSION_STATE_CHANGED,
        EventKind.DECISION_RESOLVED,
        EventKind.DEPENDENCY_COMPLETED,
        EventKind.EXTERNAL_SIGNAL_RECEIVED,
    }
)


class AgentSignalKind(StrEnum):
    """§3.1: the kind an `ExternalSignalReceived` payload carries (`payload.signalKind`)."""

    NEW_COUPLE = "NewCouple"
    GUIDANCE_UPDATED = "GuidanceUpdated"
    REGRESSION_DETECTED = "RegressionDetected"
    HUMAN_REQUEST = "HumanRequest"


class DecisionKind(StrEnum):
    """§3.1 AgentDecisionKind: append-only (historical rows must keep classifying)."""

    INITIALIZED = "Initialized"
    HEARTBEAT = "Heartbeat"
    MESSAGE_ACKNOWLEDGED = "MessageAcknowledged"
    ESCALATION_RESUMED = "EscalationResumed"
    NO_OP = "NoOp"
    PLANNED = "Planned"
    ACTED_WITH_TOOL = "ActedWithTool"
    WAITING_FOR_EVENT = "WaitingForEvent"
    ESCALATED = "Escalated"


class MessageDirection(StrEnum):
    """Who wrote a message of an agent's conversation: an operator or the agent."""

    OPERATOR = "operator"
    AGENT = "agent"


class AttentionKind(StrEnum):
    """The kinds of attention requests on the decision queue (§2.4, §3.3.4)."""

    DECISION = "decision"
    MODE_CHANGE = "mode_change"
    STUCK = "stuck"
    # A call to an MCP tool not annotated read-only: it runs once a human approves it.
    MCP_CALL = "mcp_call"
    # A tick or the weekly credit ran out: the agent paused on it (issue 21, item 9).
    BUDGET_REACHED = "budget_reached"


# The answer that applies what a decision proposes (a mode change, an MCP call).
APPROVE = "approve"
# How a request is resolved when what it was for ended (the agent stopped or reset).
SUPERSEDED = "superseded"
# A coding agent's question (agentrt's MCP tool `decision_request`, agentrt's coder's
# permission requests): its answer goes back to the coder, not to an agent.
CODER_SOURCE = "coder"


def is_permission_vote(source: str, payload: dict[str, Any]) -> bool:
    """A decision whose answer is a session's permission vote (agentrt's coder)."""
    return source == CODER_SOURCE and "requestId" in payload and "sessionId" in payload


class AttentionStatus(StrEnum):
    """An attention request on the decision queue: open, or resolved."""

    OPEN = "open"
    RESOLVED = "resolved"


class ModeChangeSource(StrEnum):
    """§2.5: modes are written only by a human, through one of these two paths."""

    UI = "ui"
    APPROVAL = "approval"


class ActionOutcome(StrEnum):
    """What became of one tool call of an episode (`agent_state_ledger_actions.outcome`)."""

    OK = "ok"
    BLOCKED = "blocked"
    ERROR = "error"


def agent_workflow_id(tenant: str, instance_id: str) -> str:
    """`agent/{tenant}/{instanceId}`: Temporal's id uniqueness makes it the single writer."""
    return f"agent/{tenant}/{instance_id}"


class TickBudget(BaseModel):
    """The per-tick envelope (§3.6); None on an axis means unlimited."""

    max_tokens: int | None = None
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    max_cost_usd: float | None = None
    max_turns: int | None = None
    # The output-token cap of one model turn (raised to 16,384 in the foundational phase).
    max_output_tokens_per_turn: int | None = None


class ModeDefinition(BaseModel):
    """One operating mode of an agent type (§2.5, table `agent_modes`)."""

    agent_type: AgentType
    name: str
    description: str
    prompt_fragment: str
    tools: list[str]
    budget_override: TickBudget | None = None
    preset_id: str | None = None
    is_default: bool = False


class AgentEvent(BaseModel):
    """One row of `agent_event_queue` as the workflow sees it."""

    event_id: str
    sequence_number: int
    kind: EventKind
    payload: dict[str, Any] = Field(default_factory=dict)
    visible_at: datetime
