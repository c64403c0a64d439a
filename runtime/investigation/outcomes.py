"""What the investigation tools answer (`ToolOutcome`, `ObjectRef`) and what they share: the
bounds, the refusal of a tool that cannot answer (`ToolFailure`), and the fetch of one
workspace object by kind and id."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator
from sqlmodel import Session, SQLModel, select

from runtime.investigation.models import (
    InvestigationClaim,
    InvestigationEvidence,
    InvestigationJob,
    InvestigationNode,
    InvestigationSource,
)
from runtime.timestamps import aware_utc

ToolStatus = Literal[
    "COMPLETED", "FAILED", "DENIED", "AUTHORIZATION_REQUIRED", "UNAVAILABLE", "CANCELLED"
]
MAX_RESULT_BYTES = 262144  # the spec's 256 KiB per stored result
MAX_DIAGNOSTIC_CHARS = 1024
MAX_OBSERVATION_CHARS = 300
LIST_CAP = 50


def bounded(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ObjectRef(BaseModel):
    """A workspace object: kind is node, edge, evidence, source, claim, job or research."""

    kind: str
    id: str


class ToolOutcome(BaseModel):
    """A tool's structured result; observations and the diagnostic are bounded on entry."""

    status: ToolStatus
    output: dict[str, Any] = Field(default_factory=dict)
    object_refs: list[ObjectRef] = Field(default_factory=list)
    artifacts: list[dict[str, Any]] = Field(default_factory=list)
    observations: list[str] = Field(default_factory=list)
    provenance_refs: list[ObjectRef] = Field(default_factory=list)
    diagnostic: str | None = None

    @field_validator("observations")
    @classmethod
    def _bound_observations(cls, value: list[str]) -> list[str]:
        return [bounded(text, MAX_OBSERVATION_CHARS) for text in value]

    @field_validator("diagnostic")
    @classmethod
    def _bound_diagnostic(cls, value: str | None) -> str | None:
        return None if value is None else bounded(value, MAX_DIAGNOSTIC_CHARS)


class ToolFailure(Exception):
    """A tool could not answer (an unknown id, a range past the end): FAILED, with why."""


def failed(diagnostic: str) -> ToolOutcome:
    return ToolOutcome(status="FAILED", diagnostic=diagnostic)


def ref(kind: str, object_id: str) -> ObjectRef:
    return ObjectRef(kind=kind, id=object_id)


def iso(ts: datetime) -> str:
    return aware_utc(ts).isoformat()


KINDS: dict[str, tuple[type[SQLModel], str]] = {
    "node": (InvestigationNode, "node_id"),
    "evidence": (InvestigationEvidence, "evidence_id"),
    "claim": (InvestigationClaim, "claim_id"),
    "source": (InvestigationSource, "source_id"),
    "job": (InvestigationJob, "job_id"),
}


def fetch(session: Session, workspace: str, kind: str, object_id: str) -> Any:
    """The row of `kind` with this id in this workspace, or a ToolFailure naming both."""
    model, id_name = KINDS[kind]
    row = session.exec(
        select(model).where(
            model.workspace == workspace,  # type: ignore[attr-defined]
            getattr(model, id_name) == object_id,
        )
    ).first()
    if row is None:
        raise ToolFailure(f"{kind} {object_id!r} not found in workspace {workspace!r}")
    return row
