"""Workspace settings kept in the store: `tools.disabled` (POST /workspace/tools/:name/enable)
and `tools.approvalMode` (POST /session/:id/approval-mode with `persist: true`).

One row per (workspace, key), the value as JSON. The spec's daemon writes these to the
workspace's settings file; agentrt keeps them durable in the store instead, so that the
API, the worker and every replica see the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import JSON, Column
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel

from runtime.store import Store

TOOLS_DISABLED = "tools.disabled"
APPROVAL_MODE = "tools.approvalMode"


class WorkspaceSetting(SQLModel, table=True):
    __tablename__ = "workspace_setting"

    workspace_cwd: str = Field(primary_key=True, max_length=4096)
    key: str = Field(primary_key=True, max_length=200)
    value: Any = Field(default=None, sa_column=Column(JSON, nullable=True))


def get_setting(store: Store, workspace_cwd: str, key: str) -> Any:
    with store.session() as db:
        row = db.get(WorkspaceSetting, (workspace_cwd, key))
        return None if row is None else row.value


def set_setting(store: Store, workspace_cwd: str, key: str, value: Any) -> None:
    for _ in range(3):
        with store.session() as db:
            row = db.get(WorkspaceSetting, (workspace_cwd, key))
            if row is None:
                db.add(WorkspaceSetting(workspace_cwd=workspace_cwd, key=key, value=value))
            else:
                row.value = value
            try:
                db.commit()
                return
            except IntegrityError:
                db.rollback()  # a concurrent first write: update the row it made
    raise RuntimeError(f"could not write workspace setting {key}")


def update_setting(
    store: Store,
    workspace_cwd: str,
    key: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
) -> dict[str, Any]:
    """Read-modify-write of an object-valued setting in one transaction (the row locked
    on PostgreSQL, writers serialized on SQLite); the new value."""
    with store.session() as db:
        row = db.get(WorkspaceSetting, (workspace_cwd, key), with_for_update=True)
        current = dict(row.value) if row is not None and isinstance(row.value, dict) else {}
        value = change(current)
        if row is None:
            db.add(WorkspaceSetting(workspace_cwd=workspace_cwd, key=key, value=value))
        else:
            row.value = value
        try:
            db.commit()
        except IntegrityError:
            db.rollback()
            return update_setting(store, workspace_cwd, key, change)
        return value


def disabled_tools(store: Store, workspace_cwd: str) -> list[str]:
    value = get_setting(store, workspace_cwd, TOOLS_DISABLED)
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def set_tool_enabled(store: Store, workspace_cwd: str, tool_name: str, enabled: bool) -> list[str]:
    """Add `tool_name` to `tools.disabled` (enabled=False) or remove it; the new list.

    Read-modify-write in one transaction (SQLite serializes writers; on PostgreSQL the
    row is locked with SELECT ... FOR UPDATE)."""
    with store.session() as db:
        row = db.get(WorkspaceSetting, (workspace_cwd, TOOLS_DISABLED), with_for_update=True)
        current = list(row.value) if row is not None and isinstance(row.value, list) else []
        names = [name for name in current if name != tool_name]
        if not enabled:
            names.append(tool_name)
        if row is None:
            db.add(WorkspaceSetting(workspace_cwd=workspace_cwd, key=TOOLS_DISABLED, value=names))
        else:
            row.value = names
        try:
            db.commit()
        except IntegrityError:
            db.rollback()
            return set_tool_enabled(store, workspace_cwd, tool_name, enabled)
        return names
