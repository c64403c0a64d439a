"""Reserve before you spend (issue 21, item 8; runtime/llm/reservation.py and
runtime/standing_agents/spend.py): an attempt's worst case is held against the tick's
dollars and the tenant's weekly credit in one atomic step, before anything is sent.
Ten concurrent reservations against a credit that covers three admit three; the actual
cost settles it when the attempt ends, a failure releases it, and an attempt whose spend
is unknown (in flight, or lost with its worker) keeps it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.llm import record
from runtime.llm.contracts import ChatMessage, ModelReply, OwnerKind, PriceSource, Usage
from runtime.llm.pricing import AttemptCost, Price, put_price
from runtime.llm.reservation import OUTPUT_WITHOUT_CAP, SpendRefusal, worst_case_usd
from runtime.settings import Settings
from runtime.standing_agents import configs, spend
from runtime.store import Store
from tests.workflows import standing_agent_support as sa

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
RESERVE = 0.8  # each attempt's worst case in these tests


def _owner(call: str, tenant: str = sa.TENANT) -> record.CallOwner:
    return record.CallOwner(
        call_id=call,
        tenant=tenant,
        owner_kind=OwnerKind.AGENT,
        owner_id="agent-1",
        site="Agent:Planning",
        provider="settings",
        requested_model="m",
        purpose=record.AGENT_PURPOSE,
    )


def _gate(
    settings: Settings, *, tick_cap: float | None = None, tick_spent: float = 0.0
) -> spend.AgentSpendGate:
    return spend.AgentSpendGate(
        settings=settings,
        tenant=sa.TENANT,
        now=NOW,
        tick_cap_usd=tick_cap,
        tick_spent_usd=tick_spent,
    )


def _reserve(
    store: Store, settings: Settings, call: str, reserve: float = RESERVE
) -> SpendRefusal | None:
    return record.begin_attempt(
        store, _owner(call), attempt=1, now=NOW, reserve_usd=reserve, gate=_gate(settings)
    )


def _settings(tmp_path: Path, credit: float) -> Settings:
    return Settings(data_dir=tmp_path, workspace=tmp_path, agent_weekly_credit_usd=credit)


def _succeed(store: Store, call: str, cost: float) -> None:
    reply = ModelReply(
        content="ok",
        tool_calls=[],
        finish_reason="stop",
        requested_model="m",
        served_model="m",
        usage=Usage(prompt_tokens=1, completion_tokens=1),
    )
    record.record_success(
        store,
        _owner(call),
        attempt=1,
        reply=reply,
        cost=AttemptCost(cost_usd=cost, price_version="t", price_source=PriceSource.SERVED),
        duration_ms=1,
        now=NOW,
    )


def test_ten_concurrent_reservations_against_a_credit_for_three_admit_three(
    store: Store, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, credit=2.5)  # three worst cases of $0.80, not four
    calls = [f"agent/{sa.TENANT}/a{n}/init/llm1" for n in range(10)]
    with ThreadPoolExecutor(max_workers=10) as pool:
        refusals = list(pool.map(lambda c: _reserve(store, settings, c), calls))
    admitted = [c for c, r in zip(calls, refusals, strict=True) if r is None]
    assert len(admitted) == 3
    refused = [r for r in refusals if r is not None]
    assert {r.axis for r in refused} == {spend.CREDIT_AXIS}
    assert all(r.cap_usd == 2.5 and r.reserve_usd == RESERVE for r in refused)
    assert all(r.spent_usd == pytest.approx(3 * RESERVE) for r in refused)
    # What is held counts as spend for every reader (the tick's gate, the foundational axis).
    gate = spend.credit_gate(store, settings, sa.TENANT, NOW)
    assert gate.remaining_usd == pytest.approx(2.5 - 3 * RESERVE)
    # A refused reservation wrote nothing: only the three admitted attempts have rows.
    assert len(sa.llm_attempts_of_tenant(store, sa.TENANT)) == 3


def test_the_actual_cost_settles_a_reservation_and_a_failure_releases_it(
    store: Store, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, credit=2.0)
    assert _reserve(store, settings, "c/1") is None
    assert _reserve(store, settings, "c/2") is None
    assert _reserve(store, settings, "c/3") is not None  # 1.60 held, 0.80 more is 2.40
    _succeed(store, "c/1", cost=0.10)  # settled: 0.10 spent, 0.80 held
    assert _reserve(store, settings, "c/3") is None
    assert _reserve(store, settings, "c/4") is not None  # 0.10 + 1.60 + 0.80 > 2.00
    record.record_failure(
        store,
        _owner("c/2"),
        attempt=1,
        outcome="server_error",
        http_status=500,
        error="boom",
        duration_ms=1,
        now=NOW,
    )  # a 500 is not billed: released
    assert _reserve(store, settings, "c/4") is None
    assert spend.spend_in_window(store, sa.TENANT, NOW).total_usd == pytest.approx(0.10 + 1.60)
    # The ended rows keep what they held, on record.
    held = {a.call_id: a.reserved_usd for a in sa.llm_attempts_of_tenant(store, sa.TENANT)}
    assert held == {"c/1": RESERVE, "c/2": RESERVE, "c/3": RESERVE, "c/4": RESERVE}


def test_an_attempt_lost_with_its_worker_keeps_its_reservation(
    store: Store, tmp_path: Path
) -> None:
    """Its spend is unknown (the provider may have billed it): the worst case stands."""
    settings = _settings(tmp_path, credit=2.0)
    assert _reserve(store, settings, "c/1") is None
    # The next attempt of the same call marks the first one lost (a timeout).
    owner = _owner("c/1")
    assert (
        record.begin_attempt(
            store, owner, attempt=2, now=NOW, reserve_usd=RESERVE, gate=_gate(settings)
        )
        is None
    )
    outcomes = sorted((a.ordinal, a.outcome) for a in sa.llm_attempts_of_tenant(store, sa.TENANT))
    assert outcomes == [(1, "timeout"), (2, "in_flight")]
    assert spend.spend_in_window(store, sa.TENANT, NOW).total_usd == pytest.approx(2 * RESERVE)
    assert _reserve(store, settings, "c/2") is not None
    # A week later the window no longer holds it.
    later = spend.spend_in_window(store, sa.TENANT, NOW + timedelta(days=7, seconds=1))
    assert later.total_usd == 0.0


def test_a_reservation_beyond_the_ticks_dollars_is_refused_before_the_credit(
    store: Store, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, credit=100.0)
    gate = _gate(settings, tick_cap=1.0, tick_spent=0.3)
    refusal = record.begin_attempt(
        store, _owner("c/1"), attempt=1, now=NOW, reserve_usd=RESERVE, gate=gate
    )
    assert refusal is not None
    assert (refusal.axis, refusal.cap_usd, refusal.spent_usd) == (spend.TICK_AXIS, 1.0, 0.3)
    fits = _gate(settings, tick_cap=1.0, tick_spent=0.2)
    assert (
        record.begin_attempt(
            store, _owner("c/1"), attempt=1, now=NOW, reserve_usd=RESERVE, gate=fits
        )
        is None
    )


def test_an_operator_raising_the_credit_admits_the_reservation(
    store: Store, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, credit=1.0)
    assert _reserve(store, settings, "c/1") is None
    assert _reserve(store, settings, "c/2") is not None
    configs.put_config(store, sa.TENANT, "AgentDispatcher:WeeklyCreditUsd", 1.6)
    assert _reserve(store, settings, "c/2") is None


def test_the_worst_case_is_the_prompt_at_the_input_price_and_the_cap_at_the_output_price(
    store: Store,
) -> None:
    put_price(store, "m", Price(input_per_mtok_usd=2.0, output_per_mtok_usd=10.0), NOW)
    messages = [ChatMessage(role="user", content="x" * 4000)]  # 1,000 tokens estimated
    default = Price(input_per_mtok_usd=99.0, output_per_mtok_usd=99.0)
    worst = worst_case_usd(
        store,
        requested_model="m",
        default=default,
        messages=messages,
        tools=[],
        max_output_tokens=8192,
    )
    assert worst == pytest.approx((1000 * 2.0 + 8192 * 10.0) / 1_000_000)
    # A model without a price is reserved at the deployment's default; no cap, at 32k.
    unpriced = worst_case_usd(
        store,
        requested_model="unknown-model",
        default=default,
        messages=messages,
        tools=[],
        max_output_tokens=None,
    )
    assert unpriced == pytest.approx((1000 + OUTPUT_WITHOUT_CAP) * 99.0 / 1_000_000)


def test_the_ticks_own_attempt_whose_spend_is_unknown_counts_on_the_tick_axis(
    store: Store, tmp_path: Path
) -> None:
    """A timed-out attempt the chain fell back from may have been billed: the tick's
    next reservation counts it, whatever the workflow's tally of finished calls says."""
    settings = _settings(tmp_path, credit=100.0)
    prefix = f"agent/{sa.TENANT}/a1/tick-7/"
    first = _owner(prefix + "llm1")
    assert record.begin_attempt(store, first, attempt=0, now=NOW, reserve_usd=RESERVE) is None
    record.record_failure(
        store,
        first,
        attempt=0,
        outcome="timeout",
        http_status=None,
        error="no answer in time",
        duration_ms=1,
        now=NOW,
    )
    gate = spend.AgentSpendGate(
        settings=settings,
        tenant=sa.TENANT,
        now=NOW,
        tick_cap_usd=1.0,
        tick_spent_usd=0.0,  # no call of the tick finished
        tick_call_prefix=prefix,
    )
    refusal = record.begin_attempt(store, first, attempt=1, now=NOW, reserve_usd=RESERVE, gate=gate)
    assert refusal is not None
    assert refusal.axis == spend.TICK_AXIS and refusal.spent_usd == pytest.approx(RESERVE)
    # Another tick's attempts do not count on this one's axis.
    unrelated = spend.AgentSpendGate(
        settings=settings,
        tenant=sa.TENANT,
        now=NOW,
        tick_cap_usd=1.0,
        tick_spent_usd=0.0,
        tick_call_prefix=f"agent/{sa.TENANT}/a1/tick-8/",
    )
    with store.session() as db:
        assert unrelated(db, RESERVE, "x") is None
        db.rollback()
