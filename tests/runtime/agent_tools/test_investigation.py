"""The investigation workspace: the nine tools, the catalog, research campaigns, the loader.

Runs on SQLite, and on PostgreSQL too when AGENTRT_TEST_POSTGRES_URL is set.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from sqlmodel import select

from cli import main as cli_main
from runtime.investigation import (
    TOOL_IDS,
    InvalidResearchTransition,
    ResearchAlreadyDecided,
    ResearchNotFound,
    ToolOutcome,
    catalog,
    complete_research,
    decide_research,
    ensure_demo,
    load_investigation,
    prepare_research,
    read_investigation_file,
    research_state,
    run_tool,
    start_research,
)
from runtime.investigation.catalog import TOOL_DESCRIPTORS
from runtime.investigation.demo import demo_data
from runtime.investigation.models import InvestigationNode, Research, ResearchDecision
from runtime.store import Store

NINE = [
    "investigation.search",
    "graph.get_node",
    "graph.get_neighbors",
    "evidence.get_summary",
    "evidence.read_excerpt",
    "provenance.trace",
    "jobs.get",
    "research.get_state",
    "research.prepare",
]
SPEC_ATTRIBUTES = {
    "tool_id",
    "tool_version",
    "capability_version",
    "description",
    "input_schema",
    "output_contract",
    "action_class",
    "risk_class",
    "cost_class",
    "network_contact",
    "authorization",
    "availability",
}


@pytest.fixture
def demo(store: Store) -> Store:
    with store.transaction() as session:
        assert ensure_demo(session)
    return store


def call(store: Store, tool_id: str, tool_input: Any, workspace: str = "demo") -> ToolOutcome:
    with store.session() as session:
        outcome = run_tool(session, workspace, tool_id, tool_input)
        session.commit()
    return outcome


def small_case(label: str = "Other Co") -> dict[str, Any]:
    return {
        "nodes": [
            {"node_id": "o-bluewater", "type": "organization", "label": label},
            {"node_id": "p-x", "type": "person", "label": "Person X"},
        ],
        "edges": [{"src": "p-x", "dst": "o-bluewater", "type": "owns"}],
    }


# -- catalog and availability --------------------------------------------------------------


def test_catalog_describes_the_nine_tools_with_every_spec_attribute(demo: Store) -> None:
    with demo.session() as session:
        tools = [t.model_dump(mode="json", exclude_unset=True) for t in catalog(session, "demo")]
    assert [tool["tool_id"] for tool in tools] == NINE == list(TOOL_IDS)
    for tool in tools:
        assert set(tool) == SPEC_ATTRIBUTES
        assert tool["network_contact"] is False
        assert tool["availability"] == {"available": True}
        assert tool["tool_version"] == "1.0.0"
        assert tool["capability_version"] == "agent-tools/v1"
        assert tool["risk_class"] in {"low", "medium"} and tool["cost_class"] in {
            "cheap",
            "moderate",
        }
        Draft202012Validator.check_schema(tool["input_schema"])
        Draft202012Validator.check_schema(tool["output_contract"])
        assert tool["input_schema"]["additionalProperties"] is False
        json.dumps(tool)
    by_id = {tool["tool_id"]: tool for tool in tools}
    prepare = by_id["research.prepare"]
    assert prepare["action_class"] == "prepare"
    assert prepare["authorization"] == {
        "required": True,
        "by": "human",
        "route": "/api/v1/research/{research_id}/decision",
        "decisions": ["approve", "deny"],
    }
    for tool_id in NINE[:-1]:
        assert by_id[tool_id]["action_class"] == "read"
        assert by_id[tool_id]["authorization"] == {"required": False}


def test_catalog_entries_are_copies(demo: Store) -> None:
    with demo.session() as session:
        catalog(session, "demo")[0].input_schema["properties"].clear()
        assert catalog(session, "demo")[0].input_schema["properties"]


def test_an_empty_workspace_has_its_tools_unavailable(demo: Store) -> None:
    with demo.session() as session:
        tools = [t.model_dump(mode="json") for t in catalog(session, "empty")]
    for tool in tools:
        assert tool["availability"]["available"] is False
        assert "'empty'" in tool["availability"]["reason"]
    outcome = call(demo, "graph.get_node", {"node_id": "o-bluewater"}, workspace="empty")
    assert outcome.status == "UNAVAILABLE"
    assert outcome.diagnostic == "graph.get_node: no nodes in workspace 'empty'"


def test_availability_follows_the_data_present(store: Store) -> None:
    with store.session() as session:
        load_investigation(session, "nodes-only", small_case())
        available = {
            tool.tool_id: tool.availability.available for tool in catalog(session, "nodes-only")
        }
    assert available == {
        "investigation.search": True,
        "graph.get_node": True,
        "graph.get_neighbors": True,
        "evidence.get_summary": False,
        "evidence.read_excerpt": False,
        "provenance.trace": False,
        "jobs.get": False,
        "research.get_state": True,
        "research.prepare": True,
    }
    outcome = call(store, "evidence.get_summary", {"evidence_id": "e"}, workspace="nodes-only")
    assert outcome.status == "UNAVAILABLE"
    assert "no evidence in workspace 'nodes-only'" in (outcome.diagnostic or "")


# -- happy paths ---------------------------------------------------------------------------


def _completed(store: Store, tool_id: str, tool_input: dict[str, Any]) -> ToolOutcome:
    outcome = call(store, tool_id, tool_input)
    assert outcome.status == "COMPLETED", outcome.diagnostic
    Draft202012Validator(TOOL_DESCRIPTORS[tool_id].output_contract).validate(outcome.output)
    encoded = json.dumps(outcome.model_dump(mode="json"))
    assert len(encoded) < 20_000  # references and short text, never big copies
    return outcome


def test_search_ranks_hits_case_insensitively(demo: Store) -> None:
    outcome = _completed(demo, "investigation.search", {"query": "KESTREL Holdings"})
    hits = outcome.output["hits"]
    assert 0 < len(hits) <= 8 and outcome.output["total"] >= len(hits)
    assert hits[0]["kind"] == "node" and hits[0]["id"] == "o-kestrel"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(len(h["snippet"]) <= 162 for h in hits)
    assert [(r.kind, r.id) for r in outcome.object_refs] == [(h["kind"], h["id"]) for h in hits]

    only_jobs = _completed(
        demo, "investigation.search", {"query": "registry", "kinds": ["job"], "limit": 1}
    )
    assert [(h["kind"], h["id"]) for h in only_jobs.output["hits"]] == [
        ("job", "j-registry-kestrel")
    ]
    nothing = _completed(demo, "investigation.search", {"query": "zeppelin"})
    assert nothing.output == {"query": "zeppelin", "hits": [], "total": 0, "truncated": False}
    no_words = call(demo, "investigation.search", {"query": "?!"})
    assert no_words.status == "FAILED" and "no words" in (no_words.diagnostic or "")


def test_get_node(demo: Store) -> None:
    outcome = _completed(demo, "graph.get_node", {"node_id": "o-bluewater"})
    node = outcome.output["node"]
    assert node["label"] == "Bluewater Marine Services Ltd" and node["type"] == "organization"
    assert outcome.output["edge_count"] == {"out": 5, "in": 3}
    assert "e-bluewater-registration" in outcome.output["evidence_ids"]
    assert "j-screening-bluewater" in outcome.output["job_ids"]
    assert outcome.object_refs[0].model_dump() == {"kind": "node", "id": "o-bluewater"}


def test_get_neighbors_with_edge_types_and_limit(demo: Store) -> None:
    outcome = _completed(
        demo,
        "graph.get_neighbors",
        {"node_id": "a-bluewater-main", "edge_types": ["transferred_to"]},
    )
    neighbors = outcome.output["neighbors"]
    assert {(n["direction"], n["node"]["node_id"]) for n in neighbors} == {
        ("in", "a-vpa-ops"),
        ("out", "a-sandline"),
        ("out", "a-kestrel-riga"),
        ("out", "a-harborview"),
    }
    kestrel = next(n for n in neighbors if n["node"]["node_id"] == "a-kestrel-riga")
    assert kestrel["edge_properties"]["total_eur"] == 1840000
    limited = _completed(demo, "graph.get_neighbors", {"node_id": "o-bluewater", "limit": 2})
    assert len(limited.output["neighbors"]) == 2
    assert limited.output["total"] == 8 and limited.output["truncated"] is True


def test_evidence_summary_points_to_source_and_claims(demo: Store) -> None:
    outcome = _completed(demo, "evidence.get_summary", {"evidence_id": "e-baltic-records"})
    assert outcome.output["source"]["source_id"] == "s-bank-riga"
    assert set(outcome.output["claim_ids"]) == {
        "c-beneficial-owner",
        "c-diverted-funds",
        "c-funds-returned",
    }
    assert "excerpt" not in outcome.output and outcome.output["excerpt_chars"] > 500
    assert {"kind": "source", "id": "s-bank-riga"} in [
        r.model_dump() for r in outcome.provenance_refs
    ]


def test_read_excerpt_is_bounded_and_pages_through(demo: Store) -> None:
    first = _completed(demo, "evidence.read_excerpt", {"evidence_id": "e-delta-survey"})
    total = first.output["total_chars"]
    assert total > 800 and len(first.output["text"]) == 800
    assert first.artifacts == [
        {"kind": "excerpt", "evidence_id": "e-delta-survey", "range": [0, 800]}
    ]
    text, offset = "", 0
    while offset is not None:
        page = _completed(
            demo,
            "evidence.read_excerpt",
            {"evidence_id": "e-delta-survey", "offset": offset, "max_chars": 300},
        )
        assert len(page.output["text"]) <= 300
        text += page.output["text"]
        offset = page.output["next_offset"]
    assert len(text) == total and "118,000" in text
    at_end = _completed(
        demo, "evidence.read_excerpt", {"evidence_id": "e-delta-survey", "offset": total}
    )
    assert at_end.output["text"] == "" and at_end.output["has_more"] is False
    past = call(
        demo, "evidence.read_excerpt", {"evidence_id": "e-delta-survey", "offset": total + 1}
    )
    assert past.status == "FAILED" and "past the end" in (past.diagnostic or "")


@pytest.mark.parametrize(
    ("kind", "object_id", "sources", "evidence", "claims"),
    [
        ("evidence", "e-baltic-records", {"s-bank-riga"}, {"e-baltic-records"}, 3),
        (
            "claim",
            "c-phantom-volume",
            {"s-contract-file", "s-delta-hydro"},
            {"e-amendment-3", "e-delta-survey", "e-invoice-0412"},
            1,
        ),
        (
            "source",
            "s-audit-memo",
            {"s-audit-memo"},
            {"e-audit-sandline", "e-audit-declarations"},
            2,
        ),
    ],
)
def test_provenance_trace(
    demo: Store, kind: str, object_id: str, sources: set[str], evidence: set[str], claims: int
) -> None:
    outcome = _completed(demo, "provenance.trace", {"object": {"kind": kind, "id": object_id}})
    assert {s["source_id"] for s in outcome.output["sources"]} == sources
    assert {e["evidence_id"] for e in outcome.output["evidence"]} == evidence
    assert len(outcome.output["claims"]) == claims
    relations = {link["relation"] for link in outcome.output["links"]}
    assert relations == {"from_source", "supports"}
    assert outcome.object_refs[0].model_dump() == {"kind": kind, "id": object_id}
    assert (kind, object_id) not in [(r.kind, r.id) for r in outcome.provenance_refs]


def test_jobs_by_id_and_by_node(demo: Store) -> None:
    one = _completed(demo, "jobs.get", {"job_id": "j-import-baltic"})
    (job,) = one.output["jobs"]
    assert job["status"] == "running" and job["updated_at"].startswith("2023-04-21T11:05:00")
    about = _completed(demo, "jobs.get", {"node_id": "o-kestrel"})
    assert [j["job_id"] for j in about.output["jobs"]] == [
        "j-registry-kestrel",
        "j-screening-bluewater",
    ]
    statuses = {j["status"] for j in demo_data()["jobs"]}
    assert statuses == {"queued", "running", "succeeded", "failed"}
    none = _completed(demo, "jobs.get", {"node_id": "l-riga"})
    assert none.output["jobs"] == [] and none.output["total"] == 0


def test_research_prepare_and_get_state_tools(demo: Store) -> None:
    prepared = call(
        demo,
        "research.prepare",
        {
            "question": "Who controls the Riga securities account?",
            "scope": {"node_ids": ["o-kestrel", "a-kestrel-riga"], "depth": 2},
            "rationale": "EUR 1.2M left Kestrel's account for a securities account.",
            "turn_id": "turn-1",
        },
    )
    assert prepared.status == "AUTHORIZATION_REQUIRED"
    research_id = prepared.output["research_id"]
    assert prepared.output == {
        "research_id": research_id,
        "state": "prepared",
        "decision_route": f"/api/v1/research/{research_id}/decision",
    }
    Draft202012Validator(TOOL_DESCRIPTORS["research.prepare"].output_contract).validate(
        prepared.output
    )
    assert prepared.object_refs[0].model_dump() == {"kind": "research", "id": research_id}
    state = _completed(demo, "research.get_state", {"research_id": research_id})
    assert state.output["state"] == "prepared" and state.output["decision"] is None
    assert state.output["scope"] == {"node_ids": ["o-kestrel", "a-kestrel-riga"], "depth": 2}
    with demo.transaction() as session:
        assert session.exec(select(ResearchDecision)).all() == []
        decide_research(session, "demo", research_id, "approve", "ana.belic", "go ahead")
    after = _completed(demo, "research.get_state", {"research_id": research_id})
    assert after.output["state"] == "admitted"
    assert after.output["decision"]["decided_by"] == "ana.belic"


def test_research_prepare_retry_from_the_same_turn_proposes_once(demo: Store) -> None:
    request = {"question": "Q?", "scope": {"node_ids": ["o-kestrel"]}, "turn_id": "t-retry"}
    first, second = call(demo, "research.prepare", request), call(demo, "research.prepare", request)
    assert first.output["research_id"] == second.output["research_id"]
    other = call(demo, "research.prepare", {**request, "question": "Another?"})
    assert other.output["research_id"] != first.output["research_id"]


def test_run_tool_leaves_the_commit_to_its_caller(demo: Store) -> None:
    with demo.session() as session:
        outcome = run_tool(
            session,
            "demo",
            "research.prepare",
            {"question": "Q", "scope": {"node_ids": ["o-kestrel"]}},
        )
        assert outcome.status == "AUTHORIZATION_REQUIRED"
        session.rollback()
    with demo.session() as session:
        assert session.exec(select(Research)).all() == []


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_id", "tool_input", "fragment"),
    [
        ("investigation.search", {}, "'query' is a required property"),
        ("investigation.search", {"query": ""}, "input.query"),
        ("investigation.search", {"query": "x", "limit": 21}, "input.limit"),
        ("investigation.search", {"query": "x", "kinds": ["edge"]}, "input.kinds[0]"),
        ("graph.get_node", {"node_id": 7}, "input.node_id: 7 is not of type 'string'"),
        ("graph.get_node", {"id": "n1"}, "('id' was unexpected)"),
        ("graph.get_node", ["o-bluewater"], "is not of type 'object'"),
        ("graph.get_node", None, "is not of type 'object'"),
        ("graph.get_neighbors", {"node_id": "o-bluewater", "limit": 0}, "input.limit"),
        ("evidence.read_excerpt", {"evidence_id": "e", "max_chars": 2001}, "input.max_chars"),
        ("evidence.read_excerpt", {"evidence_id": "e", "offset": -1}, "input.offset"),
        ("evidence.read_excerpt", {"evidence_id": "e", "offset": True}, "input.offset"),
        ("provenance.trace", {"object": {"kind": "node", "id": "x"}}, "input.object.kind"),
        ("jobs.get", {}, "give exactly one of job_id or node_id"),
        ("jobs.get", {"job_id": "a", "node_id": "b"}, "give exactly one of job_id or node_id"),
        ("research.get_state", {}, "'research_id' is a required property"),
        ("research.prepare", {"question": "q", "scope": {"node_ids": []}}, "input.scope.node_ids"),
        (
            "research.prepare",
            {"question": "q", "scope": {"node_ids": ["o-kestrel"], "depth": 4}},
            "input.scope.depth",
        ),
        (
            "research.prepare",
            {"question": "q" * 501, "scope": {"node_ids": ["x"]}},
            "input.question",
        ),
    ],
)
def test_bad_input_is_failed_with_a_diagnostic(
    demo: Store, tool_id: str, tool_input: Any, fragment: str
) -> None:
    outcome = call(demo, tool_id, tool_input)
    assert outcome.status == "FAILED"
    assert outcome.diagnostic is not None
    assert outcome.diagnostic.startswith(f"invalid input for {tool_id}: ")
    assert fragment in outcome.diagnostic
    assert outcome.output == {} and outcome.object_refs == []


def test_unknown_tool(demo: Store) -> None:
    outcome = call(demo, "shell.exec", {"cmd": "id"})
    assert outcome.status == "FAILED" and outcome.diagnostic == "unknown tool"


@pytest.mark.parametrize(
    ("tool_id", "tool_input", "diagnostic"),
    [
        ("graph.get_node", {"node_id": "x"}, "node 'x' not found in workspace 'demo'"),
        ("graph.get_neighbors", {"node_id": "x"}, "node 'x' not found in workspace 'demo'"),
        (
            "evidence.get_summary",
            {"evidence_id": "x"},
            "evidence 'x' not found in workspace 'demo'",
        ),
        (
            "evidence.read_excerpt",
            {"evidence_id": "x"},
            "evidence 'x' not found in workspace 'demo'",
        ),
        (
            "provenance.trace",
            {"object": {"kind": "claim", "id": "x"}},
            "claim 'x' not found in workspace 'demo'",
        ),
        ("jobs.get", {"job_id": "x"}, "job 'x' not found in workspace 'demo'"),
        ("jobs.get", {"node_id": "x"}, "node 'x' not found in workspace 'demo'"),
        ("research.get_state", {"research_id": "x"}, "research 'x' not found in workspace 'demo'"),
        (
            "research.prepare",
            {"question": "q", "scope": {"node_ids": ["o-kestrel", "x"]}},
            "scope names nodes not found in workspace 'demo': x",
        ),
    ],
)
def test_unknown_ids_are_failed(
    demo: Store, tool_id: str, tool_input: dict[str, Any], diagnostic: str
) -> None:
    outcome = call(demo, tool_id, tool_input)
    assert (outcome.status, outcome.diagnostic) == ("FAILED", diagnostic)


def test_diagnostics_and_observations_are_bounded(demo: Store) -> None:
    outcome = call(demo, "graph.get_node", {"node_id": "n" * 5000})
    assert outcome.status == "FAILED" and outcome.diagnostic is not None
    assert len(outcome.diagnostic) == 1024 and outcome.diagnostic.endswith("…")
    long = ToolOutcome(status="COMPLETED", observations=["o" * 1000, "short"])
    assert [len(o) for o in long.observations] == [300, 5]


def test_a_result_over_256_kib_is_refused(store: Store) -> None:
    case = {
        "nodes": [
            {
                "node_id": "big",
                "type": "document",
                "label": "Big",
                "properties": {"blob": "x" * 300_000},
            },
            {
                "node_id": "fits",
                "type": "document",
                "label": "Fits",
                "properties": {"blob": "x" * 200_000},
            },
        ]
    }
    with store.transaction() as session:
        load_investigation(session, "big", case)
    refused = call(store, "graph.get_node", {"node_id": "big"}, workspace="big")
    assert (refused.status, refused.diagnostic) == ("FAILED", "result exceeds 262144 bytes")
    assert refused.output == {}
    assert call(store, "graph.get_node", {"node_id": "fits"}, workspace="big").status == "COMPLETED"


# -- workspace isolation -------------------------------------------------------------------


def test_workspaces_see_nothing_of_each_other(demo: Store) -> None:
    assert call(demo, "graph.get_node", {"node_id": "o-bluewater"}, "other").status == "UNAVAILABLE"
    with demo.transaction() as session:
        load_investigation(session, "other", small_case("Bluewater of another case"))
    other = call(demo, "graph.get_node", {"node_id": "o-bluewater"}, "other")
    assert other.output["node"]["label"] == "Bluewater of another case"
    assert other.output["evidence_ids"] == [] and other.output["edge_count"] == {"out": 0, "in": 1}
    search = call(demo, "investigation.search", {"query": "Kestrel"}, "other")
    assert search.output["hits"] == []
    assert call(demo, "graph.get_node", {"node_id": "o-kestrel"}, "other").status == "FAILED"
    prepared = call(
        demo, "research.prepare", {"question": "q", "scope": {"node_ids": ["o-kestrel"]}}
    )
    research_id = prepared.output["research_id"]
    state = call(demo, "research.get_state", {"research_id": research_id}, "other")
    assert state.status == "FAILED" and "not found in workspace 'other'" in (state.diagnostic or "")
    with demo.session() as session:
        with pytest.raises(ResearchNotFound):
            decide_research(session, "other", research_id, "approve", "mallory")
        with pytest.raises(ResearchNotFound):
            research_state(session, "other", research_id)
    # The demo is untouched by the other workspace's load.
    mine = call(demo, "graph.get_node", {"node_id": "o-bluewater"})
    assert mine.output["node"]["label"] == "Bluewater Marine Services Ltd"


# -- the research state machine ------------------------------------------------------------


def _prepare(store: Store) -> str:
    with store.transaction() as session:
        research = prepare_research(
            session, "demo", "Trace the Riga funds", {"node_ids": ["a-kestrel-riga"]}, None, "t"
        )
        assert research.state == "prepared"
        assert session.exec(select(ResearchDecision)).all() == []
        return research.research_id


def test_prepare_creates_no_decision(demo: Store) -> None:
    research_id = _prepare(demo)
    with demo.session() as session:
        state = research_state(session, "demo", research_id).model_dump(mode="json")
        assert session.exec(select(ResearchDecision)).all() == []
    assert state["state"] == "prepared" and state["decision"] is None
    assert state["scope"] == {"node_ids": ["a-kestrel-riga"], "depth": 1}
    assert state["decision_route"] == f"/api/v1/research/{research_id}/decision"
    json.dumps(state)


def test_approve_persists_the_grant_and_admits(demo: Store) -> None:
    research_id = _prepare(demo)
    with demo.transaction() as session:
        research = decide_research(session, "demo", research_id, "approve", "ana.belic", "ok")
        assert research.state == "admitted"
    with demo.session() as session:
        state = research_state(session, "demo", research_id).model_dump(mode="json")
        (grant,) = session.exec(select(ResearchDecision)).all()
    assert state["state"] == "admitted"
    assert state["decision"]["decision"] == "approve"
    assert state["decision"]["decided_by"] == "ana.belic"
    assert state["decision"]["note"] == "ok"
    assert state["decision"]["scope"] == state["scope"]
    assert grant.research_id == research_id and grant.decided_at is not None
    with demo.session() as session:
        assert start_research(session, "demo", research_id).state == "running"
        assert complete_research(session, "demo", research_id).state == "completed"
        with pytest.raises(InvalidResearchTransition):
            complete_research(session, "demo", research_id)
        with pytest.raises(ResearchAlreadyDecided):
            decide_research(session, "demo", research_id, "deny", "someone")


def test_deny_persists_the_denial(demo: Store) -> None:
    research_id = _prepare(demo)
    with demo.transaction() as session:
        assert decide_research(session, "demo", research_id, "deny", "ana.belic").state == "denied"
        with pytest.raises(ResearchAlreadyDecided, match="already decided"):
            decide_research(session, "demo", research_id, "approve", "ana.belic")
        with pytest.raises(InvalidResearchTransition):
            start_research(session, "demo", research_id)
    with demo.session() as session:
        state = research_state(session, "demo", research_id).model_dump(mode="json")
    assert state["state"] == "denied" and state["decision"]["decision"] == "deny"


def test_double_approval_is_refused(demo: Store) -> None:
    research_id = _prepare(demo)
    with demo.session() as session:
        decide_research(session, "demo", research_id, "approve", "a")
        with pytest.raises(ResearchAlreadyDecided):
            decide_research(session, "demo", research_id, "approve", "a")
        assert len(session.exec(select(ResearchDecision)).all()) == 1


def test_invalid_transitions_and_decisions(demo: Store) -> None:
    research_id = _prepare(demo)
    with demo.session() as session:
        with pytest.raises(InvalidResearchTransition, match="prepared: cannot move to running"):
            start_research(session, "demo", research_id)
        with pytest.raises(InvalidResearchTransition):
            complete_research(session, "demo", research_id)
        with pytest.raises(ValueError, match="decision must be 'approve' or 'deny'"):
            decide_research(session, "demo", research_id, "maybe", "a")
        with pytest.raises(ValueError, match="decided_by"):
            decide_research(session, "demo", research_id, "approve", "  ")
        with pytest.raises(ResearchNotFound):
            decide_research(session, "demo", "no-such-id", "approve", "a")
        with pytest.raises(ResearchNotFound):
            start_research(session, "demo", "no-such-id")
        with pytest.raises(ValueError, match="question"):
            prepare_research(session, "demo", " ", {"node_ids": ["o-kestrel"]})
        with pytest.raises(ValueError, match="scope"):
            prepare_research(session, "demo", "q", {"node_ids": ["o-kestrel"], "approved": True})
        assert research_state(session, "demo", research_id).state == "prepared"


def test_no_tool_and_no_input_can_approve_a_research(demo: Store) -> None:
    """The agent has no path to authorize itself: no decision tool, no crafted input."""
    research_id = _prepare(demo)
    for tool_id in ("research.decide", "research.approve", "research.decision", "research.admit"):
        assert call(
            demo, tool_id, {"research_id": research_id, "decision": "approve"}
        ).diagnostic == ("unknown tool")
    for descriptor in TOOL_DESCRIPTORS.values():
        schema_text = json.dumps(descriptor.input_schema)
        assert "decided_by" not in schema_text and '"decision"' not in schema_text
        assert descriptor.action_class in {"read", "prepare"}
    crafted = [
        ("research.get_state", {"research_id": research_id, "decision": "approve"}),
        ("research.get_state", {"research_id": research_id, "state": "admitted"}),
        (
            "research.prepare",
            {"question": "q", "scope": {"node_ids": ["o-kestrel"]}, "approve": True},
        ),
        (
            "research.prepare",
            {
                "question": "q",
                "scope": {"node_ids": ["o-kestrel"]},
                "decision": {"decision": "approve", "decided_by": "agent"},
            },
        ),
        (
            "research.prepare",
            {"question": "q", "scope": {"node_ids": ["o-kestrel"], "authorized": True}},
        ),
        (
            "research.prepare",
            {"question": "q", "scope": {"node_ids": ["o-kestrel"]}, "state": "admitted"},
        ),
    ]
    for tool_id, tool_input in crafted:
        outcome = call(demo, tool_id, tool_input)
        assert outcome.status == "FAILED", (tool_id, tool_input)
        assert "was unexpected" in (outcome.diagnostic or "")
    for tool_id in NINE:
        call(
            demo,
            tool_id,
            {"research_id": research_id, "decision": "approve", "decided_by": "agent"},
        )
    # Even a valid prepare proposes a new research, which waits for a human.
    proposed = call(
        demo, "research.prepare", {"question": "q", "scope": {"node_ids": ["o-kestrel"]}}
    )
    assert proposed.status == "AUTHORIZATION_REQUIRED"
    with demo.session() as session:
        assert {r.state for r in session.exec(select(Research)).all()} == {"prepared"}
        assert session.exec(select(ResearchDecision)).all() == []


# -- loader and demo -----------------------------------------------------------------------


def test_demo_is_a_realistic_case(demo: Store) -> None:
    data = demo_data()
    assert 30 <= len(data["nodes"]) <= 40 and len(data["edges"]) >= 40
    assert len(data["sources"]) == 10 and len(data["evidence"]) == 15
    assert len(data["claims"]) == 8 and len(data["jobs"]) == 6
    assert all(e["excerpt"].count("\n\n") >= 2 for e in data["evidence"])
    with demo.session() as session:
        assert len(session.exec(select(InvestigationNode)).all()) == len(data["nodes"])


def test_ensure_demo_is_idempotent_and_keeps_user_data(store: Store) -> None:
    with store.session() as session:
        assert ensure_demo(session) is True
        assert ensure_demo(session) is False
        assert len(session.exec(select(InvestigationNode)).all()) == 40
        load_investigation(session, "mine", small_case())
        assert ensure_demo(session, "mine") is False
        labels = session.exec(
            select(InvestigationNode.label).where(InvestigationNode.workspace == "mine")
        ).all()
    assert sorted(labels) == ["Other Co", "Person X"]


def test_load_replaces_the_workspace_data_and_keeps_research(demo: Store) -> None:
    research_id = _prepare(demo)
    with demo.transaction() as session:
        counts = load_investigation(session, "demo", small_case())
    assert counts == {
        "nodes": 2,
        "edges": 1,
        "sources": 0,
        "evidence": 0,
        "claims": 0,
        "provenance_links": 0,
        "jobs": 0,
    }
    assert call(demo, "graph.get_node", {"node_id": "o-kestrel"}).status == "FAILED"
    assert call(demo, "evidence.get_summary", {"evidence_id": "e-baltic-records"}).status == (
        "UNAVAILABLE"
    )
    assert call(demo, "research.get_state", {"research_id": research_id}).status == "COMPLETED"


def test_demo_counts_include_derived_provenance_links(store: Store) -> None:
    data = demo_data()
    with store.session() as session:
        counts = load_investigation(session, "demo", data)
    supports = sum(len(c["evidence_ids"]) for c in data["claims"])
    assert counts["provenance_links"] == len(data["evidence"]) + supports
    assert counts["nodes"] == 40 and counts["evidence"] == 15


def _broken(change: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(small_case()))
    data["sources"] = [{"source_id": "s1", "title": "S", "kind": "k"}]
    data["evidence"] = [
        {"evidence_id": "e1", "title": "E", "summary": "s", "excerpt": "x", "source_id": "s1"}
    ]
    data["claims"] = [{"claim_id": "c1", "text": "t", "evidence_ids": ["e1"]}]
    data["jobs"] = [{"job_id": "j1", "kind": "k", "status": "queued"}]
    if change == "no nodes":
        del data["nodes"]
    elif change == "duplicate node":
        data["nodes"].append(dict(data["nodes"][0]))
    elif change == "dangling edge":
        data["edges"].append({"src": "p-x", "dst": "n-x", "type": "owns"})
    elif change == "duplicate edge":
        data["edges"].append(dict(data["edges"][0]))
    elif change == "unknown source":
        data["evidence"][0]["source_id"] = "s-x"
    elif change == "unknown evidence":
        data["claims"][0]["evidence_ids"] = ["e-x"]
    elif change == "bad status":
        data["jobs"][0]["status"] = "done"
    elif change == "bad timestamp":
        data["jobs"][0]["updated_at"] = "yesterday"
    elif change == "extra property":
        data["edge"] = []
    elif change == "wrong format":
        data["format"] = "v2"
    elif change == "missing label":
        del data["nodes"][1]["label"]
    elif change == "unknown job node":
        data["jobs"][0]["node_ids"] = ["n-x"]
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no nodes", r"\(top level\): 'nodes' is a required property"),
        ("duplicate node", r"nodes\[2\]\.node_id: 'o-bluewater' is duplicated"),
        ("dangling edge", r"edges\[1\]: unknown node 'n-x'"),
        ("duplicate edge", r"edges\[1\]\.edge_id: 'p-x:owns:o-bluewater' is duplicated"),
        ("unknown source", r"evidence\[0\]\.source_id: unknown source 's-x'"),
        ("unknown evidence", r"claims\[0\]\.evidence_ids: unknown evidence 'e-x'"),
        ("bad status", r"jobs\[0\]\.status: 'done' is not one of"),
        ("bad timestamp", r"jobs\[0\]\.updated_at: 'yesterday' is not an ISO 8601 date-time"),
        ("extra property", r"\('edge' was unexpected\)"),
        ("wrong format", r"format: 'agentrt-investigation/v1' was expected"),
        ("missing label", r"nodes\[1\]: 'label' is a required property"),
        ("unknown job node", r"jobs\[0\]\.node_ids: unknown node 'n-x'"),
    ],
)
def test_loader_names_each_problem_and_writes_nothing(
    demo: Store, change: str, message: str
) -> None:
    with demo.transaction() as session:
        assert load_investigation(session, "ok", _broken("none"))["claims"] == 1
        with pytest.raises(ValueError, match=f"^invalid investigation data: .*{message}"):
            load_investigation(session, "demo", _broken(change))
    assert call(demo, "graph.get_node", {"node_id": "o-kestrel"}).status == "COMPLETED"


def test_loader_refuses_a_bad_workspace_id(store: Store) -> None:
    with store.session() as session, pytest.raises(ValueError, match="workspace id"):
        load_investigation(session, "", small_case())


def test_read_investigation_file(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(small_case()))
    assert read_investigation_file(good) == small_case()
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="is not valid JSON"):
        read_investigation_file(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="must be a JSON object"):
        read_investigation_file(tmp_path / "list.json")
    with pytest.raises(ValueError, match="cannot read"):
        read_investigation_file(tmp_path / "missing.json")


def test_cli_load_investigation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case.json"
    case.write_text(json.dumps(small_case("From the CLI")))
    data_dir = tmp_path / "data"
    argv = ["load-investigation", str(case), "--workspace-id", "cli", "--data-dir", str(data_dir)]
    assert cli_main(argv) == 0
    assert "into workspace 'cli': 2 nodes, 1 edges" in capsys.readouterr().out
    store = Store(f"sqlite:///{data_dir / 'agentrt.db'}")
    try:
        outcome = call(store, "graph.get_node", {"node_id": "o-bluewater"}, workspace="cli")
        assert outcome.output["node"]["label"] == "From the CLI"
    finally:
        store.dispose()
    case.write_text(json.dumps({"nodes": [{"node_id": "x"}]}))
    assert cli_main(argv) == 1
    assert "'type' is a required property" in capsys.readouterr().err


def test_concurrent_decisions_record_exactly_one(demo: Store) -> None:
    research_id = _prepare(demo)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def decide(decision: str) -> None:
        barrier.wait()
        try:
            with demo.transaction() as session:
                decide_research(session, "demo", research_id, decision, "human")
            outcomes.append(decision)
        except ResearchAlreadyDecided:
            outcomes.append("refused")

    threads = [threading.Thread(target=decide, args=(d,)) for d in ("approve", "deny") * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes).count("refused") == 3
    with demo.session() as session:
        (decision,) = session.exec(select(ResearchDecision)).all()
        state = research_state(session, "demo", research_id).state
    assert state == {"approve": "admitted", "deny": "denied"}[decision.decision]
