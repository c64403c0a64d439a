"""The migrations and the models agree, on SQLite and PostgreSQL.

A database migrated to head is compared with the tables the models declare
(`runtime.migrations.tables`, which Alembic's environment reads too), by Alembic's own
comparison (what `alembic check` runs): a column, index or table that one side has and
the other lacks fails here, before a release ships a model its database does not match.
"""

from __future__ import annotations

import ast
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from runtime.migrations.tables import METADATA, TABLE_MODULES
from runtime.store import Store

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("api", "runtime", "activities", "workflows")


def test_a_database_at_head_has_exactly_the_models_tables(store: Store) -> None:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, METADATA)
    assert differences == []


def _declares_a_table(path: Path) -> bool:
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(
        isinstance(node, ast.ClassDef)
        and any(
            keyword.arg == "table"
            and isinstance(keyword.value, ast.Constant)
            and keyword.value.value is True
            for keyword in node.keywords
        )
        for node in ast.walk(tree)
    )


def test_every_module_that_declares_a_table_is_one_the_migrations_see() -> None:
    declaring = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if _declares_a_table(path)
    }
    assert "runtime.sessions.models" in declaring  # the walk finds them
    assert declaring == set(TABLE_MODULES)
