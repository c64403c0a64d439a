"""Real servers that stand in for external services in tests (no client mocks)."""
