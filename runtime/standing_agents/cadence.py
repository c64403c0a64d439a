"""The heartbeat cadence of a standing agent (spec standing-agents §3.3, ComputeNextHeartbeatDelay).

Pure: the workflow asks it how long to sleep before seeding the next `AgentTick`.

| idle heartbeat enabled | next delay                                                   |
|------------------------|--------------------------------------------------------------|
| yes (default)          | `heartbeat_ms` (24 h), whatever the idle count               |
| no                     | `backoff_base_ms * backoff_factor ** prior_idle_ticks`,      |
|                        | capped at `max_backoff_ms` (30 s, 60 s, 120 s, ... ≤ 30 min) |

Real events bypass the cadence entirely: they wake the workflow when they are queued.
"""

from __future__ import annotations

import math


def next_heartbeat_delay_ms(
    *,
    idle_heartbeat_enabled: bool,
    heartbeat_ms: int,
    backoff_base_ms: int,
    backoff_factor: float,
    max_backoff_ms: int,
    prior_idle_ticks: int,
) -> int:
    """The delay before the next heartbeat tick, in milliseconds.

    Args:
        idle_heartbeat_enabled: the fixed slow check-in (Settings.agent_idle_heartbeat_enabled).
        heartbeat_ms: the fixed interval used when it is enabled.
        backoff_base_ms, backoff_factor, max_backoff_ms: the geometric idle backoff.
        prior_idle_ticks: consecutive idle ticks before this one (negative counts as 0).

    Returns:
        The delay in whole milliseconds (never above `max_backoff_ms` on the backoff path).
    """
    if idle_heartbeat_enabled:
        return heartbeat_ms
    exponent = max(prior_idle_ticks, 0)
    # Compare in logarithms first: factor**exponent overflows a float after ~1000 idle
    # ticks, and the cap is reached long before that anyway.
    if backoff_factor > 1 and backoff_base_ms > 0:
        headroom = math.log(max_backoff_ms / backoff_base_ms) if max_backoff_ms > 0 else -1.0
        if exponent * math.log(backoff_factor) >= headroom:
            return max_backoff_ms
    return min(int(backoff_base_ms * backoff_factor**exponent), max_backoff_ms)
