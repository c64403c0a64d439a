"""The deterministic agent's policy: what it reads, in which order, and that it never authorizes."""

from __future__ import annotations

from pathlib import Path

from runtime.agent_tools.contracts import CallSummary
from runtime.agent_tools.findings import Finding
from runtime.investigation.outcomes import ObjectRef
from workflows.agent_tools.deterministic_agent import PLAN, next_step, summarize, summary_refs


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
    history = [
        _done("investigation.search", ("node", "n1")),
        _done("research.prepare", ("research", "r-1"), status="AUTHORIZATION_REQUIRED"),
    ]
    assert summarize(history, "admitted") == (
        "Read 1 tool results covering 2 objects.\nResearch research:r-1 is admitted."
    )


def _with(call: CallSummary, *findings: Finding) -> CallSummary:
    return call.model_copy(update={"findings": list(findings)})


def test_summary_says_what_the_evidence_says_with_references() -> None:
    claim = ObjectRef(kind="claim", id="c-1")
    evidence = ObjectRef(kind="evidence", id="ev-1")
    source = ObjectRef(kind="source", id="s-reg")
    history = [
        _with(
            _done("investigation.search", ("node", "n1"), ("claim", "c-1")),
            Finding(kind="claim", ref=claim, text="Jane controls Acme."),
            Finding(kind="claim", ref=ObjectRef(kind="claim", id="c-2"), text="Acme paid Bob."),
        ),
        _done("graph.get_node", ("node", "n1")),
        _with(
            _done("evidence.get_summary", ("evidence", "ev-1")),
            Finding(
                kind="evidence",
                ref=evidence,
                text="Registry extract: Jane owns Acme.",
                sources=[source],
                source_note="Companies registry (public_record)",
            ),
        ),
        _with(
            _done("provenance.trace", ("evidence", "ev-1")),
            Finding(
                kind="claim", ref=claim, text="Jane controls Acme.", sources=[evidence, source]
            ),
        ),
        _done("jobs.get", status="FAILED").model_copy(update={"diagnostic": "boom"}),
    ]
    text = summarize(history, None)
    assert text.splitlines() == [
        "Read 5 tool results covering 3 objects about node:n1.",
        "What the evidence says:",
        "- Jane controls Acme. [claim:c-1; backed by evidence:ev-1, source:s-reg]",
        "- Acme paid Bob. [claim:c-2; found by search; provenance not traced]",
        "Evidence read:",
        "- evidence:ev-1 Registry extract: Jane owns Acme. "
        "[from source:s-reg Companies registry (public_record)]",
        "Not read: jobs.get FAILED (boom).",
    ]
    assert summary_refs(history) == [
        {"kind": "claim", "id": "c-1"},
        {"kind": "claim", "id": "c-2"},
        {"kind": "evidence", "id": "ev-1"},
        {"kind": "source", "id": "s-reg"},
    ]


def test_findings_from_the_demo_answer_the_demo_question(tmp_path: Path) -> None:
    """On the demo case, the deterministic agent's summary names who controls Kestrel and
    where the money went, each statement with its references."""
    from runtime.agent_tools.findings import findings_of
    from runtime.investigation.demo import ensure_demo
    from runtime.investigation.tools import run_tool
    from runtime.store import Store, upgrade_to_head

    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    upgrade_to_head(store.engine)
    question = "Who controls Kestrel Holdings and where did the Bluewater dredging money go?"
    history: list[CallSummary] = []
    with store.session() as session:
        ensure_demo(session, "demo")
        session.commit()
        while (step := next_step(question, "t", history)) is not None:
            if step.tool_id == "research.prepare":
                break
            outcome = run_tool(session, "demo", step.tool_id, step.input)
            history.append(
                CallSummary(
                    call_id="c",
                    result_id="r",
                    tool_id=step.tool_id,
                    status=outcome.status,
                    object_refs=outcome.object_refs,
                    findings=findings_of(step.tool_id, outcome),
                )
            )
    store.dispose()
    text = summarize(history, None)
    assert "Tomas Reiner is the beneficial owner" in text
    assert "[claim:c-beneficial-owner;" in text
    assert "€2.25M of public money" in text
    assert "source:s-audit-memo City Audit Office" in text
    assert "Marta Kovač nominee_shareholder_of o-kestrel" in text
