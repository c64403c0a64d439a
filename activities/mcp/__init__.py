"""The worker's side of MCP: its connections to the servers (pool.py) and the calls made
through them (calls.py)."""
