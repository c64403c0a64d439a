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
from sqlmodel import Field, Session, SQLModel

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
    """Write a setting; a concurrent first write of the same key that wins the row runs
    this again (`Store.run_transaction`), which updates the row it made."""

    def write(db: Session) -> None:
        row = db.get(WorkspaceSetting, (workspace_cwd, key))
        if row is None:
            db.add(WorkspaceSetting(workspace_cwd=workspace_cwd, key=key, value=value))
        else:
            row.value = value
        db.flush()

    store.run_transaction(write)


def update_setting(
    store: Store,
    workspace_cwd: str,
    key: str,
    change: Callable[[Any], T],
) -> T:
    """Read-modify-write of a setting in one transaction (the row locked on PostgreSQL,
    writers serialized on SQLite): `change` gets the stored value (None when there is
    none) and returns the new one, which is returned. A concurrent first write of the
    key runs it all again on the row that write made, so `change` must be pure."""

    def write(db: Session) -> T:
        row = db.get(WorkspaceSetting, (workspace_cwd, key), with_for_update=True)
        value = change(None if row is None else row.value)
        if row is None:
            db.add(WorkspaceSetting(workspace_cwd=workspace_cwd, key=key, value=value))
        else:
            row.value = value
        db.flush()
        return value

    return store.run_transaction(write)


def disabled_tools(store: Store, workspace_cwd: str) -> list[str]:
    value = get_setting(store, workspace_cwd, TOOLS_DISABLED)
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def set_tool_enabled(store: Store, workspace_cwd: str, tool_name: str, enabled: bool) -> list[str]:
    """Add `tool_name` to `tools.disabled` (enabled=False) or remove it; the new list."""

    def toggled(current: Any) -> list[str]:
        names = [n for n in current if n != tool_name] if isinstance(current, list) else []
        return names if enabled else [*names, tool_name]

    return update_setting(store, workspace_cwd, TOOLS_DISABLED, toggled)
