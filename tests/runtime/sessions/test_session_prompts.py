"""Prompt texts in the store (runtime/sessions/prompts.py)."""

from __future__ import annotations

from runtime.sessions.prompts import forget_prompt, load_prompt, save_prompt
from runtime.store import Store


def test_saving_a_prompt_again_keeps_the_first_save(store: Store) -> None:
    """A retried activity saves its derived prompt id again: no error, the first text
    stands (agentrt's coder's task prompt, activities/coding_tasks/coder_session.py)."""
    save_prompt(store, "s-1", "p-1", "first")
    save_prompt(store, "s-1", "p-1", "first")
    save_prompt(store, "s-1", "p-1", "second")
    assert load_prompt(store, "p-1") == "first"
    forget_prompt(store, "p-1")
    assert load_prompt(store, "p-1") is None
