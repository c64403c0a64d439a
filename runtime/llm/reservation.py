"""Reserve before you spend: an attempt's worst case, held against a budget before it is sent.

A caller with a dollar budget (a standing agent's tick and its tenant's weekly credit)
passes the gateway a `SpendGate`. Before the HTTP request, the gateway prices the
attempt's worst case (`worst_case_usd`: the prompt's estimated tokens at the input price
plus the output cap at the output price) and writes the attempt's `in_flight` row with
that `reserved_usd` in the same transaction in which the gate admits it: the gate takes
its lock, sums what is spent and held, and refuses when the reservation does not fit.
Settling is the attempt's own end: its row then carries its actual `cost_usd` (zero for
a failure), and a reader of spend counts the reservation only while the row is in flight
or ended with its spend unknown (a timeout, a worker lost mid-call): the worst case
stands for a call whose cost nobody knows. Nothing has to be released separately, so a
crash between the call and a settlement cannot leak credit or double-count it.

The overshoot this leaves is what a provider bills beyond the reservation of a call
already admitted: more output than the cap asked (a server that ignores `max_tokens`)
or a prompt tokenized longer than the estimate (four characters a token, see
runtime/llm/token_estimate.py), and a served model dearer than the requested one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlmodel import Session

from runtime.llm.contracts import ChatMessage, ToolSpec
from runtime.llm.pricing import Price, cost_usd, price_for
from runtime.llm.token_estimate import IMAGE_TOKENS, estimate_tokens, prompt_chars
from runtime.store.engine import Store

# The outcomes whose spend is unknown: their reservation still counts (runtime/llm's
# `in_flight` state, and a timeout, which is also how a lost worker's attempt ends).
UNSETTLED_OUTCOMES = ("in_flight", "timeout")
# The output a request without a cap is reserved for (every caller with a budget caps it).
OUTPUT_WITHOUT_CAP = 32_768


@dataclass(frozen=True)
class SpendRefusal:
    """Why an attempt was not sent: its worst case did not fit `axis`."""

    axis: str
    cap_usd: float
    spent_usd: float
    reserve_usd: float
    # When the refusal lifts by itself (a rolling window's oldest spend leaving it).
    regenerates_at: datetime | None = None


class SpendRefused(Exception):
    """The gateway did not send the attempt: the gate refused its reservation."""

    def __init__(self, refusal: SpendRefusal) -> None:
        super().__init__(f"{refusal.axis}: the reservation does not fit")
        self.refusal = refusal


class SpendGate(Protocol):
    def __call__(self, db: Session, reserve_usd: float, attempt_id: str) -> SpendRefusal | None:
        """Admit (None) or refuse the reservation, inside the transaction that writes it."""
        ...


def worst_case_usd(
    store: Store,
    *,
    requested_model: str,
    default: Price,
    messages: list[ChatMessage],
    tools: list[ToolSpec],
    max_output_tokens: int | None,
) -> float:
    """The most an attempt may cost: every prompt token at the input price (none taken
    as cached) and the whole output cap at the output price, at the requested model's
    price (the deployment's default when it has none, as its attempt would be charged)."""
    price, _version = price_for(store, requested_model)
    images = sum(1 for m in messages for image in m.images if image.data_url is not None)
    prompt = estimate_tokens(prompt_chars(messages, tools)) + images * IMAGE_TOKENS
    output = max_output_tokens if max_output_tokens else OUTPUT_WITHOUT_CAP
    return cost_usd(price or default, prompt, output)
