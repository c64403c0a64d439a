"""The agent-tools gateway (spec agent-tools-protocol-v1): calls, results, turns, events.

The gateway owns no business data: tools delegate to `runtime.investigation`.
What it does own is transport state — call records with their results, turn
records, browser sessions — and it keeps them in the store, not in memory.
"""
