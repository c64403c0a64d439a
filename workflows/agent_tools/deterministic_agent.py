"""The deterministic demo agent: which tool to call next, from what it has seen so far.

Pure policy (no I/O): the workflow and the unit tests use it directly. The
agent reads the investigation progressively — search, the best node, its
neighbours, evidence, provenance, jobs — then proposes a research with
`research.prepare`. It has no step that decides or approves anything.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from runtime.agent_tools.contracts import CallSummary
from runtime.agent_tools.findings import Finding
from runtime.investigation.outcomes import ObjectRef

PLAN = [
    "investigation.search",
    "graph.get_node",
    "graph.get_neighbors",
    "evidence.get_summary",
    "evidence.read_excerpt",
    "provenance.trace",
    "jobs.get",
    "research.prepare",
]


class Step(BaseModel):
    tool_id: str
    input: dict[str, Any]
    purpose: str


def _first(history: list[CallSummary], kind: str, tools: tuple[str, ...] = ()) -> str | None:
    for call in history:
        if tools and call.tool_id not in tools:
            continue
        for ref in call.object_refs:
            if ref.kind == kind:
                return ref.id
    return None


def _nodes(history: list[CallSummary], limit: int) -> list[str]:
    seen: list[str] = []
    for call in history:
        for ref in call.object_refs:
            if ref.kind == "node" and ref.id not in seen:
                seen.append(ref.id)
    return seen[:limit]


def next_step(prompt: str, turn_id: str, history: list[CallSummary]) -> Step | None:
    """The next tool call, or None when the agent has nothing left to read or propose."""
    done = {call.tool_id for call in history}
    if "investigation.search" not in done:
        return Step(
            tool_id="investigation.search",
            input={"query": prompt.strip()[:200] or "investigation", "limit": 8},
            purpose="find the objects the question is about",
        )
    node = _first(history, "node", ("investigation.search",))
    if node is None:
        return None  # nothing in the investigation matches: no research to propose
    evidence = _first(history, "evidence")
    candidates = [
        Step(
            tool_id="graph.get_node", input={"node_id": node}, purpose="read the best matching node"
        ),
        Step(
            tool_id="graph.get_neighbors",
            input={"node_id": node, "limit": 10},
            purpose="see what the node is connected to",
        ),
    ]
    if evidence is not None:
        candidates += [
            Step(
                tool_id="evidence.get_summary",
                input={"evidence_id": evidence},
                purpose="read the evidence summary",
            ),
            Step(
                tool_id="evidence.read_excerpt",
                input={"evidence_id": evidence, "offset": 0, "max_chars": 800},
                purpose="read a bounded excerpt of the evidence",
            ),
            Step(
                tool_id="provenance.trace",
                input={"object": {"kind": "evidence", "id": evidence}},
                purpose="trace where the evidence comes from and what it supports",
            ),
        ]
    candidates.append(
        Step(tool_id="jobs.get", input={"node_id": node}, purpose="check jobs about the node")
    )
    for step in candidates:
        if step.tool_id not in done:
            return step
    if "research.prepare" not in done:
        return Step(
            tool_id="research.prepare",
            input={
                "question": prompt.strip()[:500] or "investigation follow-up",
                "scope": {"node_ids": _nodes(history, 5) or [node], "depth": 1},
                "rationale": "Proposed after reading the matching nodes, evidence, "
                "provenance and jobs; running it needs a human decision.",
                "turn_id": turn_id,
            },
            purpose="propose a research campaign (a human decides)",
        )
    return None


MAX_SUMMARY_CHARS = 2500
_UNSUCCESSFUL = ("FAILED", "UNAVAILABLE", "DENIED")


def _ref_text(ref: ObjectRef) -> str:
    return f"{ref.kind}:{ref.id}"


def _merge(history: list[CallSummary], kind: str) -> dict[str, Finding]:
    """The findings of one kind by object, later reads completing earlier ones."""
    merged: dict[str, Finding] = {}
    for call in history:
        for finding in call.findings:
            if finding.kind != kind:
                continue
            known = merged.get(finding.ref.id)
            if known is None:
                merged[finding.ref.id] = finding.model_copy(deep=True)
                continue
            known.text = known.text or finding.text
            known.sources += [s for s in finding.sources if s not in known.sources]
            known.source_note = known.source_note or finding.source_note
    return merged


def summarize(history: list[CallSummary], research_state: str | None) -> str:
    """The turn's closing summary: what the evidence read says, with its references.

    Built from the findings each call carried back (claims, evidence and its sources,
    graph links, jobs), never from the store: the workflow does no I/O. Each statement
    names the objects it rests on as `kind:id`, the refs of the agent-tools spec.
    """
    reads = [c for c in history if c.tool_id != "research.prepare"]
    refs = sorted({f"{r.kind}:{r.id}" for c in history for r in c.object_refs})
    subject = next(
        (r for c in history if c.tool_id == "graph.get_node" for r in c.object_refs), None
    )
    about = f" about {_ref_text(subject)}" if subject else ""
    lines = [f"Read {len(reads)} tool results covering {len(refs)} objects{about}."]
    claims = _merge(history, "claim")
    evidence = _merge(history, "evidence")
    if claims:
        lines.append("What the evidence says:")
        for claim in claims.values():
            backing = ", ".join(_ref_text(s) for s in claim.sources)
            where = f"backed by {backing}" if backing else "found by search; provenance not traced"
            lines.append(f"- {claim.text} [{_ref_text(claim.ref)}; {where}]")
    if evidence:
        lines.append("Evidence read:")
        for item in evidence.values():
            origin = ", ".join(_ref_text(s) for s in item.sources) or "no recorded source"
            note = f" {item.source_note}" if item.source_note else ""
            text = f" {item.text}" if item.text else ""
            lines.append(f"- {_ref_text(item.ref)}{text} [from {origin}{note}]")
    links = [f.text for c in history for f in c.findings if f.kind == "link"]
    if links:
        lines.append("Links: " + "; ".join(dict.fromkeys(links)) + ".")
    jobs = _merge(history, "job")
    if jobs:
        lines.append(
            "Jobs: " + "; ".join(f"{j.text} [{_ref_text(j.ref)}]" for j in jobs.values()) + "."
        )
    failed = [c for c in reads if c.status in _UNSUCCESSFUL]
    if failed:
        lines.append(
            "Not read: "
            + "; ".join(f"{c.tool_id} {c.status} ({c.diagnostic or 'no detail'})" for c in failed)
            + "."
        )
    research = next(
        (r for c in history if c.tool_id == "research.prepare" for r in c.object_refs), None
    )
    if research_state is not None:
        name = f"Research {_ref_text(research)}" if research else "Research"
        lines.append(f"{name} is {research_state}.")
    text = "\n".join(lines)
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def summary_refs(history: list[CallSummary], limit: int = 20) -> list[dict[str, str]]:
    """The objects the summary rests on (claims, evidence, sources), for the event's refs."""
    seen: dict[tuple[str, str], None] = {}
    for call in history:
        for finding in call.findings:
            if finding.kind in ("claim", "evidence"):
                seen.setdefault((finding.ref.kind, finding.ref.id))
                for source in finding.sources:
                    seen.setdefault((source.kind, source.id))
    return [{"kind": kind, "id": object_id} for kind, object_id in list(seen)[:limit]]
