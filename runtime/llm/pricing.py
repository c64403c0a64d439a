"""What a model costs, and what an attempt cost, computed by agentrt at the served model's price.

The model never reports its own cost. A price is dollars per million tokens (input,
output, cached input). An operator's override (`PUT /api/v1/llm/prices/{model}`,
table `llm_price`) wins; otherwise the `genai-prices` package's bundled table
(no network) prices the model.

An unknown price is never taken for zero: a credit gate summing attempts that cost
nothing would never trip. An attempt is charged (`PriceSource`) at the served model's
price; when no price is known for it, at the requested model's; when neither has one,
at the deployment's default price (`AGENTRT_DEFAULT_PRICE_PER_MTOK_IN` / `_OUT`). The
served model is the name the *server* reports, so it is not trusted to lower the bill:
when both models have a price, the attempt is charged at the higher of the two for its
tokens (the served model's on a tie), or a remote server could name a model priced 0
and be charged nothing. A price of 0 set on purpose (`PUT .../prices/{model}` for a
local model) is a price like any other. Every attempt records the version of the price
it was charged at: "genai-prices <package version>", "override:<updated_at ISO>" (of the
served or the requested model, as its `priceSource` says), or "default:<in>/<out>".

The built-in `scripted` model (the worker's own deterministic model, the embedded
default for demos and tests) runs in the worker and costs nothing real: it is free
("scripted", `builtin`). What makes it free is the provider that answered, never the
model name a reply carries: a remote server naming its model `scripted` is priced
like any other unknown model.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

from genai_prices import __version__ as PRICES_VERSION
from genai_prices import data_snapshot
from genai_prices.types import TieredPrices
from pydantic import BaseModel, Field

from runtime.llm.contracts import PriceSource, Usage
from runtime.llm.models import LlmPrice
from runtime.settings import Settings
from runtime.store.engine import Store
from runtime.timestamps import aware_utc

SCRIPTED = "scripted"
UNKNOWN_PRICE = "unknown"
DEFAULT_PREFIX = "default:"
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
    """The cost of one attempt: `tokens_in` includes the `cached_in` tokens read from cache.

    Never negative: each count is clamped at zero (and the cached ones at `tokens_in`), so
    a count that does not add up can never give credit back.
    """
    tokens_in = max(tokens_in, 0)
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


class AttemptCost(BaseModel):
    """What one attempt cost, at whose price, and that price's version."""

    cost_usd: float
    price_version: str
    price_source: PriceSource


def default_price(settings: Settings) -> Price:
    """The deployment's price of a model no price is known for (cached input as input)."""
    return Price(
        input_per_mtok_usd=settings.default_price_per_mtok_in,
        output_per_mtok_usd=settings.default_price_per_mtok_out,
    )


def default_version(price: Price) -> str:
    return f"{DEFAULT_PREFIX}{price.input_per_mtok_usd:g}/{price.output_per_mtok_usd:g}"


def choose_price(
    store: Store,
    requested_model: str,
    served_model: str,
    default: Price,
    usage: Usage | None = None,
) -> tuple[Price, str, PriceSource]:
    """The price an attempt is charged at — never none: the higher of the served and the
    requested model's when both are known (for `usage`'s tokens; the served model's on a
    tie), else whichever of them is known (served first), else `default`.

    The served model is named by the server, so it may not choose its own (lower)
    price. Only for a remote provider: the built-in scripted model never gets here.
    """
    served, served_version = price_for(store, served_model)
    requested: Price | None = None
    if requested_model != served_model:
        requested, requested_version = price_for(store, requested_model)
    if served is not None and requested is not None:
        if _dearer(requested, served, usage):
            return requested, requested_version, PriceSource.REQUESTED
        return served, served_version, PriceSource.SERVED
    if served is not None:
        return served, served_version, PriceSource.SERVED
    if requested is not None:
        return requested, requested_version, PriceSource.REQUESTED
    return default, default_version(default), PriceSource.DEFAULT


def _dearer(price: Price, than: Price, usage: Usage | None) -> bool:
    """Whether `price` charges more than `than`: for `usage`'s tokens, or (without any)
    for a million tokens each of uncached input, cached input and output."""
    if usage is None or not (usage.prompt_tokens > 0 or usage.completion_tokens > 0):
        usage = Usage(prompt_tokens=2 * MTOK, completion_tokens=MTOK, cached_prompt_tokens=MTOK)
    return _usage_cost(price, usage) > _usage_cost(than, usage)


def _usage_cost(price: Price, usage: Usage) -> float:
    return cost_usd(price, usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens)


def attempt_cost(
    store: Store,
    *,
    provider_kind: str,
    requested_model: str,
    served_model: str,
    usage: Usage,
    default: Price,
) -> AttemptCost:
    """The cost of one attempt (see the module's docstring for whose price): uncached
    input at the input price, cached input at the cached-input price (the input price
    when there is none), output at the output price.

    `provider_kind` "scripted" (the built-in model answered) is free. A served model
    not charged at its own price (it has none, or the requested model's is higher) is
    logged once per process.
    """
    if provider_kind == SCRIPTED:
        return AttemptCost(cost_usd=0.0, price_version=SCRIPTED, price_source=PriceSource.BUILTIN)
    price, version, source = choose_price(store, requested_model, served_model, default, usage)
    if source is not PriceSource.SERVED and served_model not in _unpriced:
        _unpriced.add(served_model)
        log.warning(
            "model %r (asked for %r) is not charged at its own price (none known, or lower"
            " than the requested model's): its calls are charged at the %s price (%s)",
            served_model,
            requested_model,
            source.value,
            version,
        )
    cost = _usage_cost(price, usage)
    return AttemptCost(cost_usd=cost, price_version=version, price_source=source)


def put_price(store: Store, model: str, price: Price, now: datetime) -> LlmPrice:
    """Set (or replace) the override of `model`; effective at the next attempt."""
    row = LlmPrice(
        model=model,
        input_per_mtok_usd=price.input_per_mtok_usd,
        output_per_mtok_usd=price.output_per_mtok_usd,
        cached_input_per_mtok_usd=price.cached_input_per_mtok_usd,
        updated_at=now,
    )
    return store.run_transaction(lambda db: db.merge(row))  # a racing first save: last wins


def delete_price(store: Store, model: str) -> bool:
    """Drop the override of `model` (the bundle prices it again); False when there was none."""
    with store.transaction() as db:
        row = db.get(LlmPrice, model)
        if row is None:
            return False
        db.delete(row)
        return True
