"""The store's unit of work (issue 23): `store.transaction()` commits a block's writes
together or none of them, `store.run_transaction(write)` runs a write again when it loses
a race, and no code outside runtime/store commits, rolls back or catches a race by hand.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlmodel import Session

from runtime.store import Store
from runtime.store.engine import WriteKeptRacing, is_race

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("api", "activities", "runtime", "workflows")
KERNEL_STORE = ROOT / "runtime" / "store"
MIGRATIONS = ROOT / "runtime" / "migrations"


class _TestTables(DeclarativeBase):
    """A metadata of this test's own: the migrations' drift test sees only the product's."""


class UowRow(_TestTables):
    __tablename__ = "test_uow_row"

    key: Mapped[str] = mapped_column(primary_key=True)
    value: Mapped[int] = mapped_column(default=0)


@pytest.fixture
def db_store(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'uow.db'}")
    UowRow.__table__.create(store.engine)  # type: ignore[attr-defined]
    return store


def _rows(store: Store) -> dict[str, int]:
    with store.session() as db:
        return {row.key: row.value for row in db.execute(select(UowRow)).scalars()}


def test_a_transaction_commits_its_writes_together_when_the_block_ends(db_store: Store) -> None:
    with db_store.transaction() as db:
        db.add(UowRow(key="a", value=1))
        db.add(UowRow(key="b", value=2))
    assert _rows(db_store) == {"a": 1, "b": 2}


def test_a_transaction_that_raises_writes_nothing_and_the_error_goes_on(db_store: Store) -> None:
    with pytest.raises(ValueError, match="refused"), db_store.transaction() as db:
        db.add(UowRow(key="a", value=1))
        db.flush()
        raise ValueError("refused")
    assert _rows(db_store) == {}


def test_rows_stay_readable_after_the_commit(db_store: Store) -> None:
    with db_store.transaction() as db:
        row = UowRow(key="a", value=7)
        db.add(row)
    assert row.value == 7


def test_a_write_that_loses_a_race_runs_again_and_finds_the_winners_row(
    db_store: Store,
) -> None:
    """The first run inserts a key that a concurrent writer committed after the run
    looked (simulated: the winner commits before the loser's first statement); the
    insert collides, the second run reads the winner's row and returns it."""
    runs: list[int] = []

    def write(db: Session) -> int:
        runs.append(1)
        if len(runs) == 1:
            with db_store.transaction() as winner:
                winner.add(UowRow(key="k", value=42))
            db.add(UowRow(key="k", value=1))
            db.flush()
            return 1
        existing = db.get(UowRow, "k")
        assert existing is not None
        return existing.value

    assert db_store.run_transaction(write) == 42
    assert len(runs) == 2
    assert _rows(db_store) == {"k": 42}


def test_a_write_that_keeps_losing_gives_up_with_write_kept_racing(db_store: Store) -> None:
    calls: list[int] = []

    def write(db: Session) -> None:
        calls.append(1)
        raise IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed"))

    with pytest.raises(WriteKeptRacing):
        db_store.run_transaction(write, attempts=3)
    assert len(calls) == 3


def test_an_error_that_is_not_a_race_is_not_run_again(db_store: Store) -> None:
    calls: list[int] = []

    def write(db: Session) -> None:
        calls.append(1)
        raise OperationalError("SELECT", {}, Exception("disk I/O error"))

    with pytest.raises(OperationalError):
        db_store.run_transaction(write)
    assert calls == [1]


def test_what_counts_as_a_race() -> None:
    class Orig(Exception):
        def __init__(self, sqlstate: str) -> None:
            self.sqlstate = sqlstate

    assert is_race(IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert is_race(OperationalError("UPDATE", {}, Orig("40P01")))  # deadlock
    assert is_race(OperationalError("UPDATE", {}, Orig("40001")))  # serialization
    assert not is_race(OperationalError("SELECT", {}, Orig("57014")))  # cancelled
    assert not is_race(ValueError("no"))
    assert is_race(IntegrityError("INSERT", {}, Orig("23505")))  # unique_violation
    assert not is_race(IntegrityError("INSERT", {}, Orig("23503")))  # foreign key
    assert not is_race(IntegrityError("INSERT", {}, Orig("23502")))  # NOT NULL


def test_a_not_null_failure_on_sqlite_is_raised_at_once_not_run_again(db_store: Store) -> None:
    calls: list[int] = []

    def write(db: Session) -> None:
        calls.append(1)
        db.execute(text("INSERT INTO test_uow_row (key, value) VALUES ('k', NULL)"))

    with pytest.raises(IntegrityError):
        db_store.run_transaction(write)
    assert calls == [1]


def _product_modules() -> list[Path]:
    paths = [ROOT / "worker.py", ROOT / "cli.py"]
    for top in PRODUCT:
        paths.extend(sorted((ROOT / top).rglob("*.py")))
    return [
        p
        for p in paths
        if p.exists() and not p.is_relative_to(KERNEL_STORE) and not p.is_relative_to(MIGRATIONS)
    ]


def _hand_written_units_of_work(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("commit", "rollback")
            and not node.args
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}()")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "begin"
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "engine"
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} engine.begin()")
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
            names |= {n.attr for n in ast.walk(node.type) if isinstance(n, ast.Attribute)}
            if names & {"IntegrityError", "OperationalError"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} catches a race")
    return found


def test_no_code_outside_the_store_commits_rolls_back_or_catches_a_race_by_hand() -> None:
    """A write is `store.transaction()` (Core code takes `db.connection()` from it) or
    `store.run_transaction(write)`, never `engine.begin()` by hand; a race is the
    store's to retry. A feature that must answer a lost race in its own way (a name
    already taken) reads first inside `run_transaction`, whose next run finds the
    winner's row."""
    offenders = [hit for path in _product_modules() for hit in _hand_written_units_of_work(path)]
    assert offenders == []
