"""The cost of a model call, computed by agentrt at the served model's price.

The model never reports its own cost. Prices come from the `genai-prices` package
(bundled data, no network); a model it does not know costs 0 and the attempt
records `price_version` "unknown", so the gap is visible on the llm-calls route.
The built-in `scripted` model is free.
"""

from __future__ import annotations

import logging

from genai_prices import Usage as PriceUsage
from genai_prices import __version__ as PRICES_VERSION
from genai_prices import calc_price

from runtime.llm.contracts import Usage

SCRIPTED = "scripted"
UNKNOWN_PRICE = "unknown"
log = logging.getLogger(__name__)
# Models already warned about (once per model per worker process).
_unpriced: set[str] = set()


def price_usd(provider: str, served_model: str, usage: Usage) -> tuple[float, str]:
    """(cost in dollars, price table version) of one attempt."""
    if provider == SCRIPTED or served_model == SCRIPTED:
        return 0.0, SCRIPTED
    try:
        price = calc_price(
            PriceUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens),
            model_ref=served_model,
        )
    except LookupError:
        if served_model not in _unpriced:
            _unpriced.add(served_model)
            log.warning("no price known for model %r: its calls are recorded at 0", served_model)
        return 0.0, UNKNOWN_PRICE
    return float(price.total_price), f"genai-prices {PRICES_VERSION}"
