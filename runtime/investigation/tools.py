"""The nine agent tools over the investigation workspace, and `run_tool`, their one entry.

The graph, job and research tools are here; `investigation.search` is search.py, the
evidence and provenance tools provenance.py, and what they all answer outcomes.py.

The gateway owns no business data: it calls `run_tool`, which validates the
input against the tool's JSON schema, checks the tool's real availability, runs
it on the caller's session and bounds the result. Every refusal is a
`ToolOutcome` (FAILED, UNAVAILABLE...), never an exception; only infrastructure
errors (the database is down) propagate, so the caller's retry policy applies.

`run_tool` never commits: `research.prepare` writes its research through the
session and the caller commits it together with its own record of the call.
Outputs carry references and short text, never big copies of the data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance
from sqlalchemy import func, or_
from sqlmodel import Session, col, select

from runtime.investigation.catalog import TOOL_DESCRIPTORS, availability
from runtime.investigation.models import (
    InvestigationEdge,
    InvestigationEvidence,
    InvestigationJob,
    InvestigationNode,
)
from runtime.investigation.outcomes import (
    MAX_RESULT_BYTES,
    ObjectRef,
    ToolFailure,
    ToolOutcome,
    ToolStatus,
    failed,
    fetch,
    iso,
    ref,
)
from runtime.investigation.provenance import evidence_summary, read_excerpt, trace
from runtime.investigation.research import (
    ResearchNotFound,
    decision_route,
    prepare_research,
    research_state,
)
from runtime.investigation.search import search

# -- graph ---------------------------------------------------------------------------------


def _ids_about(rows: Iterable[tuple[str, Any]], node_id: str) -> list[str]:
    return sorted(object_id for object_id, node_ids in rows if node_id in (node_ids or []))


def _get_node(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    node: InvestigationNode = fetch(session, workspace, "node", args["node_id"])

    def count(column: Any) -> int:
        statement = select(func.count()).where(
            InvestigationEdge.workspace == workspace, column == node.node_id
        )
        return int(session.exec(statement).one())

    out_count, in_count = count(InvestigationEdge.src), count(InvestigationEdge.dst)
    evidence_ids = _ids_about(
        session.exec(
            select(InvestigationEvidence.evidence_id, InvestigationEvidence.node_ids).where(
                InvestigationEvidence.workspace == workspace
            )
        ),
        node.node_id,
    )
    job_ids = _ids_about(
        session.exec(
            select(InvestigationJob.job_id, InvestigationJob.node_ids).where(
                InvestigationJob.workspace == workspace
            )
        ),
        node.node_id,
    )
    return ToolOutcome(
        status="COMPLETED",
        output={
            "node": {
                "node_id": node.node_id,
                "type": node.type,
                "label": node.label,
                "properties": node.properties,
            },
            "edge_count": {"out": out_count, "in": in_count},
            "evidence_ids": evidence_ids[:20],
            "job_ids": job_ids[:20],
        },
        object_refs=[ref("node", node.node_id)],
        provenance_refs=[ref("evidence", e) for e in evidence_ids[:20]],
        observations=[
            f"{node.label} ({node.type}): {out_count} outgoing and {in_count} incoming edges, "
            f"{len(evidence_ids)} evidence items, {len(job_ids)} jobs"
        ],
    )


def _get_neighbors(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    node: InvestigationNode = fetch(session, workspace, "node", args["node_id"])
    limit = int(args.get("limit", 20))
    statement = select(InvestigationEdge).where(
        InvestigationEdge.workspace == workspace,
        or_(col(InvestigationEdge.src) == node.node_id, col(InvestigationEdge.dst) == node.node_id),
    )
    if args.get("edge_types"):
        statement = statement.where(col(InvestigationEdge.type).in_(args["edge_types"]))
    edges = list(
        session.exec(
            statement.order_by(col(InvestigationEdge.type), col(InvestigationEdge.edge_id))
        )
    )
    shown = edges[:limit]
    other_ids = {e.dst if e.src == node.node_id else e.src for e in shown}
    others = {
        n.node_id: n
        for n in session.exec(
            select(InvestigationNode).where(
                InvestigationNode.workspace == workspace,
                col(InvestigationNode.node_id).in_(other_ids),
            )
        )
    }
    neighbors: list[dict[str, Any]] = []
    for edge in shown:
        direction = "out" if edge.src == node.node_id else "in"
        other = others[edge.dst if direction == "out" else edge.src]
        neighbors.append(
            {
                "edge_id": edge.edge_id,
                "edge_type": edge.type,
                "direction": direction,
                "edge_properties": edge.properties,
                "node": {"node_id": other.node_id, "type": other.type, "label": other.label},
            }
        )
    by_type: dict[str, int] = {}
    for edge in edges:
        by_type[edge.type] = by_type.get(edge.type, 0) + 1
    summary = ", ".join(f"{n} {t}" for t, n in sorted(by_type.items()))
    return ToolOutcome(
        status="COMPLETED",
        output={
            "node_id": node.node_id,
            "neighbors": neighbors,
            "total": len(edges),
            "truncated": len(edges) > limit,
        },
        object_refs=[ref("node", n["node"]["node_id"]) for n in neighbors]
        + [ref("edge", n["edge_id"]) for n in neighbors],
        observations=[
            f"{node.label} has {len(edges)} matching edges" + (f": {summary}" if summary else "")
        ],
    )


# -- jobs and research ---------------------------------------------------------------------


def _job_brief(job: InvestigationJob) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "kind": job.kind,
        "status": job.status,
        "detail": job.detail,
        "node_ids": job.node_ids,
        "updated_at": iso(job.updated_at),
    }


def _jobs_get(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    refs: list[ObjectRef] = []
    if "job_id" in args:
        jobs: list[InvestigationJob] = [fetch(session, workspace, "job", args["job_id"])]
    else:
        node: InvestigationNode = fetch(session, workspace, "node", args["node_id"])
        refs.append(ref("node", node.node_id))
        everything = session.exec(
            select(InvestigationJob).where(InvestigationJob.workspace == workspace)
        )
        jobs = [job for job in everything if node.node_id in (job.node_ids or [])]
        jobs.sort(key=lambda job: (iso(job.updated_at), job.job_id), reverse=True)
    shown = jobs[:20]
    observations = [f"job {j.job_id} ({j.kind}) is {j.status}" for j in shown[:5]]
    return ToolOutcome(
        status="COMPLETED",
        output={
            "jobs": [_job_brief(j) for j in shown],
            "total": len(jobs),
            "truncated": len(jobs) > 20,
        },
        object_refs=[ref("job", j.job_id) for j in shown] + refs,
        observations=observations or [f"no jobs about node {args.get('node_id')}"],
    )


def _research_get_state(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    return research_get_state(session, workspace, args["research_id"])


def research_get_state(session: Session, workspace: str, research_id: str) -> ToolOutcome:
    """The research's state with the references it covers: the `research.get_state` tool,
    and the turn's own read after a decision (`agent_tools.read_research`)."""
    state = research_state(session, workspace, research_id)
    decision = state.decision
    said = f"; {decision.decision} by {decision.decided_by}" if decision else ""
    return ToolOutcome(
        status="COMPLETED",
        output=state.model_dump(mode="json"),
        object_refs=[ref("research", state.research_id)]
        + [ref("node", n) for n in state.scope.get("node_ids", [])],
        observations=[f"research {state.research_id} is {state.state}{said}"],
    )


def _research_prepare(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    """Propose only: the research waits for a human decision on its own route."""
    research = prepare_research(
        session,
        workspace,
        args["question"],
        args["scope"],
        args.get("rationale"),
        args.get("turn_id"),
    )
    route = decision_route(research.research_id)
    # A retried proposal may find its research already decided: report what it is now.
    status: ToolStatus = "COMPLETED"
    if research.state == "prepared":
        status = "AUTHORIZATION_REQUIRED"
    elif research.state == "denied":
        status = "DENIED"
    return ToolOutcome(
        status=status,
        output={
            "research_id": research.research_id,
            "state": research.state,
            "decision_route": route,
        },
        object_refs=[ref("research", research.research_id)]
        + [ref("node", n) for n in research.scope["node_ids"]],
        artifacts=[
            {
                "kind": "authorization_request",
                "research_id": research.research_id,
                "route": route,
                "decisions": ["approve", "deny"],
            }
        ],
        observations=[
            f"research {research.research_id} is {research.state}: it runs only after a human "
            f"approves it (POST {route})"
        ],
    )


# -- the entry point -----------------------------------------------------------------------

Handler = Callable[[Session, str, dict[str, Any]], ToolOutcome]
_HANDLERS: dict[str, Handler] = {
    "investigation.search": search,
    "graph.get_node": _get_node,
    "graph.get_neighbors": _get_neighbors,
    "evidence.get_summary": evidence_summary,
    "evidence.read_excerpt": read_excerpt,
    "provenance.trace": trace,
    "jobs.get": _jobs_get,
    "research.get_state": _research_get_state,
    "research.prepare": _research_prepare,
}
_VALIDATORS = {
    tool_id: Draft202012Validator(descriptor.input_schema)
    for tool_id, descriptor in TOOL_DESCRIPTORS.items()
}


def input_problem(tool_id: str, tool_input: Any) -> str | None:
    """Why `tool_input` does not fit the tool's input schema, or None when it does."""
    errors = list(_VALIDATORS[tool_id].iter_errors(tool_input))
    if not errors:
        return None
    error = max(errors, key=relevance)
    where = "input" + "".join(
        f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
    )
    message = error.message
    if error.validator in ("oneOf", "anyOf") and isinstance(error.schema, dict):
        message = str(error.schema.get("description", message))
    return f"invalid input for {tool_id}: {where}: {message}"


def run_tool(
    session: Session, workspace: str, tool_id: str, tool_input: dict[str, Any]
) -> ToolOutcome:
    """Run one tool for `workspace`: validate, check availability, execute, bound the result.

    Never raises for bad input, unknown ids or unavailable tools (see the module
    docstring); never commits.
    """
    handler = _HANDLERS.get(tool_id)
    if handler is None:
        return failed("unknown tool")
    problem = input_problem(tool_id, tool_input)
    if problem is not None:
        return failed(problem)
    available = availability(session, workspace, tool_id)
    if not available.available:
        return ToolOutcome(status="UNAVAILABLE", diagnostic=f"{tool_id}: {available.reason}")
    try:
        outcome = handler(session, workspace, tool_input)
    except (ToolFailure, ResearchNotFound, ValueError) as failure:
        return failed(str(failure))
    if len(outcome.model_dump_json().encode()) > MAX_RESULT_BYTES:
        return failed(f"result exceeds {MAX_RESULT_BYTES} bytes")
    return outcome
