"""The Windows machine pool lane (issue 12, spec standing-agents §2.3 "Voie Windows"):
the pool protocol's contracts, shared by the lease workflow and the pool activities."""
