"""agentrt benchmarks: scripts that print figures (never timed assertions in tests).

Run `python -m bench --list`, then `python -m bench NAME [--runs N] [--warmup W]`.
"""
