"""The store: sqlmodel tables, the engine, migrations and the event journal."""

from runtime.store.engine import Store, make_engine
from runtime.store.journal import EventJournal, JournalEntry, JournalPage
from runtime.store.migrate import upgrade_to_head

__all__ = [
    "EventJournal",
    "JournalEntry",
    "JournalPage",
    "Store",
    "make_engine",
    "upgrade_to_head",
]
