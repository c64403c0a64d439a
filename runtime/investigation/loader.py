"""Load an investigation (the documented JSON format) into a workspace, replacing its data.

The whole document is checked before anything is written — its shape against
`INVESTIGATION_SCHEMA`, then every reference (an edge to a missing node, a
claim citing unknown evidence) — so a bad file leaves the workspace as it was.
Provenance links are derived, not given: evidence → its source ("from_source")
and evidence → each claim citing it ("supports"). Research campaigns and their
decisions are never touched by a reload.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import relevance
from sqlmodel import Session, SQLModel, delete

from runtime.investigation.models import (
    InvestigationClaim,
    InvestigationEdge,
    InvestigationEvidence,
    InvestigationJob,
    InvestigationNode,
    InvestigationSource,
    ProvenanceLink,
)

FORMAT = "agentrt-investigation/v1"
_ID = {"type": "string", "minLength": 1, "maxLength": 200}
_IDS = {"type": "array", "items": _ID, "uniqueItems": True}
_TEXT = {"type": "string", "minLength": 1}


def _item(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": required,
            "properties": properties,
        },
    }


INVESTIGATION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["nodes"],
    "properties": {
        "format": {"const": FORMAT},
        "nodes": _item(
            {
                "node_id": _ID,
                "type": {"type": "string", "minLength": 1, "maxLength": 100},
                "label": {"type": "string", "minLength": 1, "maxLength": 500},
                "properties": {"type": "object"},
            },
            ["node_id", "type", "label"],
        ),
        "edges": _item(
            {
                "edge_id": _ID,
                "src": _ID,
                "dst": _ID,
                "type": {"type": "string", "minLength": 1, "maxLength": 100},
                "properties": {"type": "object"},
            },
            ["src", "dst", "type"],
        ),
        "sources": _item(
            {
                "source_id": _ID,
                "title": {"type": "string", "minLength": 1, "maxLength": 500},
                "kind": {"type": "string", "minLength": 1, "maxLength": 100},
                "uri": {"type": ["string", "null"], "maxLength": 2000},
            },
            ["source_id", "title", "kind"],
        ),
        "evidence": _item(
            {
                "evidence_id": _ID,
                "title": {"type": "string", "minLength": 1, "maxLength": 500},
                "summary": _TEXT,
                "excerpt": {"type": "string"},
                "source_id": _ID,
                "node_ids": _IDS,
            },
            ["evidence_id", "title", "summary", "excerpt", "source_id"],
        ),
        "claims": _item(
            {
                "claim_id": _ID,
                "text": _TEXT,
                "evidence_ids": _IDS | {"minItems": 1},
                "node_ids": _IDS,
            },
            ["claim_id", "text", "evidence_ids"],
        ),
        "jobs": _item(
            {
                "job_id": _ID,
                "kind": {"type": "string", "minLength": 1, "maxLength": 100},
                "status": {"enum": ["queued", "running", "succeeded", "failed"]},
                "detail": {"type": "object"},
                "node_ids": _IDS,
                "updated_at": {"type": "string"},
            },
            ["job_id", "kind", "status"],
        ),
    },
}
_VALIDATOR = Draft202012Validator(INVESTIGATION_SCHEMA)
# What a reload replaces, with the name each table's count gets in the summary.
_TABLES: dict[type[SQLModel], str] = {
    InvestigationNode: "nodes",
    InvestigationEdge: "edges",
    InvestigationSource: "sources",
    InvestigationEvidence: "evidence",
    InvestigationClaim: "claims",
    ProvenanceLink: "provenance_links",
    InvestigationJob: "jobs",
}


def _path(parts: Iterable[str | int]) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
    return text.lstrip(".") or "(top level)"


class _Problems:
    """Collects what is wrong with a document; raises them together (a few at most)."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def raise_any(self) -> None:
        if self.items:
            more = f" (and {len(self.items) - 5} more)" if len(self.items) > 5 else ""
            raise ValueError("invalid investigation data: " + "; ".join(self.items[:5]) + more)


def _unique(problems: _Problems, items: list[dict[str, Any]], key: str, section: str) -> set[str]:
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item[key] in seen:
            problems.add(f"{section}[{index}].{key}", f"{item[key]!r} is duplicated")
        seen.add(item[key])
    return seen


def _refs(problems: _Problems, where: str, ids: Iterable[str], known: set[str], what: str) -> None:
    for object_id in ids:
        if object_id not in known:
            problems.add(where, f"unknown {what} {object_id!r}")


def _timestamp(value: str | None) -> datetime:
    """An ISO 8601 date-time (UTC when it names no zone); now when absent."""
    if value is None:
        return datetime.now(UTC)
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _edge_id(edge: dict[str, Any]) -> str:
    return str(edge.get("edge_id") or f"{edge['src']}:{edge['type']}:{edge['dst']}")


def validate_investigation(data: Any) -> None:
    """Check `data` against the schema and its internal references.

    Raises:
        ValueError: naming the first problems by their path, e.g. `edges[3].dst`.
    """
    problems = _Problems()
    errors = sorted(_VALIDATOR.iter_errors(data), key=relevance, reverse=True)
    for error in errors:
        problems.add(_path(error.absolute_path), error.message)
    problems.raise_any()
    nodes = _unique(problems, data["nodes"], "node_id", "nodes")
    sources = _unique(problems, data.get("sources", []), "source_id", "sources")
    evidence = _unique(problems, data.get("evidence", []), "evidence_id", "evidence")
    _unique(problems, data.get("claims", []), "claim_id", "claims")
    _unique(problems, data.get("jobs", []), "job_id", "jobs")
    edge_ids = [{"edge_id": _edge_id(edge)} for edge in data.get("edges", [])]
    _unique(problems, edge_ids, "edge_id", "edges")
    for i, edge in enumerate(data.get("edges", [])):
        _refs(problems, f"edges[{i}]", (edge["src"], edge["dst"]), nodes, "node")
    for i, item in enumerate(data.get("evidence", [])):
        _refs(problems, f"evidence[{i}].source_id", [item["source_id"]], sources, "source")
        _refs(problems, f"evidence[{i}].node_ids", item.get("node_ids", []), nodes, "node")
    for i, claim in enumerate(data.get("claims", [])):
        _refs(problems, f"claims[{i}].evidence_ids", claim["evidence_ids"], evidence, "evidence")
        _refs(problems, f"claims[{i}].node_ids", claim.get("node_ids", []), nodes, "node")
    for i, job in enumerate(data.get("jobs", [])):
        _refs(problems, f"jobs[{i}].node_ids", job.get("node_ids", []), nodes, "node")
        try:
            _timestamp(job.get("updated_at"))
        except ValueError:
            problems.add(
                f"jobs[{i}].updated_at", f"{job['updated_at']!r} is not an ISO 8601 date-time"
            )
    problems.raise_any()


def _rows(workspace: str, data: dict[str, Any]) -> list[SQLModel]:
    ws = workspace
    rows: list[SQLModel] = [
        InvestigationNode(
            workspace=ws,
            node_id=n["node_id"],
            type=n["type"],
            label=n["label"],
            properties=n.get("properties", {}),
        )
        for n in data["nodes"]
    ]
    for e in data.get("edges", []):
        rows.append(
            InvestigationEdge(
                workspace=ws,
                edge_id=_edge_id(e),
                src=e["src"],
                dst=e["dst"],
                type=e["type"],
                properties=e.get("properties", {}),
            )
        )
    for s in data.get("sources", []):
        rows.append(
            InvestigationSource(
                workspace=ws,
                source_id=s["source_id"],
                title=s["title"],
                kind=s["kind"],
                uri=s.get("uri"),
            )
        )
    for e in data.get("evidence", []):
        rows.append(
            InvestigationEvidence(
                workspace=ws,
                evidence_id=e["evidence_id"],
                title=e["title"],
                summary=e["summary"],
                excerpt=e["excerpt"],
                source_id=e["source_id"],
                node_ids=e.get("node_ids", []),
            )
        )
        rows.append(
            ProvenanceLink(
                workspace=ws,
                from_kind="evidence",
                from_id=e["evidence_id"],
                to_kind="source",
                to_id=e["source_id"],
                relation="from_source",
            )
        )
    for c in data.get("claims", []):
        rows.append(
            InvestigationClaim(
                workspace=ws,
                claim_id=c["claim_id"],
                text=c["text"],
                evidence_ids=c["evidence_ids"],
                node_ids=c.get("node_ids", []),
            )
        )
        rows.extend(
            ProvenanceLink(
                workspace=ws,
                from_kind="evidence",
                from_id=evidence_id,
                to_kind="claim",
                to_id=c["claim_id"],
                relation="supports",
            )
            for evidence_id in c["evidence_ids"]
        )
    for j in data.get("jobs", []):
        rows.append(
            InvestigationJob(
                workspace=ws,
                job_id=j["job_id"],
                kind=j["kind"],
                status=j["status"],
                detail=j.get("detail", {}),
                node_ids=j.get("node_ids", []),
                updated_at=_timestamp(j.get("updated_at")),
            )
        )
    return rows


def load_investigation(session: Session, workspace: str, data: dict[str, Any]) -> dict[str, int]:
    """Replace the investigation data of `workspace` with `data`; returns row counts.

    Writes through the caller's unit of work and only flushes: the caller commits
    (`with store.transaction() as db:`).

    Raises:
        ValueError: a bad workspace id or document; nothing is written then.
    """
    if not isinstance(workspace, str) or not 1 <= len(workspace) <= 200:
        raise ValueError("workspace id must have 1 to 200 characters")
    validate_investigation(data)
    for table in _TABLES:
        session.exec(delete(table).where(table.workspace == workspace))  # type: ignore[attr-defined]
    rows = _rows(workspace, data)
    session.add_all(rows)
    session.flush()
    counts = dict.fromkeys(_TABLES.values(), 0)
    for row in rows:
        counts[_TABLES[type(row)]] += 1
    return counts


def read_investigation_file(path: Path) -> dict[str, Any]:
    """The JSON document at `path`. Raises ValueError when it is not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the top level must be a JSON object")
    return data
