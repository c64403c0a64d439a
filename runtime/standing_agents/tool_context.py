"""What every governed tool of a standing agent works with: its context (the agent, the
operation id of the call, the store), its two refusals, and the write that a retried
call cannot repeat (`insert_once`: a row keyed by the call's operation id).

The tools themselves are runtime/standing_agents/tools.py (reads and artifacts) and
control_tools.py (messages, decisions, mode changes, phase ends).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, SQLModel, col, select

from runtime.standing_agents.contracts import AgentType
from runtime.standing_agents.tool_catalog import MAX_TEXT
from runtime.store.engine import Store


class ToolInputError(ValueError):
    """The model's arguments do not fit the tool: returned to it as an error outcome."""


class BoundaryError(ValueError):
    """A call outside what this agent may do (the boundary checks): returned blocked."""


@dataclass(frozen=True)
class ToolContext:
    store: Store
    tenant: str
    instance_id: str
    agent_type: AgentType
    generation: int
    op_id: str
    now: datetime
    investigation_workspace: str
    workspace_root: Path | None
    # The daemon's data dir: never searched when it lies in the workspace.
    data_dir: Path | None = None


def text_argument(arguments: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = arguments.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ToolInputError(f"{key} must be a non-empty string")
    return value[:MAX_TEXT]


def op_uuid(op_id: str) -> str:
    """A row id derived from the operation id: a retry computes the same one."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, op_id))


def insert_once(ctx: ToolContext, row: SQLModel, model: type[Any]) -> Any:
    """Insert a row keyed by op_id; a retry returns the row the first attempt wrote (a
    concurrent one makes this write lose its race: the run again finds its row)."""

    def write(db: Session) -> Any:
        existing = db.exec(select(model).where(col(model.op_id) == ctx.op_id)).first()
        if existing is not None:
            return existing
        db.add(row)
        db.flush()
        db.refresh(row)
        return row

    return ctx.store.run_transaction(write)
