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


def summarize(history: list[CallSummary], research_state: str | None) -> str:
    """The turn's closing summary, from references only."""
    reads = [c for c in history if c.tool_id != "research.prepare"]
    refs = sorted({f"{r.kind}:{r.id}" for c in history for r in c.object_refs})
    text = f"Read {len(reads)} tool results covering {len(refs)} objects."
    if research_state is not None:
        text += f" Research is {research_state}."
    return text
