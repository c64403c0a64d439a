"""All I/O of agentrt runs here, as Temporal activities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.journal import JournalActivities
from runtime.store import EventJournal


def build_activities(journal: EventJournal) -> list[Callable[..., Any]]:
    """Every activity the worker registers, bound to this process's store."""
    return [JournalActivities(journal).append_events]


__all__ = ["JournalActivities", "build_activities"]
