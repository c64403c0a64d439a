"""Which session raised a permission request: one indexed row per request, written with its
`permission_request` event (a journal projection), and filled by migration 0028 from the
events the journal held before. A vote that names the request alone reads that row; an
unknown id reads nothing (no scan of the journal's JSON)."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from runtime.journal_projections import JOURNAL_PROJECTIONS
from runtime.sessions import registry
from runtime.sessions.streams import session_event
from runtime.store import EventJournal, Store
from runtime.store.migrate import alembic_config, current_revision, head_revision
from runtime.streams import session_stream


def _raise(journal: EventJournal, session_id: str, request_id: str) -> None:
    journal.append_many(
        session_stream(session_id),
        [session_event("permission_request", {"requestId": request_id, "sessionId": session_id})],
    )


def test_a_raised_request_names_its_session(store: Store) -> None:
    journal = EventJournal(store, projections=JOURNAL_PROJECTIONS)
    _raise(journal, "s1", "r1")
    _raise(journal, "s2", "r2")
    journal.append_many(session_stream("s1"), [session_event("agent_message_chunk", {})])
    assert registry.find_permission_session(store, "r1") == "s1"
    assert registry.find_permission_session(store, "r2") == "s2"
    assert registry.find_permission_session(store, "unknown") is None


def test_the_migration_fills_the_index_from_the_journal(database_url: str) -> None:
    store = Store(database_url)
    try:
        with store.engine.begin() as connection:
            command.downgrade(alembic_config(connection), "0027")
        assert current_revision(store.engine) == "0027"
        # Events appended by a daemon of the version before: no projection wrote a row.
        journal = EventJournal(store)
        _raise(journal, "old", "r-old")
        _raise(journal, "first", "r-again")
        _raise(journal, "second", "r-again")  # the latest event wins, as the scan's did
        journal.append_many("agent/t/a", [session_event("permission_request", {"requestId": "x"})])
        with store.engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
        assert current_revision(store.engine) == head_revision()
        assert registry.find_permission_session(store, "r-old") == "old"
        assert registry.find_permission_session(store, "r-again") == "second"
        assert registry.find_permission_session(store, "x") is None
        with store.engine.connect() as connection:
            count = connection.execute(text("SELECT count(*) FROM session_permission_request"))
            assert count.scalar_one() == 2
    finally:
        store.dispose()
