"""Compliance corpus discovery (issue 21, item 6; spec §3.4.8): the Compliance objective
names the tenant's compliance projects and each one's corpus, configured
(`compliance.projects`) or discovered from the projects its artifacts name, the
workspace otherwise; the compliance tools record and read per project."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runtime.standing_agents import catalog, configs, episode
from runtime.standing_agents.compliance_corpus import corpus, parse_projects
from runtime.standing_agents.configs import validate_config
from runtime.standing_agents.contracts import AgentEvent, AgentType, EventKind
from runtime.standing_agents.tool_context import ToolContext
from runtime.standing_agents.tools import HANDLERS
from runtime.store.engine import Store
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)


def _tool(store: Store, name: str, arguments: dict[str, Any], op: str) -> dict[str, Any]:
    context = ToolContext(
        store=store,
        tenant=sa.TENANT,
        instance_id="compliance-1",
        agent_type=AgentType.COMPLIANCE,
        generation=0,
        op_id=op,
        now=NOW,
        investigation_workspace="demo",
        workspace_root=None,
        data_dir=None,
    )
    return HANDLERS[name](context, arguments)


def test_with_nothing_recorded_or_configured_the_corpus_is_the_workspace(store: Store) -> None:
    found = corpus(store, sa.TENANT)
    assert found["source"] == "workspace"
    assert [(p["id"], p["paths"]) for p in found["projects"]] == [("workspace", ["**/*"])]


def test_projects_are_discovered_from_what_the_artifacts_name(store: Store) -> None:
    record = {"title": "Ch. 1", "content": "scope", "project": "gdpr"}
    _tool(store, "compliance_dossier_record", record, "op/1")
    _tool(store, "compliance_dossier_record", {**record, "title": "Ch. 2"}, "op/2")
    ingest = {"title": "DPA", "content": "signed", "project": "soc2"}
    _tool(store, "compliance_knowledge_ingest", ingest, "op/3")
    _tool(store, "compliance_knowledge_ingest", {"title": "misc", "content": "x"}, "op/4")
    found = corpus(store, sa.TENANT)
    assert found["source"] == "discovered"
    counts = {p["id"]: (p["dossiers"], p["knowledgeItems"]) for p in found["projects"]}
    assert counts == {"gdpr": (2, 0), "soc2": (0, 1), "workspace": (0, 1)}
    # The tools read one project's corpus.
    listed = _tool(store, "compliance_dossier_list", {"project": "gdpr"}, "op/5")
    assert sorted(d["title"] for d in listed["dossiers"]) == ["Ch. 1", "Ch. 2"]
    assert _tool(store, "compliance_dossier_list", {"project": "soc2"}, "op/6")["dossiers"] == []
    knowledge = _tool(
        store, "compliance_knowledge_query", {"query": "signed", "project": "soc2"}, "op/7"
    )
    assert [k["title"] for k in knowledge["knowledge"]] == ["DPA"]


def test_configured_projects_win_and_are_validated(store: Store) -> None:
    projects = [
        {"id": "gdpr", "name": "GDPR", "paths": ["policies/gdpr/**"]},
        {"id": "iso27001", "paths": ["isms/*.md"]},
    ]
    configs.put_config(store, sa.TENANT, "compliance.projects", projects)
    found = corpus(store, sa.TENANT)
    assert found["source"] == "config"
    assert [(p["id"], p["name"], p["paths"]) for p in found["projects"]] == [
        ("gdpr", "GDPR", ["policies/gdpr/**"]),
        ("iso27001", None, ["isms/*.md"]),
    ]
    assert validate_config("compliance.projects", None) is None
    for bad, rule in [
        ({"id": "x"}, "list"),
        ([{"id": "x"}, {"id": "x"}], "unique"),
        ([{"id": "x", "paths": ["../etc/*"]}], "relative"),
        ([{"id": "x", "paths": ["/etc/*"]}], "relative"),
        ([{"id": "bad id"}], "id"),
        ([{"id": "x", "owner": "me"}], "owner"),
    ]:
        with pytest.raises(ValueError, match=rule):
            parse_projects(bad)


def test_the_compliance_objective_names_the_corpus_and_the_soas_does_not(
    store: Store, tmp_path: Path
) -> None:
    configs.put_config(store, sa.TENANT, "compliance.projects", [{"id": "gdpr"}])
    event = AgentEvent(
        event_id="e1",
        sequence_number=1,
        kind=EventKind.AGENT_TICK,
        payload={},
        visible_at=NOW,
        generation=0,
    )

    def context(agent_type: AgentType) -> dict[str, Any]:
        messages = episode.opening(
            store,
            tenant=sa.TENANT,
            instance_id="i-1",
            agent_type=agent_type,
            generation=0,
            event=event,
            mode=catalog.resolve_mode(agent_type, None),
            now=NOW,
        )
        text = messages[1].content
        parsed: dict[str, Any] = json.loads(text[text.index("{") :])
        return parsed

    named = context(AgentType.COMPLIANCE)["corpus"]
    assert named["source"] == "config" and [p["id"] for p in named["projects"]] == ["gdpr"]
    assert "corpus" not in context(AgentType.SOA)
