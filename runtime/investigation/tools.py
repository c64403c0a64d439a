"""The nine agent tools over the investigation workspace, and `run_tool`, their one entry.

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

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance
from pydantic import BaseModel, Field, field_validator
from sqlalchemy import func, or_
from sqlmodel import Session, SQLModel, col, select

from runtime.investigation.catalog import TOOL_DESCRIPTORS, availability
from runtime.investigation.models import (
    InvestigationClaim,
    InvestigationEdge,
    InvestigationEvidence,
    InvestigationJob,
    InvestigationNode,
    InvestigationSource,
    ProvenanceLink,
)
from runtime.investigation.research import (
    ResearchNotFound,
    decision_route,
    prepare_research,
    research_state,
)
from runtime.timestamps import aware_utc

ToolStatus = Literal[
    "COMPLETED", "FAILED", "DENIED", "AUTHORIZATION_REQUIRED", "UNAVAILABLE", "CANCELLED"
]
MAX_RESULT_BYTES = 262144  # the spec's 256 KiB per stored result
MAX_DIAGNOSTIC_CHARS = 1024
MAX_OBSERVATION_CHARS = 300
_LIST_CAP = 50


def bounded(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ObjectRef(BaseModel):
    """A workspace object: kind is node, edge, evidence, source, claim, job or research."""

    kind: str
    id: str


class ToolOutcome(BaseModel):
    """A tool's structured result; observations and the diagnostic are bounded on entry."""

    status: ToolStatus
    output: dict[str, Any] = Field(default_factory=dict)
    object_refs: list[ObjectRef] = Field(default_factory=list)
    artifacts: list[dict[str, Any]] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)
    provenance_refs: list[ObjectRef] = Field(default_factory=list)
    diagnostic: str | None = None

    @field_validator("observations")
    @classmethod
    def _bound_observations(cls, value: list[str]) -> list[str]:
        return [bounded(text, MAX_OBSERVATION_CHARS) for text in value]

    @field_validator("diagnostic")
    @classmethod
    def _bound_diagnostic(cls, value: str | None) -> str | None:
        return None if value is None else bounded(value, MAX_DIAGNOSTIC_CHARS)


class ToolFailure(Exception):
    """A tool could not answer (an unknown id, a range past the end): FAILED, with why."""


def _failed(diagnostic: str) -> ToolOutcome:
    return ToolOutcome(status="FAILED", diagnostic=diagnostic)


def _ref(kind: str, object_id: str) -> ObjectRef:
    return ObjectRef(kind=kind, id=object_id)


def _iso(ts: datetime) -> str:
    return aware_utc(ts).isoformat()


_KINDS: dict[str, tuple[type[SQLModel], str]] = {
    "node": (InvestigationNode, "node_id"),
    "evidence": (InvestigationEvidence, "evidence_id"),
    "claim": (InvestigationClaim, "claim_id"),
    "source": (InvestigationSource, "source_id"),
    "job": (InvestigationJob, "job_id"),
}


def _fetch(session: Session, workspace: str, kind: str, object_id: str) -> Any:
    """The row of `kind` with this id in this workspace, or a ToolFailure naming both."""
    model, id_name = _KINDS[kind]
    row = session.exec(
        select(model).where(
            model.workspace == workspace,  # type: ignore[attr-defined]
            getattr(model, id_name) == object_id,
        )
    ).first()
    if row is None:
        raise ToolFailure(f"{kind} {object_id!r} not found in workspace {workspace!r}")
    return row


# -- investigation.search ------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _matches(term: str, words: set[str]) -> bool:
    # Prefix match from 3 letters on ("transfer" finds "transfers"), exact below.
    return term in words or (len(term) >= 3 and any(word.startswith(term) for word in words))


@dataclass(frozen=True)
class _Doc:
    kind: str
    id: str
    label: str
    primary: str  # label, title, claim text: a match here weighs 3
    secondary: str  # properties, summary, status: a match here weighs 1


def _documents(session: Session, workspace: str, kinds: set[str]) -> Iterator[_Doc]:
    """The searchable text of the workspace, without loading the long excerpts."""
    if "node" in kinds:
        nodes = select(
            InvestigationNode.node_id,
            InvestigationNode.type,
            InvestigationNode.label,
            InvestigationNode.properties,
        ).where(InvestigationNode.workspace == workspace)
        for node_id, type_, label, properties in session.exec(nodes):
            secondary = f"{type_} {json.dumps(properties, ensure_ascii=False)}"
            yield _Doc("node", node_id, label, f"{label} {node_id}", secondary)
    if "evidence" in kinds:
        evidence = select(
            InvestigationEvidence.evidence_id,
            InvestigationEvidence.title,
            InvestigationEvidence.summary,
        ).where(InvestigationEvidence.workspace == workspace)
        for evidence_id, title, summary in session.exec(evidence):
            yield _Doc("evidence", evidence_id, title, title, summary)
    if "claim" in kinds:
        claims = select(InvestigationClaim.claim_id, InvestigationClaim.text).where(
            InvestigationClaim.workspace == workspace
        )
        for claim_id, text in session.exec(claims):
            yield _Doc("claim", claim_id, bounded(text, 120), text, claim_id)
    if "job" in kinds:
        jobs = select(
            InvestigationJob.job_id,
            InvestigationJob.kind,
            InvestigationJob.status,
            InvestigationJob.detail,
        ).where(InvestigationJob.workspace == workspace)
        for job_id, kind, status, detail in session.exec(jobs):
            secondary = f"{status} {json.dumps(detail, ensure_ascii=False)}"
            yield _Doc("job", job_id, f"{kind} ({status})", f"{kind} {job_id}", secondary)


def _score(terms: list[str], phrase: str, doc: _Doc) -> int:
    primary, secondary = _words(doc.primary), _words(doc.secondary)
    score = sum(3 if _matches(t, primary) else 1 if _matches(t, secondary) else 0 for t in terms)
    if score and len(terms) > 1 and phrase in doc.primary.lower():
        score += 2
    return score


def _snippet(terms: list[str], doc: _Doc, width: int = 160) -> str:
    """A window of the best-matching text around the first matched word."""
    for text in (doc.primary, doc.secondary):
        flat = " ".join(text.split())
        lower = flat.lower()
        hits = [i for i in (lower.find(t) for t in terms) if i >= 0]
        if hits:
            start = max(0, min(hits) - width // 3)
            cut = flat[start : start + width]
            return ("…" if start else "") + cut + ("…" if start + width < len(flat) else "")
    return bounded(doc.label, width)


def _search(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    query: str = args["query"]
    terms = list(dict.fromkeys(_WORD.findall(query.lower())))
    if not terms:
        raise ToolFailure(f"query {query!r} has no words to search for")
    kinds = set(args.get("kinds") or ("node", "evidence", "claim", "job"))
    limit = int(args.get("limit", 8))
    phrase = " ".join(query.lower().split())
    scored = [
        (s, doc)
        for doc in _documents(session, workspace, kinds)
        if (s := _score(terms, phrase, doc))
    ]
    order = {"node": 0, "evidence": 1, "claim": 2, "job": 3}
    # Ties: nodes first, then the shorter (more specific) label.
    scored.sort(key=lambda item: (-item[0], order[item[1].kind], len(item[1].label), item[1].id))
    top = scored[:limit]
    hits = [
        {
            "kind": doc.kind,
            "id": doc.id,
            "label": bounded(doc.label, 120),
            "snippet": _snippet(terms, doc),
            "score": score,
        }
        for score, doc in top
    ]
    observations = [f"{len(scored)} matches for {query!r}"]
    if top:
        observations.append(f"best match: {top[0][1].label} ({top[0][1].kind} {top[0][1].id})")
    return ToolOutcome(
        status="COMPLETED",
        output={
            "query": query,
            "hits": hits,
            "total": len(scored),
            "truncated": len(scored) > limit,
        },
        object_refs=[_ref(doc.kind, doc.id) for _, doc in top],
        observations=observations,
    )


# -- graph ---------------------------------------------------------------------------------


def _ids_about(rows: Iterable[tuple[str, Any]], node_id: str) -> list[str]:
    return sorted(object_id for object_id, node_ids in rows if node_id in (node_ids or []))


def _get_node(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    node: InvestigationNode = _fetch(session, workspace, "node", args["node_id"])

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
        object_refs=[_ref("node", node.node_id)],
        provenance_refs=[_ref("evidence", e) for e in evidence_ids[:20]],
        observations=[
            f"{node.label} ({node.type}): {out_count} outgoing and {in_count} incoming edges, "
            f"{len(evidence_ids)} evidence items, {len(job_ids)} jobs"
        ],
    )


def _get_neighbors(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    node: InvestigationNode = _fetch(session, workspace, "node", args["node_id"])
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
        object_refs=[_ref("node", n["node"]["node_id"]) for n in neighbors]
        + [_ref("edge", n["edge_id"]) for n in neighbors],
        observations=[
            f"{node.label} has {len(edges)} matching edges" + (f": {summary}" if summary else "")
        ],
    )


# -- evidence and provenance ---------------------------------------------------------------


def _links(session: Session, workspace: str, *conditions: Any) -> list[ProvenanceLink]:
    statement = select(ProvenanceLink).where(ProvenanceLink.workspace == workspace, *conditions)
    return list(session.exec(statement.order_by(col(ProvenanceLink.id))))


def _source_brief(source: InvestigationSource) -> dict[str, Any]:
    return {
        "source_id": source.source_id,
        "title": source.title,
        "kind": source.kind,
        "uri": source.uri,
    }


def _evidence_summary(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    evidence: InvestigationEvidence = _fetch(session, workspace, "evidence", args["evidence_id"])
    source = session.exec(
        select(InvestigationSource).where(
            InvestigationSource.workspace == workspace,
            InvestigationSource.source_id == evidence.source_id,
        )
    ).first()
    claim_ids = [
        link.to_id
        for link in _links(
            session,
            workspace,
            ProvenanceLink.from_kind == "evidence",
            ProvenanceLink.from_id == evidence.evidence_id,
            ProvenanceLink.to_kind == "claim",
        )
    ]
    origin = f"from {source.title} ({source.kind})" if source else "with no recorded source"
    return ToolOutcome(
        status="COMPLETED",
        output={
            "evidence_id": evidence.evidence_id,
            "title": evidence.title,
            "summary": bounded(evidence.summary, 2000),
            "source": _source_brief(source) if source else None,
            "node_ids": evidence.node_ids,
            "claim_ids": claim_ids,
            "excerpt_chars": len(evidence.excerpt),
        },
        object_refs=[_ref("evidence", evidence.evidence_id)]
        + [_ref("node", n) for n in evidence.node_ids[:20]],
        provenance_refs=([_ref("source", source.source_id)] if source else [])
        + [_ref("claim", c) for c in claim_ids],
        observations=[f"{evidence.title}: {origin}; supports {len(claim_ids)} claims"],
    )


def _read_excerpt(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    evidence: InvestigationEvidence = _fetch(session, workspace, "evidence", args["evidence_id"])
    total = len(evidence.excerpt)
    offset, max_chars = int(args.get("offset", 0)), int(args.get("max_chars", 800))
    if offset > total:
        raise ToolFailure(f"offset {offset} is past the end of the excerpt ({total} characters)")
    end = min(total, offset + max_chars)
    has_more = end < total
    return ToolOutcome(
        status="COMPLETED",
        output={
            "evidence_id": evidence.evidence_id,
            "offset": offset,
            "end": end,
            "total_chars": total,
            "text": evidence.excerpt[offset:end],
            "has_more": has_more,
            "next_offset": end if has_more else None,
        },
        object_refs=[_ref("evidence", evidence.evidence_id)],
        artifacts=[
            {"kind": "excerpt", "evidence_id": evidence.evidence_id, "range": [offset, end]}
        ],
        provenance_refs=[_ref("source", evidence.source_id)],
        observations=[f"read characters {offset}–{end} of {total} of {evidence.title}"],
    )


def _trace_links(
    session: Session, workspace: str, kind: str, object_id: str
) -> list[ProvenanceLink]:
    """evidence: its own links; claim/source: the evidence behind it, then that evidence's
    sources (for a claim) or derived claims (for a source)."""
    if kind == "evidence":
        return _links(
            session,
            workspace,
            ProvenanceLink.from_kind == "evidence",
            ProvenanceLink.from_id == object_id,
        )
    first = _links(
        session, workspace, ProvenanceLink.to_kind == kind, ProvenanceLink.to_id == object_id
    )
    evidence_ids = {link.from_id for link in first if link.from_kind == "evidence"}
    onward = "source" if kind == "claim" else "claim"
    second = _links(
        session,
        workspace,
        ProvenanceLink.from_kind == "evidence",
        col(ProvenanceLink.from_id).in_(evidence_ids),
        ProvenanceLink.to_kind == onward,
    )
    return first + second


def _trace(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    kind, object_id = args["object"]["kind"], args["object"]["id"]
    _fetch(session, workspace, kind, object_id)
    links = _trace_links(session, workspace, kind, object_id)
    ids: dict[str, set[str]] = {"evidence": set(), "source": set(), "claim": set()}
    ids[kind].add(object_id)
    for link in links:
        ids.setdefault(link.from_kind, set()).add(link.from_id)
        ids.setdefault(link.to_kind, set()).add(link.to_id)

    def rows(model: Any, id_column: Any, wanted: set[str]) -> list[Any]:
        statement = select(model).where(model.workspace == workspace, id_column.in_(wanted))
        return list(session.exec(statement.order_by(id_column)))

    sources = rows(InvestigationSource, col(InvestigationSource.source_id), ids["source"])
    evidence = rows(InvestigationEvidence, col(InvestigationEvidence.evidence_id), ids["evidence"])
    claims = rows(InvestigationClaim, col(InvestigationClaim.claim_id), ids["claim"])
    truncated = max(len(sources), len(evidence), len(claims), len(links)) > _LIST_CAP
    output = {
        "object": {"kind": kind, "id": object_id},
        "sources": [_source_brief(s) for s in sources[:_LIST_CAP]],
        "evidence": [
            {"evidence_id": e.evidence_id, "title": e.title, "source_id": e.source_id}
            for e in evidence[:_LIST_CAP]
        ],
        "claims": [
            {"claim_id": c.claim_id, "text": bounded(c.text, 300), "evidence_ids": c.evidence_ids}
            for c in claims[:_LIST_CAP]
        ],
        "links": [
            {
                "from": {"kind": link.from_kind, "id": link.from_id},
                "to": {"kind": link.to_kind, "id": link.to_id},
                "relation": link.relation,
            }
            for link in links[:_LIST_CAP]
        ],
        "truncated": truncated,
    }
    provenance = [_ref("source", s.source_id) for s in sources[:_LIST_CAP]]
    provenance += [_ref("evidence", e.evidence_id) for e in evidence[:_LIST_CAP]]
    provenance += [_ref("claim", c.claim_id) for c in claims[:_LIST_CAP]]
    return ToolOutcome(
        status="COMPLETED",
        output=output,
        object_refs=[_ref(kind, object_id)],
        provenance_refs=[ref for ref in provenance if (ref.kind, ref.id) != (kind, object_id)],
        observations=[
            f"{kind} {object_id}: {len(evidence)} evidence items, {len(sources)} sources, "
            f"{len(claims)} claims in its provenance chain"
            if links
            else f"no provenance recorded for {kind} {object_id}"
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
        "updated_at": _iso(job.updated_at),
    }


def _jobs_get(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    refs: list[ObjectRef] = []
    if "job_id" in args:
        jobs: list[InvestigationJob] = [_fetch(session, workspace, "job", args["job_id"])]
    else:
        node: InvestigationNode = _fetch(session, workspace, "node", args["node_id"])
        refs.append(_ref("node", node.node_id))
        everything = session.exec(
            select(InvestigationJob).where(InvestigationJob.workspace == workspace)
        )
        jobs = [job for job in everything if node.node_id in (job.node_ids or [])]
        jobs.sort(key=lambda job: (_iso(job.updated_at), job.job_id), reverse=True)
    shown = jobs[:20]
    observations = [f"job {j.job_id} ({j.kind}) is {j.status}" for j in shown[:5]]
    return ToolOutcome(
        status="COMPLETED",
        output={
            "jobs": [_job_brief(j) for j in shown],
            "total": len(jobs),
            "truncated": len(jobs) > 20,
        },
        object_refs=[_ref("job", j.job_id) for j in shown] + refs,
        observations=observations or [f"no jobs about node {args.get('node_id')}"],
    )


def _research_get_state(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    return research_get_state(session, workspace, args["research_id"])


def research_get_state(session: Session, workspace: str, research_id: str) -> ToolOutcome:
    """The research's state with the references it covers: the `research.get_state` tool,
    and the turn's own read after a decision (`agent_tools.read_research`)."""
    state = research_state(session, workspace, research_id)
    decision = state["decision"]
    said = f"; {decision['decision']} by {decision['decided_by']}" if decision else ""
    return ToolOutcome(
        status="COMPLETED",
        output=state,
        object_refs=[_ref("research", state["research_id"])]
        + [_ref("node", n) for n in state["scope"].get("node_ids", [])],
        observations=[f"research {state['research_id']} is {state['state']}{said}"],
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
        commit=False,
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
        object_refs=[_ref("research", research.research_id)]
        + [_ref("node", n) for n in research.scope["node_ids"]],
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
    "investigation.search": _search,
    "graph.get_node": _get_node,
    "graph.get_neighbors": _get_neighbors,
    "evidence.get_summary": _evidence_summary,
    "evidence.read_excerpt": _read_excerpt,
    "provenance.trace": _trace,
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
        return _failed("unknown tool")
    problem = input_problem(tool_id, tool_input)
    if problem is not None:
        return _failed(problem)
    available = availability(session, workspace, tool_id)
    if not available["available"]:
        return ToolOutcome(status="UNAVAILABLE", diagnostic=f"{tool_id}: {available['reason']}")
    try:
        outcome = handler(session, workspace, tool_input)
    except (ToolFailure, ResearchNotFound, ValueError) as failure:
        return _failed(str(failure))
    if len(outcome.model_dump_json().encode()) > MAX_RESULT_BYTES:
        return _failed(f"result exceeds {MAX_RESULT_BYTES} bytes")
    return outcome
