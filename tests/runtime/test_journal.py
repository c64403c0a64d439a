"""The event journal, on SQLite and (when configured) PostgreSQL."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

from temporalio.testing import ActivityEnvironment

from activities.journal import JournalActivities
from runtime.store import EventJournal, Store
from runtime.store.journal_contracts import AppendEventsInput, NewEvent


def test_seq_starts_at_one_per_stream(store: Store) -> None:
    journal = EventJournal(store)
    assert journal.bounds("a") == (1, 0)
    assert [journal.append("a", "t", {"i": i}).seq for i in range(3)] == [1, 2, 3]
    assert journal.append("b", "t").seq == 1
    page = journal.read("a")
    assert [(e.seq, e.type, e.data) for e in page.entries] == [
        (1, "t", {"i": 0}),
        (2, "t", {"i": 1}),
        (3, "t", {"i": 2}),
    ]
    assert (page.earliest_seq, page.last_seq) == (1, 3)
    assert [e.seq for e in journal.read("a", after=2).entries] == [3]
    assert journal.read("a", after=3).entries == []


def test_entries_keep_type_data_originator_and_timestamp(store: Store) -> None:
    journal = EventJournal(store)
    written = journal.append("s", "session_update", {"nested": {"x": [1, "y"]}}, originator="c1")
    (read,) = journal.read("s").entries
    assert read == written
    assert read.ts.tzinfo is not None
    assert read.ts_ms > 0


def test_batch_gets_contiguous_seqs(store: Store) -> None:
    journal = EventJournal(store)
    journal.append("s", "first")
    entries = journal.append_many("s", [NewEvent(type="a"), NewEvent(type="b"), NewEvent(type="c")])
    assert [e.seq for e in entries] == [2, 3, 4]


def test_concurrent_appends_never_share_or_skip_a_seq(store: Store) -> None:
    journal = EventJournal(store)
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(25):
                journal.append("shared", "t", {"writer": name, "i": i})
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    seqs = [e.seq for e in journal.read("shared", limit=10_000).entries]
    assert seqs == list(range(1, 201))


def test_concurrent_appends_from_processes(store: Store) -> None:
    script = (
        "import sys\n"
        "from runtime.store import Store, EventJournal\n"
        "j = EventJournal(Store(sys.argv[1]))\n"
        "for i in range(30): j.append('multi', 'p', {'i': i})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, store.url]) for _ in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    assert [e.seq for e in EventJournal(store).read("multi").entries] == list(range(1, 91))


def test_retention_prunes_oldest_and_reports_earliest(store: Store) -> None:
    journal = EventJournal(store)
    for i in range(10):
        journal.append("r", "t", {"i": i}, retention=4)
    page = journal.read("r")
    assert [e.seq for e in page.entries] == [7, 8, 9, 10]
    assert (page.earliest_seq, page.last_seq) == (7, 10)
    assert journal.bounds("r") == (7, 10)
    assert page.cursor_expired(0)
    assert page.cursor_expired(5)
    assert not page.cursor_expired(6)
    assert not page.cursor_expired(10)
    # Seqs keep counting after a prune.
    assert journal.append("r", "t", retention=4).seq == 11


def test_dedupe_key_makes_a_retried_batch_idempotent(store: Store) -> None:
    journal = EventJournal(store)
    batch = [NewEvent(type="a"), NewEvent(type="b")]
    first = journal.append_many("d", batch, dedupe_key="turn-1/step-1")
    again = journal.append_many("d", batch, dedupe_key="turn-1/step-1")
    assert [e.seq for e in first] == [1, 2]
    assert again == first
    assert journal.append_many("d", [NewEvent(type="c")], dedupe_key="turn-1/step-2")[0].seq == 3
    assert journal.bounds("d") == (1, 3)


async def test_wait_wakes_on_in_process_append_without_polling(store: Store) -> None:
    # A poll interval far beyond the test's patience: only the wake-up can deliver.
    journal = EventJournal(store, poll_interval=3600)
    waiter = asyncio.create_task(journal.wait("w", after=0, timeout=600))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await journal.aappend("w", "hello", {"x": 1})
    page = await asyncio.wait_for(waiter, 60)
    assert [(e.seq, e.type) for e in page.entries] == [(1, "hello")]


async def test_wait_sees_appends_of_another_process(store: Store) -> None:
    journal = EventJournal(store, poll_interval=0.05)
    waiter = asyncio.create_task(journal.wait("x", after=0, timeout=120))
    script = (
        "import sys\n"
        "from runtime.store import Store, EventJournal\n"
        "EventJournal(Store(sys.argv[1])).append('x', 'from-worker')\n"
    )
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, store.url)
    assert await proc.wait() == 0
    page = await waiter
    assert [e.type for e in page.entries] == ["from-worker"]


async def test_wait_returns_an_empty_page_on_timeout(store: Store) -> None:
    journal = EventJournal(store, poll_interval=0.01)
    journal.append("t", "old")
    page = await journal.wait("t", after=1, timeout=0.05)
    assert page.entries == []
    assert page.last_seq == 1


async def test_append_events_activity_is_idempotent(store: Store) -> None:
    journal = EventJournal(store)
    activities = JournalActivities(journal)
    request = AppendEventsInput(
        stream="turn/ws/1",
        events=[NewEvent(type="agent.turn.started", data={"turn_id": "1"})],
        retention=128,
        dedupe_key="turn/ws/1#1",
    )
    env = ActivityEnvironment()
    first = await env.run(activities.append_events, request)
    second = await env.run(activities.append_events, request)
    assert (first.first_seq, first.last_seq) == (1, 1)
    assert second == first
    assert [e.type for e in journal.read("turn/ws/1").entries] == ["agent.turn.started"]


def test_cheap_revision_checks_agree_with_alembic(store: Store) -> None:
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from runtime.store.migrate import MIGRATIONS_DIR, current_revision, head_revision

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()
    with store.engine.connect() as connection:
        alembic_view = MigrationContext.configure(connection).get_current_revision()
    assert current_revision(store.engine) == alembic_view == head_revision()
