"""agentrt's shared kernel: settings, contracts, store, journal, telemetry, Temporal plumbing."""

__version__ = "0.1.0"
