"""Standing agents (spec standing-agents): contracts, mode catalogue, tables, store access."""
