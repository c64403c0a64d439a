"""The register of every `workflow.patched` id: what it changed, since when, who replays it.

A patch keeps a workflow that started under older code replaying as it ran: the code
asks `workflow.patched(ID)`, which is true in a run that reached that point under this
code and false when replaying a history recorded before it, so the old branch runs
there. Each id is defined here once, and the workflows use these names.

An old branch can go once no open run predates the patch: when
`Patch.retirement_query(deployed)` (the date the first deployment with the patch
started) finds no execution in the Temporal Web UI or `temporal workflow list --query`.
Its call then becomes `workflow.deprecate_patch(ID)` for one more release, so that runs
which recorded the marker still replay, and then goes. No old branch has gone yet, so
no `deprecate_patch` is in use.

`old_branch_replayed_by` names the recorded histories (tests/workflows/histories) whose
replay takes the old branch: tests/workflows/test_patches.py replays each one and checks
that `patched` answered false there. A patch with none has no recorded history from
before it (it was added with or soon after its feature, before a history of that branch
was recorded); its old branch is checked by review only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

# A device-flow pause read the flow's state by a local activity before this. A local
# activity that timed out resolves as an ActivityError when it runs but, replayed from
# its marker, as a bare TimeoutError (the SDK's core wraps the timeout only in the first
# case): a worker restart after a hung read (a graceful shutdown stops answering the
# query the read waits on) failed the caller on replay. A regular activity's failure is
# an event in the history, so it is the same ActivityError run and replayed.
DEVICE_FLOW_READ_ACTIVITY = "device-flow-read-activity"
# The caller's cancel (a session's POST cancel, a prompt's deadline) must end a
# device-flow pause. Cancelling the caller's task is not enough: a cancel that lands on
# a read in flight comes back as an ActivityError caused by CancelledError, which the
# pause took for a failed read; and a cancel that lands in the activation where the read
# completed is swallowed by the SDK (the activity's result wins and the task is
# un-cancelled). Either way the pause waited on until the flow ended. So the caller also
# passes `cancelled`, a predicate the pause checks after each read and waits on between
# reads.
DEVICE_FLOW_PAUSE_CANCEL = "device-flow-pause-cancel"
# A standing agent's LLM call resolves its site's model chain and runs one activity per
# attempt (before: one model-step activity, retried by Temporal).
LLM_CHAIN = "llm-chain"
# An agent closed as STUCK is stopped: it settles the Windows lease of its holder
# `agent-{instanceId}` as the stop route does (agents closed before this did not).
STUCK_CLOSE_SETTLES_WINDOWS_LEASE = "stuck-close-settles-windows-lease"
# The tick of an answer approving an MCP call runs the call once before the episode
# (histories from before MCP tools had no such answers).
AGENT_APPROVED_MCP_CALL = "agent-approved-mcp-call"
# A tick the tenant's concurrency cap refused waits before it tries again.
AGENT_TICK_CONCURRENCY_CAP = "agent-tick-concurrency-cap"
# The STUCK guard counts the planner's turns only (a tick with no model call leaves it).
STUCK_GUARD_COUNTS_PLANNED_TURNS = "stuck-guard-counts-planned-turns"
# agentrt's coder's session is looked at every claim timeout: one that ended without
# reporting (terminated, failed) fails its task instead of holding it and its slot.
CODING_TASK_CODER_LIVENESS = "coding-task-coder-liveness"
# The settlement of a task agentrt's coder ran releases its session's Windows lease.
CODING_TASK_SETTLES_ITS_CODERS_LEASE = "coding-task-settles-its-coders-lease"
# Each model step of a session's prompt or an agent-tools turn walks the fallback chain
# of its site (Session:Default, Turn:Model), one activity per attempt (issue 11); before,
# one model-step activity retried by Temporal.
MODEL_STEPS_WALK_THE_FALLBACK_CHAIN = "model-steps-walk-the-fallback-chain"
# A session's windows_* tools run through its Windows lease (issue 12).
SESSION_WINDOWS_TOOLS = "session-windows-tools"
# The end of a prompt agentrt's coder runs a coding task with is reported to the task.
SESSION_CODING_TASK_REPORT = "session-coding-task-report"
# Closing a session settles the lease of holder `session-{id}` whoever took it (a REST
# client too), not only when the session's own tools used Windows.
SESSION_CLOSE_SETTLES_ITS_WINDOWS_LEASE = "session-close-settles-its-windows-lease"
# A session's mcp__<server>__<tool> calls run through the worker's MCP pool (issue 19).
SESSION_MCP_TOOLS = "session-mcp-tools"
# A busy session continues as new between two prompts when Temporal suggests it, carrying
# its queue (before: only when idle, so a session never idle grew one history unbounded).
SESSION_CONTINUES_AS_NEW_WHILE_BUSY = "session-continues-as-new-while-busy"
# A close that comes while the session waits for its handlers before continuing as new
# closes it (before: the new run did not carry it, and the session lived on after its
# client's 200).
SESSION_CLOSE_DURING_CONTINUE_AS_NEW = "session-close-during-continue-as-new"
# A coding task's prompt (agentrt's coder): its permission requests are decisions too.
SESSION_CODING_TASK_DECISIONS = "session-coding-task-decisions"
# Turns started before the decision signal carried the decision wait as they did then:
# any signal wakes them and they read the state through a gateway call.
DECISION_SIGNAL_CARRIES_THE_DECISION = "decision-signal-carries-the-decision"
# A finished turn settles the Windows lease of its holder `turn-{turnId}` (issue 12).
TURN_SETTLES_ITS_WINDOWS_LEASE = "turn-settles-its-windows-lease"
# `agent.authorization.required` is journaled by a regular activity, whose scheduling is
# recorded before it runs: a client that read the event finds the turn waiting (issue 18).
AUTHORIZATION_EVENT_AFTER_ITS_WAIT_IS_RECORDED = "authorization-event-after-its-wait-is-recorded"
# A Windows lease's own releases (its holder settled, it sat idle) take the verbs' lock:
# a `windows_release` sent meanwhile waits for them and answers `not_held`, instead of
# closing the session a second time and answering `evicted`.
LEASE_RELEASES_UNDER_THE_VERBS_LOCK = "lease-releases-under-the-verbs-lock"


@dataclass(frozen=True)
class Patch:
    """One patch id: the workflow types that ask for it, the date of the commit that
    added it, and the recorded histories whose replay takes its old branch."""

    id: str
    workflows: tuple[str, ...]
    introduced: date
    old_branch_replayed_by: tuple[str, ...] = ()

    def retirement_query(self, deployed: date) -> str:
        """The Temporal visibility query of the open runs that predate the patch.

        Args:
            deployed: the day the first deployment that has the patch started (runs
                started that day may predate it, so they count).

        Returns:
            A list filter; when it matches nothing, the old branch can be retired.
        """
        types = " OR ".join(f"WorkflowType = '{name}'" for name in self.workflows)
        day_after = date.fromordinal(deployed.toordinal() + 1)
        return f"ExecutionStatus = 'Running' AND StartTime < '{day_after}' AND ({types})"


PATCHES: tuple[Patch, ...] = (
    Patch(
        MODEL_STEPS_WALK_THE_FALLBACK_CHAIN,
        ("SessionWorkflow", "TurnWorkflow"),
        date(2026, 11, 30),
        ("session-before-model-chain", "turn-model-before-model-chain"),
    ),
    Patch(
        LLM_CHAIN,
        ("StandingAgentWorkflow",),
        date(2026, 11, 30),
        ("standing-agent-before-llm-chain",),
    ),
    Patch(
        DEVICE_FLOW_READ_ACTIVITY,
        ("SessionWorkflow", "StandingAgentWorkflow"),
        date(2026, 11, 30),
        (
            "session-device-flow-pause-before-read-activity",
            "standing-agent-device-flow-read-timed-out",
        ),
    ),
    Patch(
        DEVICE_FLOW_PAUSE_CANCEL,
        ("SessionWorkflow", "StandingAgentWorkflow"),
        date(2026, 12, 1),
        ("session-device-flow-cancel-swallowed", "standing-agent-device-flow-read-timed-out"),
    ),
    Patch(
        DECISION_SIGNAL_CARRIES_THE_DECISION,
        ("TurnWorkflow",),
        date(2026, 11, 30),
        ("turn-before-decision-signal",),
    ),
    Patch(
        AUTHORIZATION_EVENT_AFTER_ITS_WAIT_IS_RECORDED,
        ("TurnWorkflow",),
        date(2026, 12, 1),
        ("turn-before-durable-authorization-event",),
    ),
    Patch(
        TURN_SETTLES_ITS_WINDOWS_LEASE,
        ("TurnWorkflow",),
        date(2026, 11, 30),
        ("turn-before-decision-signal", "turn-model"),
    ),
    Patch(
        SESSION_CLOSE_SETTLES_ITS_WINDOWS_LEASE,
        ("SessionWorkflow",),
        date(2026, 11, 30),
        ("session", "session-before-model-chain"),
    ),
    Patch(SESSION_WINDOWS_TOOLS, ("SessionWorkflow",), date(2026, 11, 30)),
    Patch(SESSION_MCP_TOOLS, ("SessionWorkflow",), date(2026, 12, 2)),
    Patch(SESSION_CODING_TASK_REPORT, ("SessionWorkflow",), date(2026, 12, 2)),
    Patch(SESSION_CODING_TASK_DECISIONS, ("SessionWorkflow",), date(2026, 12, 2)),
    Patch(SESSION_CONTINUES_AS_NEW_WHILE_BUSY, ("SessionWorkflow",), date(2026, 12, 5)),
    Patch(SESSION_CLOSE_DURING_CONTINUE_AS_NEW, ("SessionWorkflow",), date(2026, 12, 6)),
    Patch(STUCK_CLOSE_SETTLES_WINDOWS_LEASE, ("StandingAgentWorkflow",), date(2026, 11, 30)),
    Patch(AGENT_APPROVED_MCP_CALL, ("StandingAgentWorkflow",), date(2026, 12, 2)),
    Patch(AGENT_TICK_CONCURRENCY_CAP, ("StandingAgentWorkflow",), date(2026, 12, 2)),
    Patch(STUCK_GUARD_COUNTS_PLANNED_TURNS, ("StandingAgentWorkflow",), date(2026, 12, 2)),
    Patch(CODING_TASK_CODER_LIVENESS, ("CodingTaskWorkflow",), date(2026, 12, 2)),
    Patch(CODING_TASK_SETTLES_ITS_CODERS_LEASE, ("CodingTaskWorkflow",), date(2026, 12, 2)),
    Patch(LEASE_RELEASES_UNDER_THE_VERBS_LOCK, ("WindowsLeaseWorkflow",), date(2026, 12, 2)),
)
