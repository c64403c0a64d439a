"""Approvals: every request agentrt makes of a human, one model underneath the kinds' own
protocols (DESIGN.md, "Humans in the loop: one approval model").

- `models`: the `approvals` table, the one store;
- `ledger`: the one lifecycle (pending → approved | denied | answered | expired |
  cancelled | superseded), written in the caller's transaction, and the inbox's query;
- `projection`: a session's permission requests, from its journal events;
- `binding`: the digest that ties an approval of a tool call to exactly the call a human
  was shown.
"""

from __future__ import annotations
