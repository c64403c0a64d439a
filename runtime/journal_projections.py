"""What the worker's and the API's journals derive from the events they append, in the
appending transaction (EventJournal's `projections`), in this order:

- the approvals of a session's permission requests (runtime/approvals/projection.py);
- agentrt's coder's question that mirrors one of them, ended with it
  (runtime/standing_agents/coder_decisions.py);
- which session raised each permission request, for the vote that names it alone
  (runtime/sessions/registry.py).
"""

from __future__ import annotations

from typing import Final

from runtime.approvals.projection import project
from runtime.sessions.registry import index_permission_requests
from runtime.standing_agents.coder_decisions import mirror_permission_outcome
from runtime.store.journal import Projection

JOURNAL_PROJECTIONS: Final[tuple[Projection, ...]] = (
    project,
    mirror_permission_outcome,
    index_permission_requests,
)
