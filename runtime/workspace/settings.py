"""Workspace settings kept in the store: `tools.disabled` (POST /workspace/tools/:name/enable)
and `tools.approvalMode` (POST /session/:id/approval-mode with `persist: true`).

One row per (workspace, key), the value as JSON. The spec's daemon writes these to the
workspace's settings file; agentrt keeps them durable in the store instead, so that the
API, the worker and every replica see the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import JSON, Column
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, SQLModel

from runtime.store import Store

T = TypeVar("T")
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
    change: Callable[[Any], T],
) -> T:
    """Read-modify-write of a setting in one transaction (the row locked on PostgreSQL,
    writers serialized on SQLite): `change` gets the stored value (None when there is
    none) and returns the new one, which is returned."""
    with store.session() as db:
        row = db.get(WorkspaceSetting, (workspace_cwd, key), with_for_update=True)
        value = change(None if row is None else row.value)
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
    """Add `tool_name` to `tools.disabled` (enabled=False) or remove it; the new list."""

    def toggled(current: Any) -> list[str]:
        names = [n for n in current if n != tool_name] if isinstance(current, list) else []
        return names if enabled else [*names, tool_name]

    return update_setting(store, workspace_cwd, TOOLS_DISABLED, toggled)
