"""The decision mapper (spec standing-agents §3.4.11): one ladder for every path.

Precedence, first match wins:

| condition                                        | DecisionKind          |
|--------------------------------------------------|-----------------------|
| the turn raised an escalation                    | Escalated             |
| the turn acted with a side-effect tool           | ActedWithTool         |
| clean completion, event AgentInitialized         | Initialized           |
| clean completion, event OperatorMessage          | MessageAcknowledged   |
| clean completion, event OperatorAnsweredEscalation | EscalationResumed   |
| clean completion, any other event                | Planned               |
| idle tick, no LLM call (short-circuit, credit)   | Heartbeat             |
| otherwise (blocked, or no completion)            | WaitingForEvent       |

A blocked turn never counts as a clean completion, even if it also ended.
"""

from __future__ import annotations

from runtime.standing_agents.contracts import DecisionKind, EventKind

_COMPLETION_BY_EVENT: dict[EventKind, DecisionKind] = {
    EventKind.AGENT_INITIALIZED: DecisionKind.INITIALIZED,
    EventKind.OPERATOR_MESSAGE: DecisionKind.MESSAGE_ACKNOWLEDGED,
    EventKind.OPERATOR_ANSWERED_ESCALATION: DecisionKind.ESCALATION_RESUMED,
}


def map_decision(
    event_kind: EventKind,
    *,
    llm_called: bool,
    escalated: bool,
    acted_with_tool: bool,
    completed: bool,
    blocked: bool,
) -> DecisionKind:
    """Classify one turn (see the module table for the precedence)."""
    if escalated:
        return DecisionKind.ESCALATED
    if acted_with_tool:
        return DecisionKind.ACTED_WITH_TOOL
    if completed and not blocked:
        return _COMPLETION_BY_EVENT.get(EventKind(event_kind), DecisionKind.PLANNED)
    if not llm_called and not blocked:
        return DecisionKind.HEARTBEAT
    return DecisionKind.WAITING_FOR_EVENT
