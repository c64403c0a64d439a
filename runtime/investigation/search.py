"""`investigation.search`: the workspace's nodes, evidence, claims and sources ranked by
the query's words."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, select

from runtime.investigation.models import (
    InvestigationClaim,
    InvestigationEvidence,
    InvestigationJob,
    InvestigationNode,
)
from runtime.investigation.outcomes import ToolFailure, ToolOutcome, bounded, ref

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


def search(session: Session, workspace: str, args: dict[str, Any]) -> ToolOutcome:
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
        object_refs=[ref(doc.kind, doc.id) for _, doc in top],
        observations=observations,
    )
