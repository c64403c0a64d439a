"""The evidence and provenance tools: `evidence.summary`, `source.read_excerpt` and
`provenance.trace`."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from runtime.investigation.models import (
    InvestigationClaim,
    InvestigationEvidence,
    InvestigationSource,
    ProvenanceLink,
)
from runtime.investigation.outcomes import LIST_CAP, ToolFailure, ToolOutcome, bounded, fetch, ref

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


def evidence_summary(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    evidence: InvestigationEvidence = fetch(session, workspace, "evidence", args["evidence_id"])
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
        object_refs=[ref("evidence", evidence.evidence_id)]
        + [ref("node", n) for n in evidence.node_ids[:20]],
        provenance_refs=([ref("source", source.source_id)] if source else [])
        + [ref("claim", c) for c in claim_ids],
        observations=[f"{evidence.title}: {origin}; supports {len(claim_ids)} claims"],
    )


def read_excerpt(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    evidence: InvestigationEvidence = fetch(session, workspace, "evidence", args["evidence_id"])
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
        object_refs=[ref("evidence", evidence.evidence_id)],
        artifacts=[
            {"kind": "excerpt", "evidence_id": evidence.evidence_id, "range": [offset, end]}
        ],
        provenance_refs=[ref("source", evidence.source_id)],
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


def trace(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
    kind, object_id = args["object"]["kind"], args["object"]["id"]
    fetch(session, workspace, kind, object_id)
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
    truncated = max(len(sources), len(evidence), len(claims), len(links)) > LIST_CAP
    output = {
        "object": {"kind": kind, "id": object_id},
        "sources": [_source_brief(s) for s in sources[:LIST_CAP]],
        "evidence": [
            {"evidence_id": e.evidence_id, "title": e.title, "source_id": e.source_id}
            for e in evidence[:LIST_CAP]
        ],
        "claims": [
            {"claim_id": c.claim_id, "text": bounded(c.text, 300), "evidence_ids": c.evidence_ids}
            for c in claims[:LIST_CAP]
        ],
        "links": [
            {
                "from": {"kind": link.from_kind, "id": link.from_id},
                "to": {"kind": link.to_kind, "id": link.to_id},
                "relation": link.relation,
            }
            for link in links[:LIST_CAP]
        ],
        "truncated": truncated,
    }
    provenance = [ref("source", s.source_id) for s in sources[:LIST_CAP]]
    provenance += [ref("evidence", e.evidence_id) for e in evidence[:LIST_CAP]]
    provenance += [ref("claim", c.claim_id) for c in claims[:LIST_CAP]]
    return ToolOutcome(
        status="COMPLETED",
        output=output,
        object_refs=[ref(kind, object_id)],
        provenance_refs=[ref for ref in provenance if (ref.kind, ref.id) != (kind, object_id)],
        observations=[
            f"{kind} {object_id}: {len(evidence)} evidence items, {len(sources)} sources, "
            f"{len(claims)} claims in its provenance chain"
            if links
            else f"no provenance recorded for {kind} {object_id}"
        ],
    )
