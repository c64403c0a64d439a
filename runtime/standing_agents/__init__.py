"""Standing agents (spec standing-agents): contracts, mode catalogue, tables, store access.

Importing the package registers `approvals`' listener: every attention request inserted,
by whichever writer, opens its approval in the same transaction.
"""

from runtime.standing_agents import approvals as approvals
