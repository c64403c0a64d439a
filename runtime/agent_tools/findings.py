"""What a tool result *says*, in a few bounded lines, for the turn's closing summary.

A workflow keeps references, never a result's content (the result is in the store).
The deterministic agent's summary must still say what it read: the claims, the
evidence behind them and where that evidence comes from. So the activity that runs
a call extracts these few statements from the result (each bounded, a handful per
call) into the `CallSummary`, and `summarize` composes them without any I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from runtime.investigation.outcomes import ObjectRef, ToolOutcome, bounded

FindingKind = Literal["claim", "evidence", "link", "job"]

MAX_FINDINGS_PER_CALL = 8
MAX_FINDING_CHARS = 300


class Finding(BaseModel):
    """One statement read from a result: a claim, an evidence item, a graph link, a job.

    `ref` is the object it is about; `sources` the refs of what backs it (evidence
    for a claim, the source for an evidence item), as the result reported them.
    """

    kind: FindingKind
    ref: ObjectRef
    text: str
    sources: list[ObjectRef] = Field(default_factory=list)
    # The source's title and kind, for an evidence item ("City Audit Office memo (report)").
    source_note: str | None = None


def _ref(kind: str, object_id: Any) -> ObjectRef:
    return ObjectRef(kind=kind, id=str(object_id))


def _text(value: Any) -> str:
    return bounded(" ".join(str(value or "").split()), MAX_FINDING_CHARS)


def _search(output: dict[str, Any]) -> list[Finding]:
    return [
        Finding(kind="claim", ref=_ref("claim", hit["id"]), text=_text(hit.get("snippet")))
        for hit in output.get("hits", [])
        if isinstance(hit, dict) and hit.get("kind") == "claim"
    ]


def _neighbors(output: dict[str, Any]) -> list[Finding]:
    found = []
    for item in output.get("neighbors", []):
        node = item.get("node") or {}
        edge = str(item.get("edge_type", "linked_to"))
        this, other = str(output.get("node_id", "?")), str(node.get("label", node.get("node_id")))
        text = (
            f"{other} {edge} {this}" if item.get("direction") == "in" else f"{this} {edge} {other}"
        )
        found.append(Finding(kind="link", ref=_ref("edge", item.get("edge_id")), text=_text(text)))
    return found


def _source_note(source: Any) -> str | None:
    if not isinstance(source, dict):
        return None
    return _text(f"{source.get('title', source.get('source_id'))} ({source.get('kind', '?')})")


def _evidence(output: dict[str, Any]) -> list[Finding]:
    source = output.get("source")
    return [
        Finding(
            kind="evidence",
            ref=_ref("evidence", output.get("evidence_id")),
            text=_text(f"{output.get('title', '')}: {output.get('summary', '')}"),
            sources=[_ref("source", source["source_id"])] if isinstance(source, dict) else [],
            source_note=_source_note(source),
        )
    ]


def _trace(output: dict[str, Any]) -> list[Finding]:
    sources = {s["source_id"]: s for s in output.get("sources", []) if isinstance(s, dict)}
    evidence_source = {
        e["evidence_id"]: e.get("source_id")
        for e in output.get("evidence", [])
        if isinstance(e, dict)
    }
    found = []
    for claim in output.get("claims", []):
        evidence_ids = [str(e) for e in claim.get("evidence_ids", [])]
        backing = [_ref("evidence", e) for e in evidence_ids]
        backing += [
            _ref("source", evidence_source[e])
            for e in evidence_ids
            if evidence_source.get(e) in sources
        ]
        found.append(
            Finding(
                kind="claim",
                ref=_ref("claim", claim.get("claim_id")),
                text=_text(claim.get("text")),
                sources=backing,
            )
        )
    for evidence_id, source_id in evidence_source.items():
        found.append(
            Finding(
                kind="evidence",
                ref=_ref("evidence", evidence_id),
                text="",
                sources=[_ref("source", source_id)] if source_id else [],
                source_note=_source_note(sources.get(source_id)),
            )
        )
    return found


def _jobs(output: dict[str, Any]) -> list[Finding]:
    found = []
    for job in output.get("jobs", []):
        detail = job.get("detail") or {}
        why = f": {detail['error']}" if isinstance(detail, dict) and detail.get("error") else ""
        found.append(
            Finding(
                kind="job",
                ref=_ref("job", job.get("job_id")),
                text=_text(f"{job.get('kind', 'job')} {job.get('status', '?')}{why}"),
            )
        )
    return found


_EXTRACTORS = {
    "investigation.search": _search,
    "graph.get_neighbors": _neighbors,
    "evidence.get_summary": _evidence,
    "provenance.trace": _trace,
    "jobs.get": _jobs,
}


def findings_of(tool_id: str, outcome: ToolOutcome) -> list[Finding]:
    """The statements of a completed result worth quoting in a summary (bounded)."""
    extract = _EXTRACTORS.get(tool_id)
    if extract is None or outcome.status != "COMPLETED":
        return []
    try:
        return extract(outcome.output)[:MAX_FINDINGS_PER_CALL]
    except (KeyError, TypeError, AttributeError):  # a result of another shape: say nothing
        return []
