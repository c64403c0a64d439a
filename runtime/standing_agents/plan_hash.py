"""The no-op short-circuit's plan input hash and the idle/forced-replan rules (spec §3.4.4, §3.3).

The hash covers the external drivers ONLY: the event kind, its payload and the bucketed
ops digest. The agent's ever-changing reasoning tail, timestamps, event ids and sequence
numbers are deliberately left out, so an unchanged world hashes the same tick after tick.

Canonical form: SHA-256 (lowercase hex) of the UTF-8 bytes of
`json.dumps({"eventKind": kind, "payload": payload, "opsBucket": bucket},
sort_keys=True, separators=(",", ":"), ensure_ascii=False)` — key order never matters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from runtime.standing_agents.contracts import EventKind


def plan_input_hash(event_kind: str, payload: Mapping[str, Any], ops_bucket: str) -> str:
    """SHA-256 hex over the canonical JSON of (event kind, payload, ops bucket)."""
    document = {"eventKind": str(event_kind), "payload": payload, "opsBucket": ops_bucket}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_idle_tick(event_kind: str, plan_hash: str, previous_hash: str | None) -> bool:
    """§3.3.3: idle = an `AgentTick` whose plan hash equals the previous tick's.

    Any other event kind (a message, an answer, an external signal) is never idle, and the
    first tick (no previous hash) is not idle either.
    """
    return (
        event_kind == EventKind.AGENT_TICK
        and previous_hash is not None
        and plan_hash == previous_hash
    )


def forced_replan_due(consecutive_idle_ticks: int, every_n: int) -> bool:
    """The safety valve: after `every_n` idle ticks in a row (20), the next one plans anyway."""
    return consecutive_idle_ticks >= every_n
