"""The hash chain of an agent's ledger turns, and its offline verification.

Each turn's `hash` is

    sha256_hex( utf8(prev) + canonical_turn(turn) )

where `prev` is the previous turn's `hash` ("" for the first turn of a generation) and
`canonical_turn(turn)` is the UTF-8 encoding of

    json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

over exactly these ten fields, camelCase as the ledger route and its export show them:

| field         | JSON form                                                          |
|---------------|--------------------------------------------------------------------|
| seq           | integer                                                            |
| eventKind     | string                                                             |
| decisionKind  | string                                                             |
| decision      | object (nested keys sorted too, by sort_keys)                      |
| planInputHash | string                                                             |
| llmCallId     | string or null                                                     |
| servedModel   | string or null                                                     |
| costUsd       | number, always written as a float (Python `repr(float(x))`: 0.0,   |
|               | 0.0125), so `0` and `0.0` hash the same                            |
| createdAt     | string, ISO-8601 UTC with milliseconds and `Z`                     |
|               | (`2026-11-30T18:30:00.123Z`, runtime.timestamps.iso_ms)            |
| prevHash      | string (the previous turn's hash) or null for the first turn       |

`hash` itself is not part of the input. Snake_case names (`event_kind`, `created_at`, ...)
are accepted too, and a datetime `createdAt` is rendered with `iso_ms`, so the store
and a verifier reading the NDJSON export compute the same bytes. Any other key is ignored.
A third party re-implements exactly this to verify an export without agentrt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel

from runtime.timestamps import iso_ms

# camelCase name -> snake_case alias, in the order the table above lists them.
CHAIN_FIELDS: Final[dict[str, str]] = {
    "seq": "seq",
    "eventKind": "event_kind",
    "decisionKind": "decision_kind",
    "decision": "decision",
    "planInputHash": "plan_input_hash",
    "llmCallId": "llm_call_id",
    "servedModel": "served_model",
    "costUsd": "cost_usd",
    "createdAt": "created_at",
    "prevHash": "prev_hash",
}


class MalformedTurn(ValueError):
    """A turn misses a chained field or carries a value of the wrong type."""


def _field(turn: Mapping[str, Any], name: str) -> Any:
    alias = CHAIN_FIELDS[name]
    if name in turn:
        return turn[name]
    if alias in turn:
        return turn[alias]
    raise MalformedTurn(f"missing field {name}")


def chained_fields(turn: Mapping[str, Any]) -> dict[str, Any]:
    """The ten hashed fields of `turn`, normalised to their JSON form (see the module)."""
    fields = {name: _field(turn, name) for name in CHAIN_FIELDS}
    seq = fields["seq"]
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise MalformedTurn("seq must be an integer")
    cost = fields["costUsd"]
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        raise MalformedTurn("costUsd must be a number")
    fields["costUsd"] = float(cost)
    created = fields["createdAt"]
    if isinstance(created, datetime):
        fields["createdAt"] = iso_ms(created)
    elif not isinstance(created, str):
        raise MalformedTurn("createdAt must be an ISO-8601 string")
    if not isinstance(fields["decision"], Mapping):
        raise MalformedTurn("decision must be an object")
    for name in ("eventKind", "decisionKind", "planInputHash"):
        if not isinstance(fields[name], str):
            raise MalformedTurn(f"{name} must be a string")
    for name in ("llmCallId", "servedModel", "prevHash"):
        if fields[name] is not None and not isinstance(fields[name], str):
            raise MalformedTurn(f"{name} must be a string or null")
    return fields


def canonical_turn(turn: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a turn's chained fields (raises MalformedTurn)."""
    text = json.dumps(
        chained_fields(turn), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return text.encode("utf-8")


def turn_hash(prev_hash: str | None, turn: Mapping[str, Any]) -> str:
    """The `hash` of `turn` chained after `prev_hash` (None or "" for the first turn)."""
    digest = hashlib.sha256((prev_hash or "").encode("utf-8"))
    digest.update(canonical_turn(turn))
    return digest.hexdigest()


class ChainVerdict(BaseModel):
    """The result of `verify_chain`."""

    ok: bool
    # Turns read (up to and including the first bad one).
    count: int
    # The hash of the last turn when ok (None for an empty chain).
    head: str | None = None
    first_bad_seq: int | None = None
    reason: str | None = None


def verify_chain(
    turns: Iterable[Mapping[str, Any]], *, require_genesis: bool = True
) -> ChainVerdict:
    """Check a chain in order: seq +1 each turn, prevHash links, every hash recomputed.

    Args:
        turns: the turns oldest first, as the ledger route / export emits them.
        require_genesis: the first turn must have prevHash null (a whole generation). False
            verifies a segment: the first turn's prevHash is trusted as the anchor.
    """
    previous_hash: str | None = None
    previous_seq: int | None = None
    count = 0
    for turn in turns:
        count += 1
        raw_seq = turn.get("seq")
        seq = raw_seq if isinstance(raw_seq, int) and not isinstance(raw_seq, bool) else None
        problem = _turn_problem(turn, count, previous_seq, previous_hash, require_genesis)
        if problem is not None:
            return ChainVerdict(ok=False, count=count, first_bad_seq=seq, reason=problem)
        previous_hash, previous_seq = turn["hash"], seq
    return ChainVerdict(ok=True, count=count, head=previous_hash)


def _turn_problem(
    turn: Mapping[str, Any],
    position: int,
    previous_seq: int | None,
    previous_hash: str | None,
    require_genesis: bool,
) -> str | None:
    """Why `turn` breaks the chain at `position` (1-based), or None when it holds."""
    try:
        fields = chained_fields(turn)
    except MalformedTurn as err:
        return str(err)
    seq = fields["seq"]
    if previous_seq is not None and seq != previous_seq + 1:
        return f"seq {seq} follows seq {previous_seq} (expected {previous_seq + 1})"
    link = fields["prevHash"]
    if position == 1:
        if require_genesis and link is not None:
            return "the first turn has a prevHash (not the start of a chain)"
    elif link != previous_hash:
        return "prevHash does not match the previous turn's hash"
    stored = turn.get("hash")
    if not isinstance(stored, str):
        return "missing hash"
    if turn_hash(link, turn) != stored:
        return "hash does not match the turn's content"
    return None
