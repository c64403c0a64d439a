"""The approvals' clock's pass (`approvals.keep_time`, runtime/approvals/clock.py): give new
requests their kind's timeout, owe `approval.expiring` ahead of expiry, and end what
expired the way its kind ends an answer. Idempotent: every step is a compare-and-swap on
the approval's or its request's state, so a retried pass ends nothing twice."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode

from runtime.agent_tools.contracts import ResearchDecided, turn_workflow_id
from runtime.approvals import clock
from runtime.approvals.contracts import KEEP_TIME_CONTRACT, ClockResult
from runtime.approvals.ledger import ApprovalKind
from runtime.investigation.research import ResearchNotFound, expire_research
from runtime.settings import Settings
from runtime.standing_agents.expiry import expire_decision
from runtime.store import EventJournal, Store

log = logging.getLogger(__name__)

# The turn workflow's signal, by name (activities import no workflow module).
RESEARCH_DECIDED = "research_decided"


class ApprovalClockActivities:
    def __init__(self, store: Store, journal: EventJournal, settings: Settings) -> None:
        self.store = store
        self.journal = journal
        self.settings = settings

    @property
    def _lead(self) -> timedelta:
        return timedelta(milliseconds=self.settings.approval_expiring_lead_ms)

    def _time_and_warn(self) -> tuple[int, int, list[Any]]:
        now = datetime.now(UTC)
        with self.store.transaction() as db:
            connection = db.connection()
            timed = clock.assign_timeouts(connection, self.settings)
            warned = clock.owe_warnings(connection, self._lead, now)
            due = clock.expired(connection, now)
        return timed, warned, due

    def _expire_research(self, row: Any) -> str | None:
        """Deny the research; its turn, if it has one (to tell it)."""
        workspace = str(row.detail.get("workspace") or "")
        try:
            with self.store.transaction() as db:
                research = expire_research(db, workspace, row.ref, row.timeout_ms or 0)
                return research.turn_id if research is not None else None
        except ResearchNotFound:
            return None

    def _next_in_ms(self) -> int | None:
        with self.store.engine.connect() as connection:
            at = clock.next_instant(connection, self._lead)
        if at is None:
            return None
        return max(int((at - datetime.now(UTC)).total_seconds() * 1000), 0)

    @KEEP_TIME_CONTRACT.defn_without_argument
    async def keep_time(self) -> ClockResult:
        timed, warned, due = await asyncio.to_thread(self._time_and_warn)
        result = ClockResult(timed=timed, warned=warned)
        for row in due:
            if row.kind == ApprovalKind.RESEARCH.value:
                turn_id = await asyncio.to_thread(self._expire_research, row)
                if turn_id:
                    await self._tell_turn(str(row.detail.get("workspace")), turn_id, row.ref)
            else:
                await asyncio.to_thread(
                    expire_decision,
                    self.store,
                    self.journal,
                    row.ref,
                    row.timeout_ms or 0,
                )
            result.expired += 1
        result.next_in_ms = await asyncio.to_thread(self._next_in_ms)
        return result

    async def _tell_turn(self, workspace: str, turn_id: str, research_id: str) -> None:
        """The turn waiting on the research hears it was denied (as from the route)."""
        workflow_id = turn_workflow_id(self.settings.instance, workspace, turn_id)
        handle = activity.client().get_workflow_handle(workflow_id)
        try:
            await handle.signal(
                RESEARCH_DECIDED, ResearchDecided(research_id=research_id, decision="deny")
            )
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            log.info("turn %s not told of its expired research: %s", turn_id, err)
