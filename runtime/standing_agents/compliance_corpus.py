"""Compliance corpus discovery (spec §3.4.8, step 8; issue 21, item 6).

On a Compliance tick the objective names the tenant's compliance projects and the
corpus to query for each, so that the agent queries what it covers instead of guessing:

- **Configured**: `compliance.projects` in `system_configs`, a list of
  `{"id", "name"?, "paths"?}`: `paths` are workspace-relative globs (read through the
  workspace fence by the code-search tool), at most 20 per project, 50 projects.
- **Discovered** (the cold sweep, when nothing is configured): the projects the tenant's
  compliance artifacts already name (`project` of a dossier or a knowledge item), with
  their counts; with none yet, one project, `workspace`, whose corpus is the workspace.

Each project's corpus is what the compliance tools read for it: its dossiers and
knowledge items (`compliance_dossier_list` / `compliance_knowledge_query` with its
`project`) and its paths.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlmodel import col, select

from runtime.standing_agents.models import AgentArtifact, SystemConfig
from runtime.store.engine import Store

PROJECTS_KEY: Final = "compliance.projects"
MAX_PROJECTS: Final = 50
WORKSPACE_PROJECT: Final = "workspace"
# The artifact kinds a project's corpus holds.
CORPUS_KINDS: Final = ("dossier", "dossier_translation", "knowledge")
# What a project id is (the tools' `project` argument has the same pattern; a row written
# otherwise, by hand or before, is left out of the discovered projects, never an error).
PROJECT_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class ComplianceProject(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=80, pattern=PROJECT_ID.pattern)
    name: str | None = Field(default=None, max_length=200)
    paths: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("paths")
    @classmethod
    def _relative(cls, paths: list[str]) -> list[str]:
        for path in paths:
            parts = path.replace("\\", "/").split("/")
            if not path or len(path) > 200 or path.startswith("/") or ".." in parts:
                raise ValueError(f"path {path!r} must be a glob relative to the workspace")
        return paths


def parse_projects(value: Any) -> list[ComplianceProject]:
    """The configured projects (None: none).

    Raises:
        ValueError: not a list of projects, more than MAX_PROJECTS, or a repeated id.
    """
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_PROJECTS:
        raise ValueError(
            f"{PROJECTS_KEY} must be a list of at most {MAX_PROJECTS} projects"
            ' {"id", "name"?, "paths"?}, or null'
        )
    try:
        projects = [ComplianceProject.model_validate(item) for item in value]
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{PROJECTS_KEY}: {where}: {first['msg']}") from None
    ids = [p.id for p in projects]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{PROJECTS_KEY}: project ids must be unique")
    return projects


def corpus(store: Store, tenant: str) -> dict[str, Any]:
    """What the Compliance objective names: the projects and the corpus of each."""
    with store.session() as db:
        row = db.get(SystemConfig, (tenant, PROJECTS_KEY))
        artifacts = db.exec(
            select(AgentArtifact.kind, AgentArtifact.body).where(
                col(AgentArtifact.tenant) == tenant,
                col(AgentArtifact.kind).in_(CORPUS_KINDS),
            )
        ).all()
    counts: Counter[tuple[str, str]] = Counter()
    for kind, body in artifacts:
        project = body.get("project") if isinstance(body, dict) else None
        family = "knowledge" if kind == "knowledge" else "dossiers"
        counts[(str(project or WORKSPACE_PROJECT), family)] += 1
    try:
        configured = parse_projects(row.value if row is not None else None)
    except ValueError:
        configured = []  # a hand-edited row: discovered instead, as in a tick
    if configured:
        source = "config"
        projects = configured
    else:
        source = "discovered"
        named = sorted({project for project, _family in counts if PROJECT_ID.match(project)})
        projects = [ComplianceProject(id=p) for p in named] or [
            ComplianceProject(id=WORKSPACE_PROJECT, paths=["**/*"])
        ]
        if not named:
            source = "workspace"
    return {
        "source": source,
        "projects": [
            {
                "id": p.id,
                "name": p.name,
                "paths": p.paths or (["**/*"] if p.id == WORKSPACE_PROJECT else []),
                "dossiers": counts[(p.id, "dossiers")],
                "knowledgeItems": counts[(p.id, "knowledge")],
            }
            for p in projects
        ],
        "howToQuery": "compliance_dossier_list / compliance_knowledge_query with the"
        " project's id; its paths with intelligence_code_search",
    }
