"""Research campaigns: an agent may only *propose* one; a human decides; then it runs.

States: prepared → authorized → admitted → running → completed, or prepared → denied.
`prepare_research` is all the agent-tools gateway can reach (through the tool
`research.prepare`): it records a proposal and nothing else — no grant, no
admission, no network contact. `decide_research` is called only by the research
flow's own HTTP route (`POST /api/v1/research/{research_id}/decision`), never by
a tool, so an agent has no path to authorize itself.

These functions write through the caller's unit of work and only flush: the caller
commits (`with store.transaction() as db:`). The gateway's `run_tool` runs in the
gateway's `store.run_transaction`, so a prepared research commits together with the
gateway's call record.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal, cast

from sqlmodel import Session, col, select

from runtime.approvals import ledger
from runtime.approvals.ledger import DEPLOYMENT, ApprovalKind, ApprovalRequest, ApprovalState
from runtime.failures import WireError
from runtime.investigation.models import InvestigationNode, Research, ResearchDecision
from runtime.investigation.views import ResearchDecisionPublic, ResearchPublic
from runtime.timestamps import aware_utc

RESEARCH_STATES = ("prepared", "authorized", "admitted", "running", "completed", "denied")
DECISIONS = ("approve", "deny")
MAX_SCOPE_NODES = 20
MAX_QUESTION_CHARS = 500
MAX_RATIONALE_CHARS = 1000
MAX_NOTE_CHARS = 2000

# The only moves a research can make; anything else is refused.
_TRANSITIONS: dict[str, tuple[str, ...]] = {
    "prepared": ("authorized", "denied"),
    "authorized": ("admitted",),
    "admitted": ("running",),
    "running": ("completed",),
}


class ResearchError(Exception):
    """Base of the research flow's refusals."""


class ResearchNotFound(ResearchError, LookupError):
    """No research with this id in this workspace (ids never leak across workspaces)."""

    def __init__(self, workspace: str, research_id: str) -> None:
        super().__init__(f"research {research_id!r} not found in workspace {workspace!r}")
        self.workspace = workspace
        self.research_id = research_id


class InvalidResearchTransition(ResearchError):
    """The research is not in a state that allows this move."""

    def __init__(self, research: Research, target: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"research {research.research_id!r} is {research.state}: cannot move to {target}"
        )
        self.research_id = research.research_id
        self.state = research.state
        self.target = target


class ResearchAlreadyDecided(InvalidResearchTransition):
    """A decision was asked for a research that is no longer `prepared`."""

    def __init__(self, research: Research, target: str) -> None:
        refusal = ResearchNoLongerPrepared(research_id=research.research_id, state=research.state)
        super().__init__(research, target, refusal.message())


# The decision route's answers to the refusals above (the exceptions stay: the gateway's
# tools, the activities and the expiry clock catch them as they are).


class UnknownResearch(WireError):
    """The decision route or a research read naming no research of the workspace: 404."""

    kind: Literal["research_not_found"] = "research_not_found"
    research_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No research with id "{self.research_id}"',
            "code": "research_not_found",
            "research_id": self.research_id,
        }


class ResearchNoLongerPrepared(WireError):
    """A decision on a research already decided (its `state` past `prepared`): 409."""

    kind: Literal["research_already_decided"] = "research_already_decided"
    research_id: str
    state: str

    @property
    def http_status(self) -> int:
        return 409

    def message(self) -> str:
        return f"research {self.research_id!r} was already decided (state {self.state})"

    def response_body(self) -> dict[str, Any]:
        return {
            "error": self.message(),
            "code": "research_already_decided",
            "research_id": self.research_id,
        }


class InvalidResearchDecision(WireError):
    """A decision `decide_research` refuses as malformed (`message` says why): 400."""

    kind: Literal["invalid_decision"] = "invalid_decision"
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": "invalid_decision"}


# The human decision route of a research (the research flow's, not the gateway's): the
# one spelling of it, for the router, the catalog, tool results and turn events.
RESEARCH_ROUTES_PREFIX = "/api/v1/research"
DECISION_ROUTE_TEMPLATE = RESEARCH_ROUTES_PREFIX + "/{research_id}/decision"


def decision_route(research_id: str) -> str:
    """The human decision route of this research."""
    return DECISION_ROUTE_TEMPLATE.format(research_id=research_id)


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(ts: datetime) -> str:
    return aware_utc(ts).isoformat()


def normalize_scope(session: Session, workspace: str, scope: dict[str, Any]) -> dict[str, Any]:
    """Check a scope against the workspace: 1..20 existing node ids, depth 1..3 (default 1).

    Raises:
        ValueError: the scope is malformed or names nodes the workspace lacks.
    """
    node_ids = scope.get("node_ids")
    if not isinstance(node_ids, list) or not all(isinstance(n, str) and n for n in node_ids):
        raise ValueError("scope.node_ids must be a list of node ids")
    unique = list(dict.fromkeys(node_ids))
    if not 1 <= len(unique) <= MAX_SCOPE_NODES:
        raise ValueError(f"scope.node_ids must name 1 to {MAX_SCOPE_NODES} nodes")
    depth = scope.get("depth", 1)
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= 3:
        raise ValueError("scope.depth must be an integer from 1 to 3")
    extra = set(scope) - {"node_ids", "depth"}
    if extra:
        raise ValueError(f"scope has unknown keys: {', '.join(sorted(extra))}")
    found = set(
        session.exec(
            select(InvestigationNode.node_id).where(
                InvestigationNode.workspace == workspace, col(InvestigationNode.node_id).in_(unique)
            )
        ).all()
    )
    missing = [n for n in unique if n not in found]
    if missing:
        raise ValueError(
            f"scope names nodes not found in workspace {workspace!r}: {', '.join(missing[:5])}"
        )
    return {"node_ids": unique, "depth": depth}


def _load(session: Session, workspace: str, research_id: str, *, lock: bool) -> Research:
    statement = select(Research).where(
        Research.workspace == workspace, Research.research_id == research_id
    )
    if lock:
        # Serializes concurrent decisions on PostgreSQL (SQLite already holds its write lock).
        statement = statement.with_for_update()
    research = session.exec(statement.execution_options(populate_existing=True)).first()
    if research is None:
        raise ResearchNotFound(workspace, research_id)
    return research


def _move(research: Research, target: str, now: datetime) -> None:
    if target not in _TRANSITIONS.get(research.state, ()):
        raise InvalidResearchTransition(research, target)
    research.state = target
    research.updated_at = now


def prepare_research(
    session: Session,
    workspace: str,
    question: str,
    scope: dict[str, Any],
    rationale: str | None = None,
    turn_id: str | None = None,
) -> Research:
    """Record a proposed research in state `prepared`: no grant, no admission, no network.

    A retry of the same proposal from the same turn (same question and scope)
    returns the research already recorded, so a retried activity proposes once.

    Raises:
        ValueError: empty or too long question/rationale, or a bad scope.
    """
    question = question.strip()
    if not question or len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"question must have 1 to {MAX_QUESTION_CHARS} characters")
    if rationale is not None and len(rationale) > MAX_RATIONALE_CHARS:
        raise ValueError(f"rationale must have at most {MAX_RATIONALE_CHARS} characters")
    normalized = normalize_scope(session, workspace, scope)
    if turn_id is not None:
        previous = session.exec(
            select(Research).where(Research.workspace == workspace, Research.turn_id == turn_id)
        ).all()
        for research in previous:
            if research.question == question and research.scope == normalized:
                return research
    now = _now()
    research = Research(
        research_id=str(uuid.uuid4()),
        workspace=workspace,
        question=question,
        scope=normalized,
        rationale=rationale,
        turn_id=turn_id,
        state="prepared",
        created_at=now,
        updated_at=now,
    )
    session.add(research)
    ledger.open_approval(session.connection(), _approval_request(research), now)
    session.flush()
    return research


def research_approval(research_id: str) -> str:
    return ledger.approval_id(ApprovalKind.RESEARCH, research_id)


def _approval_request(research: Research) -> ApprovalRequest:
    """A prepared research waits for a human's authorization (spec 000): its approval."""
    subject = (
        f"turn/{research.workspace}/{research.turn_id}"
        if research.turn_id
        else f"research/{research.workspace}/{research.research_id}"
    )
    return ApprovalRequest(
        kind=ApprovalKind.RESEARCH,
        ref=research.research_id,
        tenant=DEPLOYMENT,
        subject=subject,
        asked_by=subject,
        title=f"Authorize research: {research.question}",
        link=decision_route(research.research_id),
        detail={
            "workspace": research.workspace,
            "question": research.question,
            "scope": research.scope,
            "rationale": research.rationale,
        },
    )


def decide_research(
    session: Session,
    workspace: str,
    research_id: str,
    decision: str,
    decided_by: str,
    note: str | None = None,
    *,
    answered_by: str | None = None,
) -> Research:
    """Persist the human decision: approve → the grant, state admitted; deny → state denied.

    `decided_by` is what the body declares; `answered_by` the identity the route verified
    (a token's label, `loopback`), recorded on the research's approval.

    An approval walks prepared → authorized (the grant is recorded) → admitted
    (the campaign is accepted to run) in one transaction.

    Raises:
        ValueError: decision not in {"approve", "deny"}, empty decided_by, note too long.
        ResearchNotFound: unknown id, or a research of another workspace.
        ResearchAlreadyDecided: the research is no longer `prepared`.
    """
    if decision not in DECISIONS:
        raise ValueError(f"decision must be 'approve' or 'deny', not {decision!r}")
    if not isinstance(decided_by, str) or not decided_by.strip():
        raise ValueError("decided_by must name who decides")
    if len(decided_by) > 200:
        raise ValueError("decided_by must have at most 200 characters")
    if note is not None and len(note) > MAX_NOTE_CHARS:
        raise ValueError(f"note must have at most {MAX_NOTE_CHARS} characters")
    research = _load(session, workspace, research_id, lock=True)
    if research.state != "prepared":
        raise ResearchAlreadyDecided(research, "authorized" if decision == "approve" else "denied")
    now = _now()
    session.add(
        ResearchDecision(
            research_id=research.research_id,
            workspace=workspace,
            decision=decision,
            decided_by=decided_by.strip(),
            decided_at=now,
            scope=dict(research.scope),
            note=note,
        )
    )
    if decision == "approve":
        _move(research, "authorized", now)
        _move(research, "admitted", now)
    else:
        _move(research, "denied", now)
    session.add(research)
    ledger.settle(
        session.connection(),
        research_approval(research.research_id),
        ApprovalState.APPROVED if decision == "approve" else ApprovalState.DENIED,
        now=now,
        reason="answered",
        answer=decision,
        answered_by=answered_by,
        answered_client=decided_by.strip(),
    )
    session.flush()
    return research


def expire_research(
    session: Session, workspace: str, research_id: str, timeout_ms: int
) -> Research | None:
    """A prepared research nobody authorized within its timeout (issue 22): denied by
    `agentrt`, its approval `expired`. None when it was decided meanwhile."""
    research = _load(session, workspace, research_id, lock=True)
    if research.state != "prepared":
        return None
    reason = f"no answer within {timeout_ms} ms"
    ledger.settle(
        session.connection(),
        research_approval(research_id),
        ApprovalState.EXPIRED,
        now=_now(),
        reason=reason,
        answer="deny",
        answered_by="agentrt",
    )
    return decide_research(session, workspace, research_id, "deny", "agentrt", f"expired: {reason}")


def start_research(session: Session, workspace: str, research_id: str) -> Research:
    """admitted → running. Raises ResearchNotFound or InvalidResearchTransition."""
    research = _load(session, workspace, research_id, lock=True)
    _move(research, "running", _now())
    session.add(research)
    session.flush()
    return research


def complete_research(session: Session, workspace: str, research_id: str) -> Research:
    """running → completed. Raises ResearchNotFound or InvalidResearchTransition."""
    research = _load(session, workspace, research_id, lock=True)
    _move(research, "completed", _now())
    session.add(research)
    session.flush()
    return research


def research_state(session: Session, workspace: str, research_id: str) -> ResearchPublic:
    """The research as its wire view: state, question, scope, timestamps, and the decision
    if any (the research routes return it; the `research.get_state` tool dumps it).

    Raises:
        ResearchNotFound: unknown id, or a research of another workspace.
    """
    research = _load(session, workspace, research_id, lock=False)
    decision = session.exec(
        select(ResearchDecision).where(ResearchDecision.research_id == research.research_id)
    ).first()
    return ResearchPublic(
        research_id=research.research_id,
        workspace=research.workspace,
        state=research.state,
        question=research.question,
        scope=research.scope,
        rationale=research.rationale,
        turn_id=research.turn_id,
        created_at=_iso(research.created_at),
        updated_at=_iso(research.updated_at),
        decision_route=decision_route(research.research_id),
        decision=None
        if decision is None
        else ResearchDecisionPublic(
            # One of DECISIONS (decide_research checks it); the model checks it again.
            decision=cast(Literal["approve", "deny"], decision.decision),
            decided_by=decision.decided_by,
            decided_at=_iso(decision.decided_at),
            scope=decision.scope,
            note=decision.note,
        ),
    )
