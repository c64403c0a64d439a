"""The activities of CodingTaskWorkflow: read its timers, apply an expiry, wake the
proposing agent after a settlement, start agentrt's own coder and settle its task when
its prompt ends (runtime/coding_tasks/store.py does the writes).

agentrt's coder works in a directory of its own under the workspace root,
`.agentrt-tasks/<taskId>` (a git worktree, detached at HEAD, when the root is a git
repository), so two tasks never write into each other; its session is an agentrt
session there, with the task's approval mode; at most `AGENTRT_CODERS_PER_TENANT` run at
once per tenant (the others wait for a slot)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.coding_tasks.coder_session import CoderSessionEnded, submit_task_prompt
from runtime.coding_tasks import own_coder
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import (
    HELD,
    OWN_CODER,
    SESSION_ENDED,
    SETTLED,
    TASKS_DIR,
    CoderAliveInput,
    CodingTaskActivityContracts,
    ExpireInput,
    ExpireResult,
    OwnCoderDone,
    SettleInput,
    SpawnResult,
    TaskState,
    TaskTimers,
    task_dir,
    task_session_id,
)
from runtime.sessions.contracts import CodingTaskRef, session_workflow_id
from runtime.settings import Settings
from runtime.standing_agents.contracts import agent_workflow_id
from runtime.standing_agents.workflow_contracts import WAKE_SIGNAL as AGENT_WAKE
from runtime.store import Store

log = logging.getLogger(__name__)


class CodingTaskActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @CodingTaskActivityContracts.TIMERS.defn
    async def timers(self, request: ExpireInput) -> TaskTimers:
        # The workflow's own claim timeout (the one its expiry applies), never this
        # worker's setting: the two never disagree into a loop with no wait.
        timeout = timedelta(milliseconds=request.claim_timeout_ms)
        return await asyncio.to_thread(
            tasks.timers, self.store, request.tenant, request.task_id, timeout
        )

    @CodingTaskActivityContracts.EXPIRE.defn
    async def expire(self, request: ExpireInput) -> ExpireResult:
        row, lost = await asyncio.to_thread(
            tasks.expire,
            self.store,
            request.tenant,
            request.task_id,
            timedelta(milliseconds=request.claim_timeout_ms),
            request.now,
        )
        return ExpireResult(lost_holder=lost, settled=TaskState(row.state) in SETTLED)

    @CodingTaskActivityContracts.SPAWN_CODER.defn
    async def spawn_coder(self, request: SettleInput) -> SpawnResult:
        try:
            row = await asyncio.to_thread(tasks.get, self.store, request.tenant, request.task_id)
        except ApplicationError:
            return SpawnResult()  # gone: nothing to run
        if row.holder != OWN_CODER or TaskState(row.state) not in HELD:
            return SpawnResult()
        session_id = task_session_id(row.task_id)
        reserved = await asyncio.to_thread(
            own_coder.reserve_coder,
            self.store,
            row.tenant,
            row.task_id,
            session_id,
            self.settings.coders_per_tenant,
        )
        if reserved is None:
            return SpawnResult(waiting=True)
        workspace = await task_workspace(Path(self.settings.workspace_cwd), row.task_id)
        try:
            await submit_task_prompt(
                self.store,
                self.settings,
                row.task_id,
                row.prompt,
                workspace=str(workspace),
                approval_mode=row.approval_mode,
                coding_task=CodingTaskRef(tenant=row.tenant, task_id=row.task_id),
                preset_id=row.preset_id,
                model=row.model,
            )
        except CoderSessionEnded:
            return SpawnResult(session_id=session_id, session_ended=True)
        return SpawnResult(session_id=session_id)

    @CodingTaskActivityContracts.COMPLETE_OWN.defn
    async def complete_own(self, request: OwnCoderDone) -> None:
        """Settle the task with its coder's outcome (a task settled meanwhile stays so)."""
        report = request.report
        outcome = TaskState.SUCCEEDED if report.stop_reason == "end_turn" else TaskState.FAILED
        if report.stop_reason == SESSION_ENDED:
            summary = "agentrt's coder's session ended before its prompt did"
        else:
            summary = f"agentrt's coder ended its prompt: {report.stop_reason}"
        artifact = {
            "kind": "session",
            "ref": f"session/{report.session_id}",
            "description": "agentrt's coder's session: its transcript and events",
        }
        try:
            await asyncio.to_thread(
                tasks.complete,
                self.store,
                request.tenant,
                request.task_id,
                OWN_CODER,
                outcome,
                datetime.now(UTC),
                summary,
                [artifact],
            )
        except ApplicationError:
            log.info("coding task %s was settled before its coder ended", request.task_id)

    @CodingTaskActivityContracts.CODER_ALIVE.defn
    async def coder_alive(self, request: CoderAliveInput) -> bool:
        """Whether agentrt's coder's session still runs (its latest run: a session that
        continued as new is alive). A session that ended without reporting its prompt's
        end (terminated, failed, timed out) never will: its task must not stay held."""
        handle = activity.client().get_workflow_handle(session_workflow_id(request.session_id))
        try:
            description = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return description.status == WorkflowExecutionStatus.RUNNING

    @CodingTaskActivityContracts.WAKE_AGENT.defn
    async def wake_agent(self, request: SettleInput) -> None:
        """Signal the proposing agent's workflow: its `DependencyCompleted` is queued. An
        agent whose workflow is not running is woken by the API's sweeper (due events)."""
        target = await asyncio.to_thread(tasks.proposing_agent, self.store, request.task_id)
        if target is None:
            return
        handle = activity.client().get_workflow_handle(agent_workflow_id(*target))
        try:
            await handle.signal(AGENT_WAKE)
        except RPCError:
            log.info("agent %s is not running; the sweeper wakes it", target[1])


async def task_workspace(root: Path, task_id: str) -> Path:
    """The task's own directory under `root`: a git worktree when `root` is a repository."""
    target = Path(task_dir(str(root), task_id))
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if (await _git(root, "rev-parse", "--is-inside-work-tree"))[0] == 0:
        await _exclude_tasks_dir(root)
        if (await _git(root, "worktree", "add", "--detach", str(target), "HEAD"))[0] == 0:
            return target
        log.warning("git worktree add failed for task %s; a plain directory instead", task_id)
    target.mkdir(exist_ok=True)
    return target


async def _exclude_tasks_dir(root: Path) -> None:
    """The repository's own `git status` does not list the tasks' directory: a line in
    its local, unversioned exclude file (`info/exclude`), written once."""
    code, out = await _git(root, "rev-parse", "--git-path", "info/exclude")
    if code != 0 or not out.strip():
        return
    exclude = Path(out.strip())
    exclude = exclude if exclude.is_absolute() else root / exclude
    line = f"/{TASKS_DIR}/" if await _at_top(root) else f"{TASKS_DIR}/"
    try:
        current = exclude.read_text() if exclude.exists() else ""
        if line not in current.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a") as handle:
                handle.write(("" if current.endswith("\n") or not current else "\n") + line + "\n")
    except OSError as err:
        log.warning("could not exclude %s in %s: %s", TASKS_DIR, exclude, err)


async def _at_top(root: Path) -> bool:
    code, prefix = await _git(root, "rev-parse", "--show-prefix")
    return code == 0 and not prefix.strip()


async def _git(root: Path, *args: str) -> tuple[int, str]:
    """Run git in `root`: its exit code and its output (127: no git on this machine)."""
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            str(root),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return 127, ""
    out, _ = await process.communicate()
    return int(process.returncode or 0), out.decode(errors="replace")
