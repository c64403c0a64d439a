"""Timestamps as the store returns them and as the wire wants them.

SQLite hands back naive datetimes for `DateTime(timezone=True)` columns; everything
agentrt stores is UTC, so a naive value is read as UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime


def aware_utc(ts: datetime) -> datetime:
    """`ts` with its time zone; a naive value is taken as UTC."""
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def iso_ms(ts: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a `Z`, as JavaScript's `toISOString()`."""
    return aware_utc(ts).astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
