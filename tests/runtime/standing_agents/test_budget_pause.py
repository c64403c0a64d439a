"""The budget pause in the store (runtime/standing_agents/budget_pause.py): a resume
swaps only the pause it read (an operator's stop or a new pause meanwhile wins); nothing
but an operator's change since the pause (or the window) lifts it, whatever settings
the reader runs with; a regeneration that does not lift it moves its time on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text

from activities.llm import record
from runtime.llm.contracts import OwnerKind
from runtime.settings import Settings
from runtime.standing_agents import budget_pause, configs, control
from runtime.standing_agents.contracts import AgentStatus
from runtime.standing_agents.models import AgentInstance
from runtime.standing_agents.workflow_contracts import BudgetReached
from runtime.store import EventJournal, Store
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)  # before any config write of the test


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(data_dir=tmp_path, workspace=tmp_path, **values)  # type: ignore[arg-type]


def _pause(store: Store, settings: Settings, agent: str, reached: BudgetReached) -> str:
    with store.session() as db:
        row = db.get(AgentInstance, agent)
        assert row is not None
        decision = budget_pause.pause_in(db, settings, row, reached, f"ev/{agent}", NOW)
        db.add(row)
        db.commit()
    assert decision is not None
    return decision


def _spend(store: Store, call: str, cost: float, at: datetime) -> None:
    owner = record.CallOwner(
        call_id=call,
        tenant=sa.TENANT,
        owner_kind=OwnerKind.AGENT,
        owner_id="a",
        site="Agent:Planning",
        provider="p",
        requested_model="m",
        purpose=record.AGENT_PURPOSE,
    )
    record.begin_attempt(store, owner, attempt=0, now=at, reserve_usd=cost)  # held: counts


def test_a_stop_between_the_read_and_the_resume_wins(store: Store, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    agent = sa.create_instance(store, NOW)
    _pause(store, settings, agent, BudgetReached(axis="tool_calls", cap=8, spent=8))
    with store.session() as db:
        read = db.get(AgentInstance, agent)
    assert read is not None and read.budget_pause_id is not None
    control.stop(store, EventJournal(store), sa.TENANT, agent)
    with store.session() as db:
        # Cleared is SQL NULL, not the JSON null a JSON column would write for None.
        (stored,) = db.execute(
            text("SELECT budget_pause FROM agent_instances WHERE instance_id = :id"),
            {"id": agent},
        ).one()
        assert stored is None
        assert not budget_pause._resume_in(db, read, NOW, "raced")
        db.rollback()
    assert sa.instance(store, agent).status == AgentStatus.PAUSED.value


def test_only_an_operators_change_since_the_pause_lifts_it(store: Store, tmp_path: Path) -> None:
    """The worker paused at its own settings' cap of one tool call; a reader whose settings
    say eight (the code default) takes that for no raise until an operator changes one."""
    worker = _settings(tmp_path, agent_tick_max_tool_calls=1)
    api = _settings(tmp_path)
    agent = sa.create_instance(store, NOW)
    with store.session() as db:
        row = db.get(AgentInstance, agent)
        assert row is not None
        row.is_building_starting_workset = False
        db.add(row)
        db.commit()
    _pause(store, worker, agent, BudgetReached(axis="tool_calls", cap=1, spent=1))
    assert budget_pause.resume_lifted(store, api, NOW + timedelta(minutes=1)) == []
    configs.put_config(store, sa.TENANT, "AgentDispatcher:TickMaxToolCalls", 3)
    (resumed,) = budget_pause.resume_lifted(store, api, datetime.now(UTC))
    assert resumed.status == AgentStatus.ACTIVE.value and resumed.budget_pause_id is None


def test_a_regeneration_that_does_not_lift_the_pause_moves_its_time_on(
    store: Store, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, agent_weekly_credit_usd=1.0)
    agent = sa.create_instance(store, NOW)
    first, second = NOW - timedelta(days=6), NOW - timedelta(days=5)
    _spend(store, "c/1", 0.6, first)
    _spend(store, "c/2", 0.6, second)  # 1.20 held in the window: spent
    _pause(store, settings, agent, BudgetReached(axis="weekly_credit"))
    pause = sa.instance(store, agent).budget_pause
    assert pause is not None
    # Without c/1 the window holds 0.60 < 1.00: that is when it lifts.
    assert budget_pause.resume_at(sa.instance(store, agent)) == first + timedelta(days=7)
    _spend(store, "c/3", 0.6, NOW)  # another agent of the tenant spent meanwhile
    at = first + timedelta(days=7, seconds=1)
    assert budget_pause.resume_if_lifted(store, settings, agent, at) is None
    # 1.20 still in the window then: the next time is when c/2 leaves it.
    assert budget_pause.resume_at(sa.instance(store, agent)) == second + timedelta(days=7)
    later = second + timedelta(days=7, seconds=1)
    resumed = budget_pause.resume_if_lifted(store, settings, agent, later)
    assert resumed is not None and resumed.status == AgentStatus.ACTIVE.value
