"""MCP servers as tool sources (issue 19): configuration, names, and what the worker
reports of each server. The connections themselves live in the worker
(activities/mcp/pool.py); the protocol is the official SDK's (PyPI `mcp`)."""
