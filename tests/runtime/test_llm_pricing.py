"""Prices (issue 11): an operator's override wins over the bundled genai-prices table, the
version charged is recorded, and the cost arithmetic is agentrt's own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from genai_prices import __version__ as PRICES_VERSION

from runtime.llm.contracts import Usage
from runtime.llm.pricing import (
    Price,
    attempt_cost,
    bundled_price,
    cost_usd,
    delete_price,
    price_for,
    put_price,
)
from runtime.store import Store

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


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
    cost, charged = attempt_cost(
        store, "openai", "gpt-4o-mini", Usage(prompt_tokens=1000, completion_tokens=1000)
    )
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
    cost, version = attempt_cost(
        store, "openai", "qwen/qwen3:beta", Usage(prompt_tokens=2000, completion_tokens=1000)
    )
    assert cost == pytest.approx(0.001 + 0.0015)
    assert version.startswith("override:")
    # Of the 2000 input tokens, 1500 read from the provider's cache: at the cached price.
    cached = Usage(prompt_tokens=2000, completion_tokens=1000, cached_prompt_tokens=1500)
    cost, _ = attempt_cost(store, "openai", "qwen/qwen3:beta", cached)
    assert cost == pytest.approx((500 * 0.5 + 1500 * 0.1 + 1000 * 1.5) / 1e6)


def test_cached_tokens_without_a_cached_price_cost_the_input_price(store: Store) -> None:
    put_price(store, "m-plain", Price(input_per_mtok_usd=4.0, output_per_mtok_usd=8.0), NOW)
    usage = Usage(prompt_tokens=1000, completion_tokens=10, cached_prompt_tokens=600)
    cost, _ = attempt_cost(store, "openai", "m-plain", usage)
    assert cost == pytest.approx((1000 * 4.0 + 10 * 8.0) / 1e6)


def test_a_reply_recorded_before_cached_tokens_were_counted_reads_as_none_cached() -> None:
    """Usage crosses Temporal inside replies: older histories lack the field."""
    usage = Usage.model_validate({"prompt_tokens": 5, "completion_tokens": 2})
    assert usage.cached_prompt_tokens == 0


def test_the_scripted_model_is_free(store: Store) -> None:
    usage = Usage(prompt_tokens=10_000, completion_tokens=10_000)
    assert attempt_cost(store, "scripted", "scripted", usage) == (0.0, "scripted")


def test_the_bundle_agrees_with_genai_prices_own_arithmetic(store: Store) -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    usage = Usage(prompt_tokens=12_345, completion_tokens=678)
    ours, _ = attempt_cost(store, "openai", "gpt-4o-mini", usage)
    theirs = calc_price(PriceUsage(input_tokens=12_345, output_tokens=678), model_ref="gpt-4o-mini")
    assert ours == pytest.approx(float(theirs.total_price))
    # With cached tokens too (genai-prices counts them inside input_tokens, as OpenAI does).
    cached = Usage(prompt_tokens=12_345, completion_tokens=678, cached_prompt_tokens=10_000)
    ours, _ = attempt_cost(store, "openai", "gpt-4o-mini", cached)
    theirs = calc_price(
        PriceUsage(input_tokens=12_345, output_tokens=678, cache_read_tokens=10_000),
        model_ref="gpt-4o-mini",
    )
    assert ours == pytest.approx(float(theirs.total_price))
