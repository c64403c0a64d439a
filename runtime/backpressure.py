"""SSE backpressure: one subscriber's bounded backlog of live frames (spec: "Contre-pression").

Pure code, no I/O and no asyncio: the SSE route drives it, tests drive it directly.

- A stream key holds a bounded number of subscribers (api/sse.py counts them): one more
  is refused with `SubscriberLimitExceeded` (429).

- A subscriber holds at most `maxQueued` live frames (default 256, `?maxQueued=N`
  in [16, 2048]). Forced frames (replay, synthetic frames) are not counted.
- When an accepted live frame brings the backlog to 75 % of `maxQueued`, the
  subscriber gets one `slow_client_warning`; the warning re-arms only once the
  backlog has drained to 37.5 % or less (hysteresis, as the reference daemon).
- A live frame offered to a full backlog is refused: the subscriber is evicted
  (`client_evicted`, terminal) and nothing more is accepted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Literal, TypeVar

from runtime.failures import InvalidRequest, WireError

DEFAULT_MAX_QUEUED = 256
MIN_MAX_QUEUED = 16
MAX_MAX_QUEUED = 2048
# Ratios as fractions, compared in integers: warn at 3/4 full, re-arm at 3/8.
WARN_RATIO = (3, 4)
REARM_RATIO = (3, 8)
SUBSCRIBER_LIMIT_RETRY_AFTER = "5"

T = TypeVar("T")


def parse_max_queued(raw: str | None) -> int:
    """The `maxQueued` query value: decimal digits in [16, 2048]; absent means 256.

    Raises ValueError for an empty, non-decimal or out-of-range value.
    """
    if raw is None:
        return DEFAULT_MAX_QUEUED
    if not (raw.isascii() and raw.isdigit()):
        raise ValueError(raw)
    value = int(raw)
    if not MIN_MAX_QUEUED <= value <= MAX_MAX_QUEUED:
        raise ValueError(raw)
    return value


# The refusal of a `maxQueued` that `parse_max_queued` does not take.
INVALID_MAX_QUEUED = InvalidRequest(
    message=f"`maxQueued` must be in [{MIN_MAX_QUEUED}, {MAX_MAX_QUEUED}]",
    code="invalid_max_queued",
)


class SubscriberLimitExceeded(WireError):
    """One more SSE subscriber on a stream key that has `limit` already: 429, retry after
    `Retry-After`."""

    kind: Literal["subscriber_limit_exceeded"] = "subscriber_limit_exceeded"
    limit: int

    @property
    def http_status(self) -> int:
        return 429

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"EventBus subscriber limit reached ({self.limit})",
            "code": self.kind_name,
            "limit": self.limit,
        }

    def response_headers(self) -> dict[str, str]:
        return {"Retry-After": SUBSCRIBER_LIMIT_RETRY_AFTER}


class Offer(Enum):
    """What became of a live frame offered to a subscriber."""

    ACCEPTED = "accepted"
    WARN = "warn"  # accepted, and the backlog just reached the warning threshold
    EVICT = "evict"  # refused: the backlog is full, the subscriber is evicted


@dataclass
class BackpressureState:
    """The live-frame count of one subscriber, with the warning hysteresis."""

    max_queued: int
    queued: int = 0
    warned: bool = False
    evicted: bool = False
    warnings: int = 0

    def __post_init__(self) -> None:
        if self.max_queued < 1:
            raise ValueError("max_queued must be positive")

    @property
    def at_warning_level(self) -> bool:
        num, den = WARN_RATIO
        return self.queued * den >= self.max_queued * num

    @property
    def at_rearm_level(self) -> bool:
        num, den = REARM_RATIO
        return self.queued * den <= self.max_queued * num

    def offer(self) -> Offer:
        """A live frame arrives for this subscriber."""
        if self.evicted or self.queued >= self.max_queued:
            self.evicted = True
            return Offer.EVICT
        self.queued += 1
        if self.warned and self.at_rearm_level:
            self.warned = False
        if not self.warned and self.at_warning_level:
            self.warned = True
            self.warnings += 1
            return Offer.WARN
        return Offer.ACCEPTED

    def drained(self) -> None:
        """One live frame left the backlog (written to the client)."""
        if self.queued <= 0:
            raise ValueError("no live frame is queued")
        self.queued -= 1
        if self.warned and self.at_rearm_level:
            self.warned = False


class Backlog(Generic[T]):
    """A subscriber's FIFO: live items counted against `max_queued`, forced items not.

    `close()` ends the backlog: nothing more is offered, what is queued still
    drains (so a terminal frame forced before closing is the last item out).
    """

    def __init__(self, max_queued: int) -> None:
        self.state = BackpressureState(max_queued)
        self._items: deque[tuple[T, bool]] = deque()
        self.closed = False

    def offer(self, item: T) -> Offer:
        if self.closed:
            raise RuntimeError("backlog is closed")
        outcome = self.state.offer()
        if outcome is not Offer.EVICT:
            self._items.append((item, True))
        return outcome

    def force(self, item: T) -> None:
        """Queue an item that does not count against the cap (replay, synthetic frames)."""
        if self.closed:
            raise RuntimeError("backlog is closed")
        self._items.append((item, False))

    def pop(self) -> T | None:
        if not self._items:
            return None
        item, live = self._items.popleft()
        if live:
            self.state.drained()
        return item

    def close(self) -> None:
        self.closed = True

    @property
    def exhausted(self) -> bool:
        """Closed and fully drained: the subscriber's stream ends here."""
        return self.closed and not self._items

    def __len__(self) -> int:
        return len(self._items)
