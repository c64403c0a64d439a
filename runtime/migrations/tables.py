"""Every table of agentrt, on `SQLModel.metadata` once this module is imported.

A table is declared by a model (`table=True`) in its feature's module and created by a
migration in `versions/`. Alembic's environment (`env.py`) compares and autogenerates
against the metadata loaded here, and tests/runtime/test_migration_drift.py fails when
the two disagree, or when a module that declares a table is missing from this list.
"""

from __future__ import annotations

import importlib

from sqlalchemy import MetaData
from sqlmodel import SQLModel

TABLE_MODULES: tuple[str, ...] = (
    "runtime.agent_tools.models",
    "runtime.approvals.models",
    "runtime.coding_tasks.models",
    "runtime.investigation.models",
    "runtime.llm.models",
    "runtime.notifications.models",
    "runtime.sessions.models",
    "runtime.sessions.prompts",
    "runtime.standing_agents.models",
    "runtime.store.models",
    "runtime.store.operations",
    "runtime.store.tenants",
    "runtime.tenants.tokens",
    "runtime.workspace.settings",
)
"""The modules that declare tables; each import registers its tables on the metadata."""

for _module in TABLE_MODULES:
    importlib.import_module(_module)

METADATA: MetaData = SQLModel.metadata
