"""The mode catalogue and the tool superset (spec standing-agents §2.5, §3.4.7, §3.8).

This is the code seed of the `agent_modes` table: the store is seeded from it and
reads fall back to it. The resolver asserts, fail-closed, that a mode's toolset is
a subset of its agent type's superset; `soa_propose_task`, the one self-applying
tool, belongs to the SOA's superset only. No tool lets an agent change its own
mode: `soa_propose_mode_change` only raises an attention request.
"""

from __future__ import annotations

from runtime.mcp.grants import pattern_problem
from runtime.standing_agents.contracts import AgentType, ModeDefinition, TickBudget

# §3.8, read-only tools.
READ_ONLY_TOOLS: tuple[str, ...] = (
    "soa_query_telemetry",
    "agent_query_memory",
    "intelligence_knowledge_query",
    "intelligence_code_search",
    "compliance_query_posture",
    "compliance_knowledge_query",
    "orchestrator_research_get",
    "compliance_dossier_list",
)
# §3.8, artifact-recording tools.
ARTIFACT_TOOLS: tuple[str, ...] = (
    "compliance_dossier_record",
    "compliance_dossier_translate",
    "compliance_knowledge_ingest",
    "orchestrator_research_create",
)
# §3.8, escalation/control verbs submitted to a human (or ending the foundational phase).
CONTROL_TOOLS: tuple[str, ...] = (
    "soa_propose_decision",
    "soa_send_message",
    "soa_propose_mode_change",
    "agent_workset_complete",
)
# The one self-applying tenant mutation: the SOA's only.
SELF_APPLYING_TOOLS: frozenset[str] = frozenset({"soa_propose_task", "soa_assign_coder"})
# The named control-plane terminators of an episode (§3.5); offered in every mode.
PHASE_COMPLETE = "phase_complete"
PHASE_BLOCKED = "phase_blocked"
TERMINATOR_TOOLS: tuple[str, ...] = (PHASE_COMPLETE, PHASE_BLOCKED)
# The control verbs every mode of every type carries, whatever its catalogue row lists
# (§2.5, §3.5): the terminators, the proposal to leave the mode, and, while the agent is
# foundational, the verb that ends that phase (`control_verbs`).
MODE_CHANGE_PROPOSAL = "soa_propose_mode_change"
WORKSET_COMPLETE = "agent_workset_complete"


def control_verbs(foundational: bool) -> tuple[str, ...]:
    """The verbs an agent needs in any mode: end the episode (`phase_complete`,
    `phase_blocked`), propose leaving the mode, and end the foundational phase while in
    it. A mode without them traps its agent (a Prompt Engineer never ending its
    foundational phase, a SOA in Discovery unable to propose leaving)."""
    verbs = (*TERMINATOR_TOOLS, MODE_CHANGE_PROPOSAL)
    return (*verbs, WORKSET_COMPLETE) if foundational else verbs


# Tools that raise an attention request (the decision mapper's "escalated").
ESCALATION_TOOLS: frozenset[str] = frozenset({"soa_propose_decision", "soa_propose_mode_change"})
# Tools whose success is a side effect on the tenant (the mapper's "acted with tool").
SIDE_EFFECT_TOOLS: frozenset[str] = frozenset(ARTIFACT_TOOLS) | SELF_APPLYING_TOOLS

_COMMON_SUPERSET = frozenset(READ_ONLY_TOOLS + ARTIFACT_TOOLS + CONTROL_TOOLS + TERMINATOR_TOOLS)
TOOL_SUPERSET: dict[AgentType, frozenset[str]] = {
    AgentType.SOA: _COMMON_SUPERSET | SELF_APPLYING_TOOLS,
    AgentType.COMPLIANCE: _COMMON_SUPERSET,
    AgentType.PROMPT_REDACTOR: _COMMON_SUPERSET,
}

# §3.7: the call site each type plans on.
PLANNING_SITE: dict[AgentType, str] = {
    AgentType.SOA: "Agent:Planning",
    AgentType.COMPLIANCE: "Agent:Compliance",
    AgentType.PROMPT_REDACTOR: "PromptRedactor:Redact",
}

BASE_PROMPTS: dict[AgentType, str] = {
    AgentType.SOA: (
        "You are the Strategic Orchestration Agent (SOA) of this tenant: a long-lived "
        "planner that wakes on a heartbeat or an event, plans once, and acts only through "
        "the tools you are given. Tool calls are your only actions; your text is a "
        "reasoning trace that nobody parses. Never apply anything risky yourself: propose "
        "it, or escalate it to a human with soa_propose_decision. Never duplicate an open "
        "item. End every episode with phase_complete, or phase_blocked with the reason."
    ),
    AgentType.COMPLIANCE: (
        "You are the Compliance agent of this tenant: you keep the compliance posture and "
        "dossiers current and escalate what needs a human. Tool calls are your only "
        "actions; you never apply a change yourself. End every episode with "
        "phase_complete, or phase_blocked with the reason."
    ),
    AgentType.PROMPT_REDACTOR: (
        "You are the Prompt Engineer (redactor) agent: you review the prompts of a call "
        "site and propose redactions to a human. Tool calls are your only actions. End "
        "every episode with phase_complete, or phase_blocked with the reason."
    ),
}

# §3.6: Compliance Research widens the envelope for whole-chapter dossier drafting.
RESEARCH_BUDGET = TickBudget(
    max_tokens=48_000,
    max_tool_calls=24,
    max_seconds=600,
    max_cost_usd=4.00,
    max_turns=24,
    # A whole chapter in one turn's tool call: the foundational phase's output cap.
    max_output_tokens_per_turn=16_384,
)

_READ = list(READ_ONLY_TOOLS)


def _mode(
    agent_type: AgentType,
    name: str,
    description: str,
    fragment: str,
    tools: list[str],
    *,
    default: bool = False,
    budget: TickBudget | None = None,
) -> ModeDefinition:
    return ModeDefinition(
        agent_type=agent_type,
        name=name,
        description=description,
        prompt_fragment=fragment,
        tools=sorted(set(tools) | set(control_verbs(foundational=False))),
        budget_override=budget,
        is_default=default,
    )


_SOA = AgentType.SOA
_CMP = AgentType.COMPLIANCE
_RED = AgentType.PROMPT_REDACTOR

MODES: tuple[ModeDefinition, ...] = (
    _mode(
        _SOA,
        "Strategic",
        "Steady-state planning: ground on memory and telemetry, propose at most one or two "
        "governed actions per tick.",
        "Mode Strategic: look at the open items first, then propose the next useful task or "
        "decision. One or two actions at most.",
        [
            *_READ,
            "orchestrator_research_create",
            "soa_propose_task",
            "soa_assign_coder",
            "soa_propose_decision",
            "soa_send_message",
            "soa_propose_mode_change",
            "agent_workset_complete",
        ],
        default=True,
    ),
    _mode(
        _SOA,
        "Incident",
        "Something is wrong in operations: diagnose from telemetry and escalate.",
        "Mode Incident: query telemetry, tell the operator what you see, and escalate a "
        "decision when a human must act. Propose no new work.",
        [
            "soa_query_telemetry",
            "agent_query_memory",
            "intelligence_code_search",
            "soa_send_message",
            "soa_propose_decision",
            "soa_propose_mode_change",
        ],
    ),
    _mode(
        _SOA,
        "Dialogue",
        "Conversation with the operator: read and answer.",
        "Mode Dialogue: answer the operator's messages; do not start new work.",
        [
            "agent_query_memory",
            "intelligence_knowledge_query",
            "soa_send_message",
            "soa_propose_mode_change",
        ],
    ),
    _mode(
        _SOA,
        "Housekeeping",
        "Tidy the open items: close what is done, report what is stale.",
        "Mode Housekeeping: review the open items and research, report what is stale.",
        [
            "agent_query_memory",
            "soa_query_telemetry",
            "orchestrator_research_get",
            "soa_send_message",
            "agent_workset_complete",
        ],
    ),
    _mode(
        _SOA,
        "Idle",
        "Quiet: only answer the operator.",
        "Mode Idle: stay quiet; answer the operator if they wrote, nothing else.",
        ["agent_query_memory", "soa_send_message", "soa_propose_mode_change"],
    ),
    _mode(
        _SOA,
        "Discovery",
        "Explore the knowledge and the code to find what is worth doing.",
        "Mode Discovery: search the knowledge and the code, record research, and propose "
        "decisions for what you find.",
        [
            "agent_query_memory",
            "intelligence_knowledge_query",
            "intelligence_code_search",
            "orchestrator_research_get",
            "orchestrator_research_create",
            "soa_send_message",
            "soa_propose_decision",
        ],
    ),
    _mode(
        _CMP,
        "Cadence",
        "The regular compliance check-in: posture, dossiers, escalations.",
        "Mode Cadence: check the posture and the dossiers; escalate gaps to a human.",
        [
            "compliance_query_posture",
            "compliance_knowledge_query",
            "compliance_dossier_list",
            "agent_query_memory",
            "soa_send_message",
            "soa_propose_decision",
            "soa_propose_mode_change",
            "agent_workset_complete",
        ],
        default=True,
    ),
    _mode(
        _CMP,
        "GateReview",
        "Review a gate: is the evidence enough to pass it?",
        "Mode GateReview: assess the evidence for the gate and propose a decision.",
        [
            "compliance_query_posture",
            "compliance_dossier_list",
            "compliance_knowledge_query",
            "agent_query_memory",
            "soa_propose_decision",
            "soa_send_message",
            "soa_propose_mode_change",
        ],
    ),
    _mode(
        _CMP,
        "Research",
        "Whole-chapter dossier drafting, with a widened budget.",
        "Mode Research: draft and record dossier chapters from the knowledge base.",
        [
            "compliance_knowledge_query",
            "compliance_knowledge_ingest",
            "compliance_dossier_list",
            "compliance_dossier_record",
            "compliance_dossier_translate",
            "intelligence_knowledge_query",
            "intelligence_code_search",
            "orchestrator_research_get",
            "agent_query_memory",
            "soa_send_message",
        ],
        budget=RESEARCH_BUDGET,
    ),
    _mode(
        _RED,
        "Redact",
        "Review a call site's prompts and propose redactions.",
        "Mode Redact: read the guidance, propose each redaction as a decision.",
        [
            "agent_query_memory",
            "intelligence_knowledge_query",
            "soa_send_message",
            "soa_propose_decision",
        ],
        default=True,
    ),
)


class ModeCatalogError(Exception):
    """A mode grants a tool outside its type's superset (fail-closed, §3.4.7)."""


def modes_of(agent_type: AgentType) -> list[ModeDefinition]:
    return [mode for mode in MODES if mode.agent_type == agent_type]


def default_mode(agent_type: AgentType) -> str:
    return next(mode.name for mode in modes_of(agent_type) if mode.is_default)


def find_mode(agent_type: AgentType, name: str) -> ModeDefinition | None:
    return next((mode for mode in modes_of(agent_type) if mode.name == name), None)


def resolve_mode(
    agent_type: AgentType, name: str | None, catalogue: list[ModeDefinition] | None = None
) -> ModeDefinition:
    """The active mode (the type's default when unset), its toolset asserted ⊆ the superset.

    `catalogue` is the type's modes as stored (`agent_modes`); the code seed otherwise.

    Raises:
        ModeCatalogError: the mode is unknown, or grants a tool outside the superset (an
            MCP entry, `mcp__<server>__<tool>` or `mcp__<server>__*`, is offered only
            where a grant of the tenant names it as well: runtime/mcp/grants).
    """
    modes = catalogue if catalogue is not None else modes_of(agent_type)
    wanted = name or default_mode(agent_type)
    mode = next((m for m in modes if m.name == wanted), None)
    if mode is None:
        raise ModeCatalogError(f"unknown mode {wanted!r} for {agent_type}")
    # MCP entries are governed by the tenant's grants (runtime/mcp/grants), not the seed.
    outside = sorted(
        t for t in set(mode.tools) - TOOL_SUPERSET[agent_type] if pattern_problem(t) is not None
    )
    if outside:
        raise ModeCatalogError(
            f"mode {agent_type}/{mode.name} grants tools outside the superset: {outside}"
        )
    return mode


def with_control_verbs(mode: ModeDefinition, foundational: bool) -> ModeDefinition:
    """`mode` as a tick offers and gates it: its tools and the control verbs."""
    tools = sorted(set(mode.tools) | set(control_verbs(foundational)))
    return mode if tools == mode.tools else mode.model_copy(update={"tools": tools})


def system_prompt(agent_type: AgentType, mode: ModeDefinition) -> str:
    """§3.5: the invariant base + "\\n\\n" + the mode's fragment."""
    return BASE_PROMPTS[agent_type] + "\n\n" + mode.prompt_fragment
