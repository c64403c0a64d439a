"""The event journal: one append-only table of (stream, seq, type, data, originator, ts).

`seq` is allocated per stream by an upsert on `journal_stream` inside the
appending transaction, so concurrent appenders (API threads, worker activities,
several processes) never share or skip a number. A retention bound per stream
prunes the oldest rows and moves `earliest_seq`, which readers use to tell a
client that its cursor fell out of the window.

Readers wait for new entries without busy-polling: appends made through
`aappend` in this process wake waiters at once; appends made by another
process (the worker) are seen by a bounded poll of `last_seq`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import Connection, delete, insert, select, text, update

from runtime.store.engine import Store
from runtime.store.journal_contracts import NewEvent
from runtime.store.models import JournalEvent, JournalStream
from runtime.timestamps import aware_utc

log = logging.getLogger(__name__)

_EVENTS = JournalEvent.__table__  # type: ignore[attr-defined]
_STREAMS = JournalStream.__table__  # type: ignore[attr-defined]

_ALLOCATE = text(
    "INSERT INTO journal_stream (stream, last_seq, earliest_seq) VALUES (:stream, :n, 1) "
    "ON CONFLICT (stream) DO UPDATE SET last_seq = journal_stream.last_seq + :n "
    "RETURNING last_seq, earliest_seq"
)


@dataclass(frozen=True)
class JournalEntry:
    stream: str
    seq: int
    type: str
    data: dict[str, Any]
    originator: str | None
    ts: datetime

    @property
    def ts_ms(self) -> int:
        return int(self.ts.timestamp() * 1000)


@dataclass(frozen=True)
class JournalPage:
    """Entries after a cursor, with the stream's bounds at the time of the read."""

    entries: list[JournalEntry]
    earliest_seq: int
    last_seq: int

    def cursor_expired(self, after: int) -> bool:
        """True when entries after `after` were pruned before the client read them."""
        return after + 1 < self.earliest_seq


def _entry(stream: str, row: Any) -> JournalEntry:
    seq, type_, data, originator, ts = row
    return JournalEntry(
        stream=stream,
        seq=int(seq),
        type=type_,
        data=dict(data or {}),
        originator=originator,
        ts=aware_utc(ts),
    )


class _Wakeups:
    """Per-stream wake-up generations for waiters in this process's event loop."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def current(self, stream: str) -> asyncio.Event:
        event = self._events.get(stream)
        if event is None:
            event = self._events[stream] = asyncio.Event()
        return event

    def notify(self, stream: str) -> None:
        event = self._events.pop(stream, None)
        if event is not None:
            event.set()


class Projection(Protocol):
    """What a feature derives from events as they are appended, in the append's own
    transaction (it commits with them or not at all; a deduplicated retry's append
    projects nothing). The feature passes it to the journals that append its events."""

    def __call__(
        self, connection: Connection, stream: str, entries: Sequence[JournalEntry]
    ) -> None: ...


class EventJournal:
    """Append to and read from the journal; wait for entries after a cursor."""

    def __init__(
        self,
        store: Store,
        *,
        poll_interval: float = 0.05,
        projections: Sequence[Projection] = (),
    ) -> None:
        self.store = store
        self.poll_interval = poll_interval
        self.projections = tuple(projections)
        self._wakeups = _Wakeups()
        self._watch: _Watcher | None = None

    # -- writes -------------------------------------------------------------------------

    def append(
        self,
        stream: str,
        type: str,
        data: Mapping[str, Any] | None = None,
        *,
        originator: str | None = None,
        retention: int | None = None,
    ) -> JournalEntry:
        """Append one event; returns it with its seq."""
        event = NewEvent(type=type, data=dict(data or {}), originator=originator)
        return self.append_many(stream, [event], retention=retention)[0]

    def append_many(
        self,
        stream: str,
        events: Sequence[NewEvent],
        *,
        retention: int | None = None,
        dedupe_key: str | None = None,
    ) -> list[JournalEntry]:
        """Append events in one transaction, with contiguous seqs; prune past `retention`.

        With `dedupe_key`, a second append of the same batch (a retried activity
        whose first attempt committed) returns the entries already stored.
        """
        if not events:
            return []
        now = datetime.now(UTC)
        with self.store.engine.begin() as connection:
            if dedupe_key is not None:
                # Lock the stream row first (PostgreSQL; SQLite holds the write lock already).
                connection.execute(_ALLOCATE, {"stream": stream, "n": 0}).one()
                first_seq = connection.execute(
                    select(_EVENTS.c.seq).where(
                        _EVENTS.c.stream == stream, _EVENTS.c.dedupe_key == dedupe_key
                    )
                ).scalar()
                if first_seq is not None:
                    return self._entries_between(
                        connection, stream, int(first_seq), int(first_seq) + len(events) - 1
                    )
            last_seq, earliest_seq = connection.execute(
                _ALLOCATE, {"stream": stream, "n": len(events)}
            ).one()
            first = last_seq - len(events) + 1
            entries = [
                JournalEntry(
                    stream=stream,
                    seq=first + index,
                    type=event.type,
                    data=dict(event.data),
                    originator=event.originator,
                    ts=now,
                )
                for index, event in enumerate(events)
            ]
            connection.execute(
                insert(_EVENTS),
                [
                    {
                        "stream": e.stream,
                        "seq": e.seq,
                        "type": e.type,
                        "data": e.data,
                        "originator": e.originator,
                        "dedupe_key": dedupe_key if index == 0 else None,
                        "ts": e.ts,
                    }
                    for index, e in enumerate(entries)
                ],
            )
            if retention is not None and last_seq - earliest_seq + 1 > retention:
                self._prune(connection, stream, last_seq - retention + 1)
            for project in self.projections:
                project(connection, stream, entries)
        return entries

    def dedupe_keys(self, stream: str, prefix: str) -> list[str]:
        """The dedupe keys of `stream`'s batches that begin with `prefix` (keys a writer
        built by one pattern: every streamed chunk of one model attempt, say)."""
        query = select(_EVENTS.c.dedupe_key).where(
            _EVENTS.c.stream == stream,
            _EVENTS.c.dedupe_key.startswith(prefix, autoescape=True),
        )
        with self.store.engine.connect() as connection:
            return [str(key) for key in connection.execute(query).scalars()]

    @staticmethod
    def _entries_between(
        connection: Connection, stream: str, first: int, last: int
    ) -> list[JournalEntry]:
        rows = connection.execute(
            select(
                _EVENTS.c.seq, _EVENTS.c.type, _EVENTS.c.data, _EVENTS.c.originator, _EVENTS.c.ts
            )
            .where(_EVENTS.c.stream == stream, _EVENTS.c.seq >= first, _EVENTS.c.seq <= last)
            .order_by(_EVENTS.c.seq)
        ).all()
        return [_entry(stream, row) for row in rows]

    @staticmethod
    def _prune(connection: Connection, stream: str, new_earliest: int) -> None:
        connection.execute(
            delete(_EVENTS).where(_EVENTS.c.stream == stream, _EVENTS.c.seq < new_earliest)
        )
        connection.execute(
            update(_STREAMS).where(_STREAMS.c.stream == stream).values(earliest_seq=new_earliest)
        )

    async def aappend(
        self,
        stream: str,
        type: str,
        data: Mapping[str, Any] | None = None,
        *,
        originator: str | None = None,
        retention: int | None = None,
    ) -> JournalEntry:
        """`append` off the event loop, then wake this process's waiters on the stream."""
        entry = await asyncio.to_thread(
            self.append, stream, type, data, originator=originator, retention=retention
        )
        self._wakeups.notify(stream)
        return entry

    async def aappend_many(
        self,
        stream: str,
        events: Sequence[NewEvent],
        *,
        retention: int | None = None,
        dedupe_key: str | None = None,
    ) -> list[JournalEntry]:
        entries = await asyncio.to_thread(
            self.append_many, stream, events, retention=retention, dedupe_key=dedupe_key
        )
        self._wakeups.notify(stream)
        return entries

    def notify(self, stream: str) -> None:
        """Wake waiters on `stream` (call from the event loop thread)."""
        self._wakeups.notify(stream)

    # -- reads --------------------------------------------------------------------------

    def bounds(self, stream: str) -> tuple[int, int]:
        """(earliest_seq still stored, last_seq); (1, 0) for a stream never written."""
        with self.store.read_engine.connect() as connection:
            row = connection.execute(
                select(_STREAMS.c.earliest_seq, _STREAMS.c.last_seq).where(
                    _STREAMS.c.stream == stream
                )
            ).first()
        if row is None:
            return 1, 0
        return int(row[0]), int(row[1])

    def read(self, stream: str, after: int = 0, limit: int = 1000) -> JournalPage:
        """Entries with seq > `after`, oldest first, at most `limit`."""
        with self.store.read_engine.connect() as connection:
            bounds = connection.execute(
                select(_STREAMS.c.earliest_seq, _STREAMS.c.last_seq).where(
                    _STREAMS.c.stream == stream
                )
            ).first()
            rows = connection.execute(
                select(
                    _EVENTS.c.seq,
                    _EVENTS.c.type,
                    _EVENTS.c.data,
                    _EVENTS.c.originator,
                    _EVENTS.c.ts,
                )
                .where(_EVENTS.c.stream == stream, _EVENTS.c.seq > after)
                .order_by(_EVENTS.c.seq)
                .limit(limit)
            ).all()
        earliest, last = (int(bounds[0]), int(bounds[1])) if bounds else (1, 0)
        entries = [_entry(stream, row) for row in rows]
        return JournalPage(entries=entries, earliest_seq=earliest, last_seq=last)

    async def aread(self, stream: str, after: int = 0, limit: int = 1000) -> JournalPage:
        return await asyncio.to_thread(self.read, stream, after, limit)

    async def wait(
        self, stream: str, after: int, timeout: float, *, limit: int = 1000
    ) -> JournalPage:
        """Entries after `after`, waiting up to `timeout` seconds for the first one.

        Wakes at once on an in-process `aappend`; otherwise re-reads every
        `poll_interval` (appends from other processes). Returns an empty page on timeout.
        """
        deadline = time.monotonic() + timeout
        watcher = self._watcher()
        watching = False
        try:
            while True:
                wakeup = self._wakeups.current(stream)
                page = await self.aread(stream, after, limit)
                remaining = deadline - time.monotonic()
                if page.entries or remaining <= 0:
                    return page
                if not watching:
                    watcher.watch(stream, page.last_seq)
                    watching = True
                try:
                    # No poll of our own: the watcher wakes us when `last_seq` moves.
                    await asyncio.wait_for(wakeup.wait(), remaining)
                except TimeoutError:
                    pass
        finally:
            if watching:
                watcher.unwatch(stream)

    def _watcher(self) -> _Watcher:
        loop = asyncio.get_running_loop()
        if self._watch is None or self._watch.loop is not loop:
            self._watch = _Watcher(self, loop)
        return self._watch

    def last_seqs(self, streams: Sequence[str]) -> dict[str, int]:
        """`last_seq` of several streams in one query (streams never written are absent)."""
        with self.store.read_engine.connect() as connection:
            rows = connection.execute(
                select(_STREAMS.c.stream, _STREAMS.c.last_seq).where(
                    _STREAMS.c.stream.in_(list(streams))
                )
            ).all()
        return {str(stream): int(last) for stream, last in rows}


class _Watcher:
    """One poller per journal and event loop for every stream someone waits on.

    Appends made by other processes (the worker) cannot wake this process's
    waiters directly; instead of each waiter re-reading its stream, this task
    reads the `last_seq` of all watched streams in one query every
    `poll_interval` and wakes the waiters of the streams that moved. It stops
    when nobody waits.
    """

    def __init__(self, journal: EventJournal, loop: asyncio.AbstractEventLoop) -> None:
        self.journal = journal
        self.loop = loop
        self.known: dict[str, int] = {}
        self.waiters: dict[str, int] = {}
        self.task: asyncio.Task[None] | None = None

    def watch(self, stream: str, last_seq: int) -> None:
        self.waiters[stream] = self.waiters.get(stream, 0) + 1
        self.known[stream] = max(self.known.get(stream, 0), last_seq)
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._run(), name="journal-watcher")

    def unwatch(self, stream: str) -> None:
        count = self.waiters.get(stream, 0) - 1
        if count > 0:
            self.waiters[stream] = count
        else:
            self.waiters.pop(stream, None)
            self.known.pop(stream, None)

    async def _run(self) -> None:
        while self.waiters:
            await asyncio.sleep(self.journal.poll_interval)
            streams = list(self.waiters)
            if not streams:
                return
            try:
                latest = await asyncio.to_thread(self.journal.last_seqs, streams)
            except Exception:
                log.warning("journal watcher poll failed", exc_info=True)
                continue
            for stream, last in latest.items():
                if stream in self.known and last > self.known[stream]:
                    self.known[stream] = last
                    self.journal.notify(stream)
