"""Fixtures shared by the API tests."""

from tests.agents_helpers import agents

__all__ = ["agents"]
