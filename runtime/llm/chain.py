"""The fallback chain's policy (issue 11 "The chain"): after an attempt, what comes next.

Within one chain entry a 429 or a 401/403 moves to the provider's next credential
(after a short `Retry-After`, honoured); when the provider's credentials are used up,
or on a 5xx or a timeout, the chain advances to its next entry; a 400 ends the chain at
once; an `ok` ends it with success. Pure: the workflows call it between attempts.
"""

from __future__ import annotations

from pydantic import BaseModel

from runtime.llm.contracts import AttemptOutcome, AttemptSpec, ChainPlan

# A Retry-After up to this long is waited out before the next credential; a longer one
# is not worth holding the call for: the next credential is tried at once.
SHORT_RETRY_AFTER_S = 5.0


class ChainStep(BaseModel):
    """The next attempt (None: the chain is over) and how long to wait before it."""

    attempt: AttemptSpec | None
    wait_s: float = 0.0
    advanced: bool = False  # moved to the next chain entry (the fallback_advance counter)


def first_attempt(plan: ChainPlan, call_id: str) -> AttemptSpec | None:
    return _spec(plan, call_id, 0, 0, 0)


def next_attempt(
    plan: ChainPlan,
    previous: AttemptSpec,
    outcome: AttemptOutcome,
    retry_after_s: float | None = None,
) -> ChainStep:
    """What follows `previous`, given how it ended."""
    if outcome in (AttemptOutcome.OK, AttemptOutcome.BAD_REQUEST):
        return ChainStep(attempt=None)
    entry = plan.entries[previous.fallback_step]
    credential = entry.credential_aliases.index(previous.credential_alias)
    index = previous.attempt_index + 1
    if outcome in (AttemptOutcome.RATE_LIMITED, AttemptOutcome.AUTH_ERROR):
        if credential + 1 < len(entry.credential_aliases):
            wait = 0.0
            if (
                outcome is AttemptOutcome.RATE_LIMITED
                and retry_after_s is not None
                and retry_after_s <= SHORT_RETRY_AFTER_S
            ):
                wait = max(retry_after_s, 0.0)
            step = previous.fallback_step
            same_entry = _spec(plan, previous.call_id, index, step, credential + 1)
            return ChainStep(attempt=same_entry, wait_s=wait)
    nxt = _spec(plan, previous.call_id, index, previous.fallback_step + 1, 0)
    return ChainStep(attempt=nxt, advanced=nxt is not None)


def _spec(
    plan: ChainPlan, call_id: str, index: int, step: int, credential: int
) -> AttemptSpec | None:
    if step >= len(plan.entries):
        return None
    entry = plan.entries[step]
    return AttemptSpec(
        call_id=call_id,
        attempt_index=index,
        site=plan.site,
        preset_id=plan.preset_id,
        fallback_step=step,
        provider=entry.provider,
        credential_alias=entry.credential_aliases[credential],
        model=entry.model,
        overlay=plan.overlay,
    )
