"""The deterministic agent's policy: what it reads, in which order, and that it never authorizes."""

from __future__ import annotations

from runtime.agent_tools.contracts import CallSummary
from runtime.investigation.tools import ObjectRef
from workflows.deterministic_agent import PLAN, next_step, summarize


def _done(tool_id: str, *refs: tuple[str, str], status: str = "COMPLETED") -> CallSummary:
    return CallSummary(
        call_id=f"c-{tool_id}",
        result_id=f"r-{tool_id}",
        tool_id=tool_id,
        status=status,
        object_refs=[ObjectRef(kind=k, id=i) for k, i in refs],
    )


def test_reads_progressively_then_prepares() -> None:
    history: list[CallSummary] = []
    seen: list[str] = []
    refs = {
        "investigation.search": [("node", "n1"), ("evidence", "e1")],
        "graph.get_neighbors": [("node", "n2"), ("node", "n3")],
    }
    while (step := next_step("Who controls Acme?", "t1", history)) is not None:
        seen.append(step.tool_id)
        history.append(_done(step.tool_id, *refs.get(step.tool_id, [])))
        assert len(seen) < 20
    assert seen == PLAN
    prepare = [c for c in history if c.tool_id == "research.prepare"]
    assert len(prepare) == 1


def test_prepare_input_scopes_the_nodes_read_and_names_the_turn() -> None:
    history = [
        _done("investigation.search", ("node", "n1")),
        _done("graph.get_node", ("node", "n1")),
        _done("graph.get_neighbors", ("node", "n2")),
        _done("jobs.get"),
    ]
    step = next_step("q", "turn-9", history)
    assert step is not None and step.tool_id == "research.prepare"
    assert step.input["scope"]["node_ids"] == ["n1", "n2"]
    assert step.input["turn_id"] == "turn-9"
    assert set(step.input) == {"question", "scope", "rationale", "turn_id"}


def test_without_evidence_the_evidence_steps_are_skipped() -> None:
    history = [_done("investigation.search", ("node", "n1"))]
    order = []
    while (step := next_step("q", "t", history)) is not None:
        order.append(step.tool_id)
        history.append(_done(step.tool_id))
    assert order == ["graph.get_node", "graph.get_neighbors", "jobs.get", "research.prepare"]


def test_nothing_found_means_no_research() -> None:
    assert next_step("zzz", "t", [_done("investigation.search")]) is None


def test_no_step_ever_decides() -> None:
    assert all("decid" not in t and "approve" not in t for t in PLAN)


def test_summary_mentions_reads_and_research_state() -> None:
    history = [_done("investigation.search", ("node", "n1")), _done("research.prepare")]
    assert summarize(history, "admitted") == (
        "Read 1 tool results covering 1 objects. Research is admitted."
    )
