"""The governed tools of standing agents (spec §3.8): their effects.

Every tool is real over agentrt's own data: memory is the agent's ledger and
messages, telemetry is agentrt's health (ops digest), knowledge and research read
the agent-tools gateway's investigation store, the workspace and the artifacts
agents recorded. Every write carries the tool call's operation id in a unique
`op_id` column, so a retried activity finds its row instead of writing a second.

What the model is shown of each tool, and the check of its arguments, are
runtime/standing_agents/tool_catalog.py's; the handlers here are their effects: the reads
and the artifacts here, the control verbs in control_tools.py, and what every tool works
with (its context, its refusals, `insert_once`) in tool_context.py.

`soa_propose_task` needs Temporal (it submits a session prompt): `propose_task`
here records the task row; the activity starts the session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlmodel import col, or_, select

from runtime.investigation.models import InvestigationClaim, InvestigationEvidence, Research
from runtime.standing_agents import catalog
from runtime.standing_agents.compliance_corpus import WORKSPACE_PROJECT
from runtime.standing_agents.contracts import (
    AttentionStatus,
)
from runtime.standing_agents.control_tools import (
    phase_blocked,
    phase_complete,
    propose_decision,
    propose_mode_change,
    send_message,
    workset_complete,
)
from runtime.standing_agents.episode import generation_start
from runtime.standing_agents.models import (
    AgentArtifact,
    AgentLedgerTurn,
    AgentMessage,
    AttentionRequest,
)
from runtime.standing_agents.ops_digest import probe
from runtime.standing_agents.tool_catalog import DEFAULT_LIMIT, MAX_LIMIT
from runtime.standing_agents.tool_context import (
    ToolContext,
    ToolInputError,
    insert_once,
    op_uuid,
    text_argument,
)
from runtime.timestamps import iso_ms
from runtime.workspace.fence import Fence
from runtime.workspace.file_errors import FileError

CODE_SEARCH_MAX_FILES = 5000
CODE_SEARCH_MAX_BYTES = 512 * 1024


def _limit(arguments: dict[str, Any]) -> int:
    value = arguments.get("limit", DEFAULT_LIMIT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolInputError("limit must be a positive integer")
    return min(value, MAX_LIMIT)


# --- read-only ---------------------------------------------------------------------------


def query_memory(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    kind = arguments.get("kind", "all")
    if kind not in ("turns", "messages", "all"):
        raise ToolInputError("kind must be turns, messages or all")
    contains = str(arguments.get("contains") or "").lower()
    limit = _limit(arguments)
    out: dict[str, Any] = {}
    with ctx.store.session() as db:
        if kind in ("turns", "all"):
            turns = db.exec(
                select(AgentLedgerTurn)
                .where(
                    col(AgentLedgerTurn.instance_id) == ctx.instance_id,
                    col(AgentLedgerTurn.generation) == ctx.generation,
                )
                .order_by(col(AgentLedgerTurn.seq).desc())
                .limit(200)
            ).all()
            out["turns"] = [
                {
                    "seq": t.seq,
                    "eventKind": t.event_kind,
                    "decisionKind": t.decision_kind,
                    "summary": t.reasoning_summary,
                    "createdAt": iso_ms(t.created_at),
                }
                for t in turns
                if not contains or contains in f"{t.event_payload} {t.reasoning_summary}".lower()
            ][:limit]
        if kind in ("messages", "all"):
            # The current generation's only: a reset clears the agent's memory.
            since = generation_start(db, ctx.instance_id, ctx.generation)
            messages = db.exec(
                select(AgentMessage)
                .where(
                    col(AgentMessage.instance_id) == ctx.instance_id,
                    col(AgentMessage.created_at) >= since,
                )
                .order_by(col(AgentMessage.created_at).desc())
                .limit(200)
            ).all()
            out["messages"] = [
                {"direction": m.direction, "text": m.text[:500], "createdAt": iso_ms(m.created_at)}
                for m in messages
                if not contains or contains in m.text.lower()
            ][:limit]
    return out


def query_telemetry(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return probe(ctx.store, ctx.tenant, ctx.now)


def _artifacts(
    ctx: ToolContext, kinds: list[str], needle: str, limit: int, project: str | None = None
) -> list[dict[str, Any]]:
    with ctx.store.session() as db:
        rows = db.exec(
            select(AgentArtifact)
            .where(col(AgentArtifact.tenant) == ctx.tenant, col(AgentArtifact.kind).in_(kinds))
            .order_by(col(AgentArtifact.created_at).desc())
            .limit(500)
        ).all()
    found = [
        {"artifactId": r.artifact_id, "kind": r.kind, "title": r.title, "body": r.body}
        for r in rows
        if (not needle or needle in f"{r.title} {r.body}".lower())
        and (project is None or _project_of(r.body) == project)
    ]
    return found[:limit]


def _project_of(body: dict[str, Any]) -> str:
    """The compliance project an artifact belongs to (the workspace's when it names none)."""
    return str(body.get("project") or WORKSPACE_PROJECT)


def _project(arguments: dict[str, Any]) -> str | None:
    project = arguments.get("project")
    if project is not None and not isinstance(project, str):
        raise ToolInputError("project must be a string")
    return project or None


def knowledge_query(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    needle = text_argument(arguments, "query").lower()
    limit = _limit(arguments)
    pattern = f"%{needle}%"
    with ctx.store.session() as db:
        evidence = db.exec(
            select(InvestigationEvidence)
            .where(
                col(InvestigationEvidence.workspace) == ctx.investigation_workspace,
                or_(
                    col(InvestigationEvidence.title).ilike(pattern),
                    col(InvestigationEvidence.summary).ilike(pattern),
                    col(InvestigationEvidence.excerpt).ilike(pattern),
                ),
            )
            .limit(limit)
        ).all()
        claims = db.exec(
            select(InvestigationClaim)
            .where(
                col(InvestigationClaim.workspace) == ctx.investigation_workspace,
                col(InvestigationClaim.text).ilike(pattern),
            )
            .limit(limit)
        ).all()
    return {
        "evidence": [
            {"evidenceId": e.evidence_id, "title": e.title, "summary": e.summary[:500]}
            for e in evidence
        ],
        "claims": [{"claimId": c.claim_id, "text": c.text[:500]} for c in claims],
        "knowledge": _artifacts(ctx, ["knowledge"], needle, limit, _project(arguments)),
    }


def code_search(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """The first line holding `query` in each workspace file, walked through the workspace
    fence (runtime.workspace.fence): never through a symlink out or into the data dir,
    regular files only (a FIFO is never opened), at most 512 KiB each."""
    needle = text_argument(arguments, "query")
    limit = _limit(arguments)
    if ctx.workspace_root is None:
        return {"matches": [], "note": "no workspace is configured"}
    try:
        fence = Fence.of(ctx.workspace_root, ctx.data_dir)
    except FileError:
        return {"matches": [], "note": "no workspace is configured"}
    matches: list[dict[str, Any]] = []
    scanned = 0
    pending = [fence.root]
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(fence.entries(directory), key=lambda e: e.name)
        except FileError:
            continue
        subdirs: list[Path] = []
        for entry in entries:
            path = directory / entry.name
            if entry.kind == "directory":
                # Hidden directories (.git, .data, .venv) hold no code worth showing.
                if not entry.name.startswith(".") and entry.name != "node_modules":
                    if fence.contains(path):
                        subdirs.append(path)
                continue
            if entry.kind not in ("file", "symlink"):
                continue  # a FIFO, socket or device: never opened
            scanned += 1
            if scanned > CODE_SEARCH_MAX_FILES or len(matches) >= limit:
                return {"matches": matches, "truncated": True}
            relative = fence.relative(path)
            try:
                real = fence.resolve(relative) if entry.kind == "symlink" else path
                text = fence.read(real, limit=CODE_SEARCH_MAX_BYTES).decode("utf-8")
            except (FileError, UnicodeDecodeError):
                continue  # outside, in the data dir, not regular, too large, not text
            for number, line in enumerate(text.splitlines(), 1):
                if needle in line:
                    matches.append({"path": relative, "line": number, "text": line.strip()[:200]})
                    break
        pending.extend(reversed(subdirs))
    return {"matches": matches, "truncated": False}


def research_get(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    limit = _limit(arguments)
    wanted = arguments.get("researchId")
    recorded = _artifacts(ctx, ["research"], "", MAX_LIMIT)
    with ctx.store.session() as db:
        query = select(Research).where(col(Research.workspace) == ctx.investigation_workspace)
        if isinstance(wanted, str) and wanted:
            query = query.where(col(Research.research_id) == wanted)
        gateway = db.exec(query.order_by(col(Research.created_at).desc()).limit(limit)).all()
    if isinstance(wanted, str) and wanted:
        recorded = [r for r in recorded if r["artifactId"] == wanted]
    return {
        "recorded": recorded[:limit],
        "gateway": [
            {"researchId": r.research_id, "question": r.question, "state": r.state} for r in gateway
        ],
    }


def query_posture(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    with ctx.store.session() as db:
        artifacts = db.exec(
            select(AgentArtifact.kind).where(col(AgentArtifact.tenant) == ctx.tenant)
        ).all()
        open_decisions = db.exec(
            select(AttentionRequest.decision_id).where(
                col(AttentionRequest.tenant) == ctx.tenant,
                col(AttentionRequest.status) == AttentionStatus.OPEN.value,
            )
        ).all()
    return {
        "dossiers": sum(1 for k in artifacts if k == "dossier"),
        "translations": sum(1 for k in artifacts if k == "dossier_translation"),
        "knowledgeItems": sum(1 for k in artifacts if k == "knowledge"),
        "openDecisions": len(open_decisions),
    }


def dossier_list(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    kinds = ["dossier", "dossier_translation"]
    return {"dossiers": _artifacts(ctx, kinds, "", _limit(arguments), _project(arguments))}


# --- artifacts ---------------------------------------------------------------------------


def _record(ctx: ToolContext, kind: str, title: str, body: dict[str, Any]) -> dict[str, Any]:
    row = AgentArtifact(
        artifact_id=op_uuid(ctx.op_id),
        tenant=ctx.tenant,
        instance_id=ctx.instance_id,
        kind=kind,
        title=title[:500],
        body=body,
        op_id=ctx.op_id,
        created_at=ctx.now,
    )
    stored = insert_once(ctx, row, AgentArtifact)
    return {"artifactId": stored.artifact_id, "kind": kind}


def dossier_record(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"content": text_argument(arguments, "content"), "chapter": arguments.get("chapter")}
    if (project := _project(arguments)) is not None:
        body["project"] = project
    return _record(ctx, "dossier", text_argument(arguments, "title"), body)


def dossier_translate(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    dossier = text_argument(arguments, "dossierId")
    language = text_argument(arguments, "language")
    body = {
        "dossierId": dossier,
        "language": language,
        "content": text_argument(arguments, "content"),
    }
    return _record(ctx, "dossier_translation", f"{dossier} ({language})", body)


def knowledge_ingest(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    tags = arguments.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ToolInputError("tags must be a list of strings")
    body: dict[str, Any] = {"content": text_argument(arguments, "content"), "tags": tags}
    if (project := _project(arguments)) is not None:
        body["project"] = project
    return _record(ctx, "knowledge", text_argument(arguments, "title"), body)


def research_create(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"question": text_argument(arguments, "question"), "notes": arguments.get("notes")}
    return _record(ctx, "research", text_argument(arguments, "title"), body)


Handler = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]

HANDLERS: dict[str, Handler] = {
    "agent_query_memory": query_memory,
    "soa_query_telemetry": query_telemetry,
    "intelligence_knowledge_query": knowledge_query,
    "compliance_knowledge_query": knowledge_query,
    "intelligence_code_search": code_search,
    "orchestrator_research_get": research_get,
    "compliance_query_posture": query_posture,
    "compliance_dossier_list": dossier_list,
    "compliance_dossier_record": dossier_record,
    "compliance_dossier_translate": dossier_translate,
    "compliance_knowledge_ingest": knowledge_ingest,
    "orchestrator_research_create": research_create,
    "soa_send_message": send_message,
    "soa_propose_decision": propose_decision,
    "soa_propose_mode_change": propose_mode_change,
    "agent_workset_complete": workset_complete,
    catalog.PHASE_COMPLETE: phase_complete,
    catalog.PHASE_BLOCKED: phase_blocked,
}
