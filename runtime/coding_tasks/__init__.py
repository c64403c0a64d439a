"""Coding tasks (spec standing-agents §2.2-2.3): the unit of work a coder runs."""
