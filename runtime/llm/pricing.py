"""What a model costs, and what an attempt cost, computed by agentrt at the served model's price.

The model never reports its own cost. A price is dollars per million tokens (input,
output, cached input). An operator's override (`PUT /api/v1/llm/prices/{model}`,
table `llm_price`) wins; otherwise the `genai-prices` package's bundled table
(no network) prices the model. Every attempt records the version of the price it
was charged at: "genai-prices <package version>", "override:<updated_at ISO>", or
"unknown" for a model neither knows (it costs 0, and the gap is visible in the
attempts). The built-in `scripted` model is free ("scripted").
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

from genai_prices import __version__ as PRICES_VERSION
from genai_prices import data_snapshot
from genai_prices.types import TieredPrices
from pydantic import BaseModel, Field

from runtime.llm.contracts import Usage
from runtime.llm.models import LlmPrice
from runtime.store.engine import Store
from runtime.timestamps import aware_utc

SCRIPTED = "scripted"
UNKNOWN_PRICE = "unknown"
BUNDLED_VERSION = f"genai-prices {PRICES_VERSION}"
OVERRIDE_PREFIX = "override:"
MTOK = 1_000_000
log = logging.getLogger(__name__)
# Models already warned about (once per model per process).
_unpriced: set[str] = set()


class Price(BaseModel):
    """Dollars per million tokens. Cached input without a price of its own is billed as input."""

    input_per_mtok_usd: float = Field(ge=0)
    output_per_mtok_usd: float = Field(ge=0)
    cached_input_per_mtok_usd: float | None = Field(default=None, ge=0)


def cost_usd(price: Price, tokens_in: int, tokens_out: int, cached_in: int = 0) -> float:
    """The cost of one attempt: `tokens_in` includes the `cached_in` tokens read from cache."""
    cached = max(0, min(cached_in, tokens_in))
    cached_rate = (
        price.cached_input_per_mtok_usd
        if price.cached_input_per_mtok_usd is not None
        else price.input_per_mtok_usd
    )
    # Decimal: a sum of many small float products drifts; spend is summed from these.
    total = (
        Decimal(tokens_in - cached) * Decimal(str(price.input_per_mtok_usd))
        + Decimal(cached) * Decimal(str(cached_rate))
        + Decimal(max(tokens_out, 0)) * Decimal(str(price.output_per_mtok_usd))
    ) / MTOK
    return float(total)


def override_version(updated_at: datetime) -> str:
    return OVERRIDE_PREFIX + aware_utc(updated_at).astimezone(UTC).isoformat()


def stored_price(store: Store, model: str) -> LlmPrice | None:
    with store.session() as db:
        return db.get(LlmPrice, model)


def bundled_price(model: str) -> Price | None:
    """The `genai-prices` price of `model` now, or None when the table does not know it.

    A `provider/model` name (an OpenRouter-style id) is looked up under that provider.
    A tiered price (more per token past a context length) is priced at its base tier.
    """
    snapshot = data_snapshot.get_snapshot()
    candidates: list[tuple[str, str | None]] = [(model, None)]
    if "/" in model:
        provider, _, rest = model.partition("/")
        candidates.append((rest, provider))
    for ref, provider_id in candidates:
        try:
            _provider, info = snapshot.find_provider_model(ref, None, provider_id, None)
        except LookupError:
            continue
        prices = info.get_prices(datetime.now(UTC))
        input_rate = _rate(prices.input_mtok)
        output_rate = _rate(prices.output_mtok)
        if input_rate is None and output_rate is None:
            continue  # priced by other units only (images, audio): not a chat price
        return Price(
            input_per_mtok_usd=input_rate or 0.0,
            output_per_mtok_usd=output_rate or 0.0,
            cached_input_per_mtok_usd=_rate(prices.cache_read_mtok),
        )
    return None


def _rate(value: Decimal | TieredPrices | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, TieredPrices):
        return float(value.base)
    return float(value)


def price_for(store: Store, model: str) -> tuple[Price | None, str]:
    """The price in force for `model` and its version: an override, else the bundle."""
    row = stored_price(store, model)
    if row is not None:
        return (
            Price(
                input_per_mtok_usd=row.input_per_mtok_usd,
                output_per_mtok_usd=row.output_per_mtok_usd,
                cached_input_per_mtok_usd=row.cached_input_per_mtok_usd,
            ),
            override_version(row.updated_at),
        )
    bundled = bundled_price(model)
    if bundled is None:
        return None, UNKNOWN_PRICE
    return bundled, BUNDLED_VERSION


def attempt_cost(
    store: Store, provider_kind: str, served_model: str, usage: Usage
) -> tuple[float, str]:
    """(cost in dollars, price version) of one attempt, at the served model's price:
    uncached input at the input price, cached input at the cached-input price (the input
    price when the model has none), output at the output price.

    `provider_kind` "scripted" (the built-in model) is free. An unpriced model costs 0
    with version "unknown", and is logged once per process.
    """
    if provider_kind == SCRIPTED or served_model == SCRIPTED:
        return 0.0, SCRIPTED
    price, version = price_for(store, served_model)
    if price is None:
        if served_model not in _unpriced:
            _unpriced.add(served_model)
            log.warning("no price known for model %r: its calls are recorded at 0", served_model)
        return 0.0, version
    cost = cost_usd(price, usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens)
    return cost, version


def put_price(store: Store, model: str, price: Price, now: datetime) -> LlmPrice:
    """Set (or replace) the override of `model`; effective at the next attempt."""
    row = LlmPrice(
        model=model,
        input_per_mtok_usd=price.input_per_mtok_usd,
        output_per_mtok_usd=price.output_per_mtok_usd,
        cached_input_per_mtok_usd=price.cached_input_per_mtok_usd,
        updated_at=now,
    )
    with store.session() as db:
        merged = db.merge(row)
        db.commit()
        return merged


def delete_price(store: Store, model: str) -> bool:
    """Drop the override of `model` (the bundle prices it again); False when there was none."""
    with store.session() as db:
        row = db.get(LlmPrice, model)
        if row is None:
            return False
        db.delete(row)
        db.commit()
        return True
