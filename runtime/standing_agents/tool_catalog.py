"""The governed tools of standing agents (spec §3.8): what the model is shown, one
`ToolDescriptor` each in the one tool layer (runtime/tools), and the check of its arguments.
Their effects are runtime/standing_agents/tools.py's handlers."""

from __future__ import annotations

from typing import Any

from runtime.coding_tasks.contracts import TASK_APPROVAL_MODES
from runtime.llm.contracts import ToolSpec
from runtime.standing_agents import catalog
from runtime.tools import READ_ONLY, ToolAnnotations, ToolArgumentsError, ToolDescriptor

MAX_LIMIT = 50
DEFAULT_LIMIT = 10
MAX_TEXT = 20_000


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required or [],
        "additionalProperties": False,
    }


_TEXT = {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
_QUERY = _schema({"query": _TEXT, "limit": _LIMIT}, ["query"])
# A compliance project's id, as the Compliance objective's corpus names it.
_PROJECT = {
    "type": "string",
    "minLength": 1,
    "maxLength": 80,
    "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$",
}

# What only reads (the agent's memory, agentrt's health, the knowledge, the workspace, the
# research and dossiers): read-only in MCP's terms. Every other tool records its effect
# under the call's operation id (a unique `op_id` column): exactly once.
_READS = frozenset(
    {
        "agent_query_memory",
        "soa_query_telemetry",
        "intelligence_knowledge_query",
        "compliance_knowledge_query",
        "intelligence_code_search",
        "orchestrator_research_get",
        "compliance_query_posture",
        "compliance_dossier_list",
    }
)


def _tool(name: str, description: str, input_schema: dict[str, Any]) -> ToolDescriptor:
    """A standing agent's tool in the one tool layer (runtime/tools)."""
    if name in _READS:
        return ToolDescriptor(
            name=name, description=description, input_schema=input_schema, annotations=READ_ONLY
        )
    return ToolDescriptor(
        name=name,
        description=description,
        input_schema=input_schema,
        annotations=ToolAnnotations(destructiveHint=False, openWorldHint=False),
        effect_ledger=True,
    )


TOOLS: dict[str, ToolDescriptor] = {
    tool.name: tool
    for tool in (
        _tool(
            name="agent_query_memory",
            description="Your own memory: your past ledger turns and the operator chat.",
            input_schema=_schema(
                {
                    "kind": {"type": "string", "enum": ["turns", "messages", "all"]},
                    "contains": {"type": "string", "maxLength": 200},
                    "limit": _LIMIT,
                }
            ),
        ),
        _tool(
            name="soa_query_telemetry",
            description="agentrt's own health over 24 h: failed model calls and tool "
            "actions, blocked turns, closed agents.",
            input_schema=_schema({}),
        ),
        _tool(
            name="intelligence_knowledge_query",
            description="Search the knowledge base (investigation evidence and claims, "
            "knowledge you ingested).",
            input_schema=_QUERY,
        ),
        _tool(
            name="compliance_knowledge_query",
            description="Search the compliance knowledge (ingested items and evidence), of"
            " one project of the corpus if given.",
            input_schema=_schema({"query": _TEXT, "limit": _LIMIT, "project": _PROJECT}, ["query"]),
        ),
        _tool(
            name="intelligence_code_search",
            description="Search the tenant's workspace files for a literal string.",
            input_schema=_QUERY,
        ),
        _tool(
            name="orchestrator_research_get",
            description="Research items: the ones agents recorded and the gateway's research.",
            input_schema=_schema({"researchId": {"type": "string"}, "limit": _LIMIT}),
        ),
        _tool(
            name="compliance_query_posture",
            description="The compliance posture: dossiers, knowledge items, open decisions.",
            input_schema=_schema({}),
        ),
        _tool(
            name="compliance_dossier_list",
            description="The recorded compliance dossiers (newest first), of one project"
            " of the corpus if given.",
            input_schema=_schema({"limit": _LIMIT, "project": _PROJECT}),
        ),
        _tool(
            name="compliance_dossier_record",
            description="Record a dossier chapter.",
            input_schema=_schema(
                {
                    "title": _TEXT,
                    "content": _TEXT,
                    "chapter": {"type": "string"},
                    "project": _PROJECT,
                },
                ["title", "content"],
            ),
        ),
        _tool(
            name="compliance_dossier_translate",
            description="Record a translation of a dossier.",
            input_schema=_schema(
                {"dossierId": _TEXT, "language": _TEXT, "content": _TEXT},
                ["dossierId", "language", "content"],
            ),
        ),
        _tool(
            name="compliance_knowledge_ingest",
            description="Add an item to the knowledge base.",
            input_schema=_schema(
                {
                    "title": _TEXT,
                    "content": _TEXT,
                    "tags": {"type": "array", "items": _TEXT},
                    "project": _PROJECT,
                },
                ["title", "content"],
            ),
        ),
        _tool(
            name="orchestrator_research_create",
            description="Record a research item (a question worth investigating).",
            input_schema=_schema(
                {"title": _TEXT, "question": _TEXT, "notes": {"type": "string"}},
                ["title", "question"],
            ),
        ),
        _tool(
            name="soa_send_message",
            description="Send a message to the operator (the chat transcript).",
            input_schema=_schema({"text": _TEXT}, ["text"]),
        ),
        _tool(
            name="soa_propose_decision",
            description="Ask a human to decide (the decision queue). The answer comes back "
            "as an OperatorAnsweredEscalation event.",
            input_schema=_schema(
                {
                    "title": _TEXT,
                    "body": _TEXT,
                    "options": {"type": "array", "items": _TEXT, "maxItems": 10},
                },
                ["title", "body"],
            ),
        ),
        _tool(
            name="soa_propose_mode_change",
            description="Propose a change of your operating mode to a human (never applied "
            "by you).",
            input_schema=_schema({"mode": _TEXT, "reason": _TEXT}, ["mode", "reason"]),
        ),
        _tool(
            name="soa_propose_task",
            description="Create a coding task. coder 'agentrt' (the default): agentrt's own "
            "coder runs it at once, as a session prompt in the tenant's workspace; 'any': it "
            "stays open for a registered coder with its capabilities to claim. presetId (or "
            "model) chooses the coder's model; approvalMode how its tool calls are approved "
            "(default: a human answers each). You read its outcome as a DependencyCompleted "
            "event.",
            input_schema=_schema(
                {
                    "title": _TEXT,
                    "prompt": _TEXT,
                    "coder": {"type": "string", "enum": ["agentrt", "any"]},
                    "capabilities": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 100},
                        "maxItems": 50,
                    },
                    "presetId": {"type": "string", "minLength": 1, "maxLength": 200},
                    "model": {"type": "string", "minLength": 1, "maxLength": 200},
                    "approvalMode": {"type": "string", "enum": list(TASK_APPROVAL_MODES)},
                },
                ["title", "prompt"],
            ),
        ),
        _tool(
            name="soa_assign_coder",
            description="Give an open coding task (taskId) to agentrt's own coder: it runs "
            "the task's instructions in a workspace of its own; you read the outcome as a "
            "DependencyCompleted event.",
            input_schema=_schema({"taskId": _TEXT}, ["taskId"]),
        ),
        _tool(
            name="agent_workset_complete",
            description="Declare your starting workset built (ends the foundational phase).",
            input_schema=_schema({}),
        ),
        _tool(
            name=catalog.PHASE_COMPLETE,
            description="End this episode: the work of this event is done.",
            input_schema=_schema({"summary": {"type": "string", "maxLength": 2000}}),
        ),
        _tool(
            name=catalog.PHASE_BLOCKED,
            description="End this episode blocked, with the reason.",
            input_schema=_schema({"reason": _TEXT}, ["reason"]),
        ),
    )
}


def specs_for(tools: list[str]) -> list[ToolSpec]:
    return [TOOLS[name].spec() for name in tools if name in TOOLS]


def argument_problem(tool: str, arguments: dict[str, Any]) -> str | None:
    """Why the arguments do not fit the schema the model was shown (None: they fit), in
    the one wording of the tool layer."""
    try:
        TOOLS[tool].validate(arguments)
    except ToolArgumentsError as err:
        return str(err)[:500]
    return None
