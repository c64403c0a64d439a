"""The warning that an attempt's cost rests on a guess, for its owner's event stream.

An attempt whose served model has no price (or a lower one than the requested model's)
is charged at the requested model's price, or, neither known, at the default price
(runtime/llm/pricing.py), and one whose provider reported no tokens has them estimated
(runtime/llm/token_estimate.py). Either way the cost is recorded, never zero, and the
owner's stream says so once per attempt, so that the client, or the operator watching a
standing agent, sees that the figure is a guess and what fixes it (a price for the
model, a server that reports usage):

- a session: `model_cost_warning` on `session/<id>` (beside `model_attempt_failed`);
- a standing agent: `agent.cost_warning` on `agent/<tenant>/<id>`.

Agent-tools turns do not get one: spec 000 fixes the events its stream publishes; their
attempts show `priceSource` and `usageSource` like every other (`GET /api/v1/llm/attempts`).

The body carries model names, the provider's id, the cost and where its parts came
from: never a key, a URL or the conversation.
"""

from __future__ import annotations

from typing import Any

from runtime.llm.contracts import (
    AttemptOutcome,
    AttemptReport,
    AttemptSpec,
    PriceSource,
    UsageSource,
)
from runtime.llm.token_estimate import CHARS_PER_TOKEN

SESSION_EVENT = "model_cost_warning"
AGENT_EVENT = "agent.cost_warning"
# `reasons` of a warning.
PRICE_UNKNOWN = "price_unknown"
USAGE_NOT_REPORTED = "usage_not_reported"
_NAME_LIMIT = 200


def cost_warning(spec: AttemptSpec, report: AttemptReport) -> dict[str, Any] | None:
    """The warning's body for a successful attempt whose price or tokens were not the
    served model's own; None when there is nothing to warn about."""
    if report.outcome is not AttemptOutcome.OK:
        return None
    guessed_price = report.price_source in (PriceSource.REQUESTED, PriceSource.DEFAULT)
    estimated = report.usage_source is UsageSource.ESTIMATED
    if not (guessed_price or estimated):
        return None
    served = (report.served_model or spec.model)[:_NAME_LIMIT]
    reasons: list[str] = []
    sentences: list[str] = []
    if guessed_price:
        reasons.append(PRICE_UNKNOWN)
        whose = (
            f"the requested model {spec.model[:_NAME_LIMIT]!r}'s price"
            if report.price_source is PriceSource.REQUESTED
            else "the default price (AGENTRT_DEFAULT_PRICE_PER_MTOK_IN/_OUT)"
        )
        if report.price_source is PriceSource.REQUESTED:
            # The served model has no price, or a lower one than the model asked for
            # (a server does not choose its own price: runtime/llm/pricing.py).
            sentences.append(
                f"The served model {served!r} is not charged at its own price (none is "
                f"known, or it is lower): charged at {whose}; "
                "set one with PUT /api/v1/llm/prices/{model}."
            )
        else:
            sentences.append(
                f"No price is known for the served model {served!r}: charged at {whose}; "
                "set one with PUT /api/v1/llm/prices/{model}."
            )
    if estimated:
        reasons.append(USAGE_NOT_REPORTED)
        sentences.append(
            "The provider reported no token usage: tokens estimated from the text "
            f"({CHARS_PER_TOKEN} characters a token)."
        )
    return {
        "attemptId": report.attempt_id,
        "provider": report.provider,
        "requestedModel": spec.model[:_NAME_LIMIT],
        "servedModel": served,
        "priceSource": report.price_source.value if report.price_source else None,
        "usageSource": report.usage_source.value if report.usage_source else None,
        "costUsd": report.cost_usd,
        "reasons": reasons,
        "message": " ".join(sentences),
    }
