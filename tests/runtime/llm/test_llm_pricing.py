"""Prices (issue 11): an operator's override wins over the bundled genai-prices table, the
version charged is recorded, and the cost arithmetic is agentrt's own. An unknown price is
never zero (issue 18): the requested model's, else the default price, and a warning."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from genai_prices import __version__ as PRICES_VERSION
from pydantic import ValidationError
from sqlalchemy import inspect, text

from runtime.llm.contracts import (
    AttemptOutcome,
    AttemptReport,
    AttemptSpec,
    PriceSource,
    Usage,
    UsageSource,
)
from runtime.llm.cost_warning import PRICE_UNKNOWN, USAGE_NOT_REPORTED, cost_warning
from runtime.llm.models import LlmCallAttempt
from runtime.llm.pricing import (
    AttemptCost,
    Price,
    attempt_cost,
    bundled_price,
    cost_usd,
    default_price,
    default_version,
    delete_price,
    price_for,
    put_price,
)
from runtime.settings import Settings
from runtime.store import Store

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DEFAULT = Price(input_per_mtok_usd=10.0, output_per_mtok_usd=30.0)


def _cost(
    store: Store, served: str, usage: Usage, *, kind: str = "openai", requested: str | None = None
) -> tuple[float, str]:
    """(cost, version) of an attempt that asked for `requested` (default: `served`)."""
    cost = attempt_cost(
        store,
        provider_kind=kind,
        requested_model=requested or served,
        served_model=served,
        usage=usage,
        default=DEFAULT,
    )
    return cost.cost_usd, cost.price_version


def test_cost_arithmetic() -> None:
    price = Price(input_per_mtok_usd=2.5, output_per_mtok_usd=10.0, cached_input_per_mtok_usd=1.25)
    assert cost_usd(price, 1_000_000, 0) == 2.5
    assert cost_usd(price, 0, 1_000_000) == 10.0
    assert cost_usd(price, 1000, 500) == pytest.approx(0.0025 + 0.005)
    # Cached input tokens are part of tokens_in, billed at the cached rate.
    assert cost_usd(price, 1000, 0, cached_in=400) == pytest.approx(600 * 2.5e-6 + 400 * 1.25e-6)
    # More cached than input is clamped (a provider's report is not trusted to add up).
    assert cost_usd(price, 100, 0, cached_in=1000) == pytest.approx(100 * 1.25e-6)
    assert cost_usd(price, 0, 0) == 0.0


@pytest.mark.parametrize(
    ("tokens_in", "tokens_out", "cached_in", "expected"),
    [
        (-5_000_000, 1, 0, 10.0 / 1e6),  # the negative input counts as none
        (-5_000_000, 1, -5_000_000, 10.0 / 1e6),
        (1000, -1_000_000, 0, 1000 * 2.5e-6),
        (100, 0, -1000, 100 * 2.5e-6),  # a negative cached count is none cached
    ],
)
def test_a_cost_is_never_negative(
    tokens_in: int, tokens_out: int, cached_in: int, expected: float
) -> None:
    price = Price(input_per_mtok_usd=2.5, output_per_mtok_usd=10.0, cached_input_per_mtok_usd=1.25)
    cost = cost_usd(price, tokens_in, tokens_out, cached_in)
    assert cost >= 0
    assert cost == pytest.approx(expected)


def test_cached_input_without_its_own_price_is_billed_as_input() -> None:
    price = Price(input_per_mtok_usd=3.0, output_per_mtok_usd=15.0)
    assert cost_usd(price, 1000, 0, cached_in=1000) == pytest.approx(0.003)


def test_many_small_costs_sum_without_drift() -> None:
    price = Price(input_per_mtok_usd=0.15, output_per_mtok_usd=0.6)
    assert cost_usd(price, 7, 3) == pytest.approx((7 * 0.15 + 3 * 0.6) / 1e6, rel=1e-12)


def test_the_bundled_table_prices_a_known_model(store: Store) -> None:
    price, version = price_for(store, "gpt-4o-mini")
    assert version == f"genai-prices {PRICES_VERSION}"
    assert price is not None
    assert price.input_per_mtok_usd > 0 and price.output_per_mtok_usd > 0
    # An OpenRouter-style provider/model id is looked up under its provider.
    assert bundled_price("openai/gpt-4o-mini") == price


def test_an_unknown_model_has_no_price(store: Store) -> None:
    assert price_for(store, "no-such-model-xyz") == (None, "unknown")


def test_an_override_wins_and_its_version_is_its_time(store: Store) -> None:
    override = Price(input_per_mtok_usd=1.0, output_per_mtok_usd=2.0)
    put_price(store, "gpt-4o-mini", override, NOW)
    price, version = price_for(store, "gpt-4o-mini")
    assert price == override
    assert version == "override:2026-11-30T12:00:00+00:00"
    cost, charged = _cost(store, "gpt-4o-mini", Usage(prompt_tokens=1000, completion_tokens=1000))
    assert cost == pytest.approx(0.003)
    assert charged == version
    # Dropping the override brings the bundle back.
    assert delete_price(store, "gpt-4o-mini")
    assert price_for(store, "gpt-4o-mini")[1].startswith("genai-prices ")
    assert not delete_price(store, "gpt-4o-mini")


def test_an_override_prices_a_model_the_bundle_does_not_know(store: Store) -> None:
    put_price(
        store,
        "qwen/qwen3:beta",
        Price(input_per_mtok_usd=0.5, output_per_mtok_usd=1.5, cached_input_per_mtok_usd=0.1),
        NOW,
    )
    cost, version = _cost(
        store, "qwen/qwen3:beta", Usage(prompt_tokens=2000, completion_tokens=1000)
    )
    assert cost == pytest.approx(0.001 + 0.0015)
    assert version.startswith("override:")
    # Of the 2000 input tokens, 1500 read from the provider's cache: at the cached price.
    cached = Usage(prompt_tokens=2000, completion_tokens=1000, cached_prompt_tokens=1500)
    cost, _ = _cost(store, "qwen/qwen3:beta", cached)
    assert cost == pytest.approx((500 * 0.5 + 1500 * 0.1 + 1000 * 1.5) / 1e6)


def test_cached_tokens_without_a_cached_price_cost_the_input_price(store: Store) -> None:
    put_price(store, "m-plain", Price(input_per_mtok_usd=4.0, output_per_mtok_usd=8.0), NOW)
    usage = Usage(prompt_tokens=1000, completion_tokens=10, cached_prompt_tokens=600)
    cost, _ = _cost(store, "m-plain", usage)
    assert cost == pytest.approx((1000 * 4.0 + 10 * 8.0) / 1e6)


def test_a_reply_recorded_before_cached_tokens_were_counted_reads_as_none_cached() -> None:
    """Usage crosses Temporal inside replies: older histories lack the field."""
    usage = Usage.model_validate({"prompt_tokens": 5, "completion_tokens": 2})
    assert usage.cached_prompt_tokens == 0


def test_the_scripted_model_is_free(store: Store) -> None:
    usage = Usage(prompt_tokens=10_000, completion_tokens=10_000)
    assert _cost(store, "scripted", usage, kind="scripted") == (0.0, "scripted")


def test_the_bundle_agrees_with_genai_prices_own_arithmetic(store: Store) -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    usage = Usage(prompt_tokens=12_345, completion_tokens=678)
    ours, _ = _cost(store, "gpt-4o-mini", usage)
    theirs = calc_price(PriceUsage(input_tokens=12_345, output_tokens=678), model_ref="gpt-4o-mini")
    assert ours == pytest.approx(float(theirs.total_price))
    # With cached tokens too (genai-prices counts them inside input_tokens, as OpenAI does).
    cached = Usage(prompt_tokens=12_345, completion_tokens=678, cached_prompt_tokens=10_000)
    ours, _ = _cost(store, "gpt-4o-mini", cached)
    theirs = calc_price(
        PriceUsage(input_tokens=12_345, output_tokens=678, cache_read_tokens=10_000),
        model_ref="gpt-4o-mini",
    )
    assert ours == pytest.approx(float(theirs.total_price))


# --- an unknown price is never zero (issue 18) ---------------------------------------------


def _charged(store: Store, requested: str, served: str, kind: str = "openai") -> AttemptCost:
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=100_000)
    return attempt_cost(
        store,
        provider_kind=kind,
        requested_model=requested,
        served_model=served,
        usage=usage,
        default=DEFAULT,
    )


def test_a_known_served_model_is_charged_at_its_own_price(store: Store) -> None:
    put_price(store, "served-a", Price(input_per_mtok_usd=1.0, output_per_mtok_usd=2.0), NOW)
    charged = _charged(store, "gpt-4o-mini", "served-a")
    assert charged.price_source is PriceSource.SERVED
    assert charged.cost_usd == pytest.approx(1.0 + 0.2)
    assert charged.price_version.startswith("override:")


def test_an_unknown_served_model_is_charged_at_the_requested_models_price(store: Store) -> None:
    charged = _charged(store, "gpt-4o-mini", f"my-finetune-{uuid.uuid4().hex[:8]}")
    price, version = price_for(store, "gpt-4o-mini")
    assert price is not None
    assert charged.price_source is PriceSource.REQUESTED
    assert charged.price_version == version == f"genai-prices {PRICES_VERSION}"
    assert charged.cost_usd == pytest.approx(cost_usd(price, 1_000_000, 100_000))
    assert charged.cost_usd > 0


def test_neither_known_is_charged_at_the_default_price(store: Store) -> None:
    charged = _charged(store, "qwen2.5-local", f"qwen2.5-7b-q4-{uuid.uuid4().hex[:8]}.gguf")
    assert charged.price_source is PriceSource.DEFAULT
    assert charged.price_version == "default:10/30"
    assert charged.cost_usd == pytest.approx(10.0 + 3.0)


def test_a_remote_server_cannot_choose_a_cheaper_price(store: Store) -> None:
    """The served model is the server's word: naming a model priced 0 (or cheaper) does
    not lower the bill below the requested model's price."""
    put_price(store, "free-local", Price(input_per_mtok_usd=0, output_per_mtok_usd=0), NOW)
    put_price(store, "cheap-x", Price(input_per_mtok_usd=0.01, output_per_mtok_usd=0.02), NOW)
    requested, version = price_for(store, "gpt-4o-mini")
    assert requested is not None
    for served in ("free-local", "cheap-x"):
        charged = _charged(store, "gpt-4o-mini", served)
        assert charged.price_source is PriceSource.REQUESTED
        assert charged.price_version == version
        assert charged.cost_usd == pytest.approx(cost_usd(requested, 1_000_000, 100_000))
        assert charged.cost_usd > 0


def test_a_dearer_served_model_is_charged_at_its_own_price(store: Store) -> None:
    put_price(store, "dear-x", Price(input_per_mtok_usd=50.0, output_per_mtok_usd=100.0), NOW)
    charged = _charged(store, "gpt-4o-mini", "dear-x")
    assert charged.price_source is PriceSource.SERVED
    assert charged.cost_usd == pytest.approx(50.0 + 10.0)
    # The same price on both sides: the served model's (the normal case).
    put_price(store, "twin-a", Price(input_per_mtok_usd=1.0, output_per_mtok_usd=2.0), NOW)
    put_price(store, "twin-b", Price(input_per_mtok_usd=1.0, output_per_mtok_usd=2.0), NOW)
    assert _charged(store, "twin-a", "twin-b").price_source is PriceSource.SERVED


def test_a_price_of_zero_set_on_purpose_is_a_price(store: Store) -> None:
    put_price(store, "llama-local", Price(input_per_mtok_usd=0, output_per_mtok_usd=0), NOW)
    charged = _charged(store, "llama-local", "llama-local")
    assert (charged.cost_usd, charged.price_source) == (0.0, PriceSource.SERVED)


def test_only_the_builtin_model_is_free_not_a_remote_model_named_scripted(store: Store) -> None:
    builtin = _charged(store, "scripted", "scripted", kind="scripted")
    assert (builtin.cost_usd, builtin.price_version, builtin.price_source) == (
        0.0,
        "scripted",
        PriceSource.BUILTIN,
    )
    # A remote server whose reply names `scripted` is a model like any other.
    remote = _charged(store, "qwen2.5-local", "scripted")
    assert remote.price_source is PriceSource.DEFAULT and remote.cost_usd > 0
    asked_for_a_priced_one = _charged(store, "gpt-4o-mini", "scripted")
    assert asked_for_a_priced_one.price_source is PriceSource.REQUESTED
    assert asked_for_a_priced_one.cost_usd > 0


def test_an_unpriced_model_is_logged_once(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    # A fresh name: the warning is once per model per process, across parametrized runs.
    model = f"no-such-model-{uuid.uuid4().hex[:8]}"
    with caplog.at_level(logging.WARNING):
        first = _charged(store, model, model)
        again = _charged(store, model, model)
    assert first == again and first.price_source is PriceSource.DEFAULT and first.cost_usd > 0
    assert sum(model in r.getMessage() for r in caplog.records) == 1


def test_the_default_price_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_price(Settings()) == DEFAULT
    monkeypatch.setenv("AGENTRT_DEFAULT_PRICE_PER_MTOK_IN", "0.5")
    monkeypatch.setenv("AGENTRT_DEFAULT_PRICE_PER_MTOK_OUT", "1.25")
    price = default_price(Settings())
    assert (price.input_per_mtok_usd, price.output_per_mtok_usd) == (0.5, 1.25)
    assert default_version(price) == "default:0.5/1.25"
    monkeypatch.setenv("AGENTRT_DEFAULT_PRICE_PER_MTOK_IN", "-1")
    with pytest.raises(ValidationError):
        Settings()


# --- the warning on the owner's stream ------------------------------------------------------


def _report(price: PriceSource | None, usage: UsageSource | None, **update: Any) -> AttemptReport:
    return AttemptReport(
        attempt_id="call-1/a0",
        outcome=AttemptOutcome.OK,
        served_model="qwen2.5-7b.gguf",
        cost_usd=0.0123,
        provider="local",
        credential_alias="main",
        price_source=price,
        usage_source=usage,
    ).model_copy(update=update)


SPEC = AttemptSpec(
    call_id="call-1",
    attempt_index=0,
    site="Agent:Planning",
    preset_id="local",
    fallback_step=0,
    provider="local",
    credential_alias="main",
    model="qwen2.5",
)


def test_no_warning_for_a_served_price_and_reported_tokens() -> None:
    assert cost_warning(SPEC, _report(PriceSource.SERVED, UsageSource.REPORTED)) is None
    assert cost_warning(SPEC, _report(PriceSource.BUILTIN, UsageSource.REPORTED)) is None
    # A failed attempt costs nothing and warns of nothing.
    failed = _report(None, None, outcome=AttemptOutcome.SERVER_ERROR)
    assert cost_warning(SPEC, failed) is None


def test_a_warning_names_what_was_guessed() -> None:
    body = cost_warning(SPEC, _report(PriceSource.DEFAULT, UsageSource.ESTIMATED))
    assert body is not None
    assert body["reasons"] == [PRICE_UNKNOWN, USAGE_NOT_REPORTED]
    assert (body["priceSource"], body["usageSource"]) == ("default", "estimated")
    assert (body["requestedModel"], body["servedModel"]) == ("qwen2.5", "qwen2.5-7b.gguf")
    assert (body["attemptId"], body["provider"], body["costUsd"]) == ("call-1/a0", "local", 0.0123)
    assert "default price" in body["message"] and "estimated" in body["message"]
    assert set(body) == {
        "attemptId",
        "provider",
        "requestedModel",
        "servedModel",
        "priceSource",
        "usageSource",
        "costUsd",
        "reasons",
        "message",
    }  # no credential, no URL, no text of the conversation
    only_price = cost_warning(SPEC, _report(PriceSource.REQUESTED, UsageSource.REPORTED))
    assert only_price is not None and only_price["reasons"] == [PRICE_UNKNOWN]
    assert "'qwen2.5'" in only_price["message"]
    only_usage = cost_warning(SPEC, _report(PriceSource.SERVED, UsageSource.ESTIMATED))
    assert only_usage is not None and only_usage["reasons"] == [USAGE_NOT_REPORTED]


# --- migration 0009 -------------------------------------------------------------------------


def test_attempts_recorded_before_0009_keep_no_provenance(database_url: str) -> None:
    """Down to 0008 and up again, with a row written at 0008: it reads back with both
    sources NULL (nothing recorded whose price or tokens it was), and new rows get them."""
    from alembic import command

    from runtime.store.migrate import alembic_config, current_revision, head_revision

    store = Store(database_url)
    try:
        with store.engine.begin() as connection:
            command.downgrade(alembic_config(connection), "0008")
        assert current_revision(store.engine) == "0008"
        with store.engine.begin() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("llm_call_attempt")}
            assert "price_source" not in columns and "usage_source" not in columns
            connection.execute(
                text(
                    "INSERT INTO llm_call_attempt (attempt_id, call_id, ordinal, owner_kind,"
                    " owner_id, site, fallback_step, provider, requested_model, served_model,"
                    " outcome, tokens_in, tokens_out, cost_usd, price_version, duration_ms,"
                    " created_at) VALUES ('old/a0', 'old', 0, 'agent', 'a1', 'Agent:Planning',"
                    " 0, 'local', 'llama3.2', 'llama3.2', 'ok', 0, 0, 0.0, 'unknown', 5,"
                    " :at)"
                ),
                {"at": NOW},
            )
        with store.engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
        assert current_revision(store.engine) == head_revision()
        with store.session() as db:
            old = db.get(LlmCallAttempt, "old/a0")
            assert old is not None and old.price_version == "unknown"
            assert (old.price_source, old.usage_source) == (None, None)
            old.price_source, old.usage_source = "default", "estimated"
            db.add(old)
            db.commit()
        with store.session() as db:
            again = db.get(LlmCallAttempt, "old/a0")
            assert again is not None and again.price_source == "default"
    finally:
        store.dispose()
