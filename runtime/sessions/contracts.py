"""Payloads of SessionWorkflow's messages and activities (one typed input/output each)."""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, Field
from temporalio.common import SearchAttributePair

from runtime.activity_contract import ActivityContract
from runtime.llm.contracts import AttemptReport, AttemptSpec, ModelBinding, ToolCall
from runtime.mcp.contracts import McpBinding
from runtime.search_attributes import starting

# The longest prompt deadline (`deadlineMs`, `--prompt-deadline-ms`): 2^31-1 ms, about
# 24.8 days, the longest delay JavaScript's setTimeout honours (the reference daemon's bound).
MAX_DEADLINE_MS = 2**31 - 1


class SessionActivity(StrEnum):
    """The session activities, by name: activities/sessions/session.py implements them, and
    SessionWorkflow calls them by these names (so the API, which imports the workflow,
    never imports an activity)."""

    OPEN_PROMPT = "session.open_prompt"
    MODEL_STEP = "session.model_step"
    PREVIEW_TOOL = "session.preview_tool"
    RUN_TOOL = "session.run_tool"
    RUN_EFFECT = "session.run_effect"
    PERSIST_APPROVAL_MODE = "session.persist_approval_mode"
    RECAP = "session.recap"
    # A windows_* tool of the session agent, through the session's Windows lease.
    WINDOWS_TOOL = "session.windows_tool"
    # An mcp__<server>__<tool> call: a read-only tool (local activity), or any other
    # (regular activity, under the call's operation id): activities/mcp/calls.py.
    MCP_READ = "session.mcp_read"
    MCP_CALL = "session.mcp_call"
    # agentrt's coder (a coding task's prompt) asks a permission: a decision on the
    # tenant's queue too, whose answer votes (api/standing_agents/decisions.py).
    TASK_DECISION = "session.task_decision"


StopReason = Literal["end_turn", "cancelled", "max_tokens", "error", "length", "refusal"]


class SessionInput(BaseModel):
    """SessionWorkflow's input: the session's configuration (the daemon's settings when it
    was created, its model and approval mode), and what a run hands the next one across
    continue-as-new (the queue, the event counter, the tools allowed always)."""

    session_id: str
    workspace_cwd: str
    policy: str = "first-responder"
    permission_timeout_ms: int = 300_000
    max_pending_prompts: int = 5
    event_retention: int = 8000
    shell_enabled: bool = False
    model_id: str = "scripted"
    model_provider: str = "scripted"
    # The binding `model_id` was chosen under (POST /session/:id/model); None: not
    # chosen, or chosen before bindings were recorded.
    model_binding: ModelBinding | None = None
    approval_mode: str = "default"
    # agentrt's coder of a coding task with a `presetId`: that preset, not the site's.
    preset_id: str | None = None
    max_steps: int = 16
    # Carried across continue-as-new.
    event_counter: int = 0
    always_allowed: list[str] = Field(default_factory=list)
    queue: list[PromptItem] = Field(default_factory=list)
    # A windows_* tool ran: the session's lease is settled when it closes.
    windows_used: bool = False


class PromptItem(BaseModel):
    """A prompt in the session's FIFO. Its text is in the store (`runtime.sessions.prompts`):
    history carries only the id and a bounded preview."""

    prompt_id: str
    preview: str
    originator: str | None = None
    queued_at_ms: int = 0
    deadline_ms: int | None = None
    # Waited behind another prompt (pending_prompt_* events).
    queued: bool = False
    # agentrt's own coder runs a coding task with this prompt: its end settles the task
    # (the session signals `coder_finished` to `coding-task/{tenant}/{taskId}`).
    coding_task: CodingTaskRef | None = None


class CodingTaskRef(BaseModel):
    """A coding task, by tenant and id."""

    tenant: str
    task_id: str


class TaskDecisionInput(BaseModel):
    """A permission request of agentrt's coder, raised on its tenant's decision queue."""

    task: CodingTaskRef
    session_id: str
    request_id: str
    title: str
    options: list[str]


class WorkerBound(BaseModel):
    """An update the API waits for only so long: its validator refuses it after
    `accept_before_ms` (epoch ms), so an update the API gave up on (and answered 503)
    is never applied later, when a stalled or restarted worker gets to it."""

    accept_before_ms: int | None = None


class SubmitPrompt(WorkerBound):
    """The update `submit_prompt`: queue a prompt (run at once when none is active)."""

    item: PromptItem
    # The provider of the daemon that sent it: the session follows the deployment's
    # provider (runtime.llm.active); None in updates recorded before this field existed.
    model_provider: str | None = None


class SubmitResult(BaseModel):
    """`submit_prompt`'s answer: the prompt's place in the session (0: it runs now; n: n
    prompts go before it)."""

    position: int


class CancelRequest(BaseModel):
    """The signal `cancel`: cancel the active prompt (queued prompts still run), or take
    one queued prompt out of the queue."""

    originator: str | None = None
    # Only this prompt (a blocking caller that went away); None: the active prompt.
    prompt_id: str | None = None


class VoteRequest(WorkerBound):
    """The update `vote`: a client's answer to the permission request `request_id`,
    mediated by the session's policy (`is_local` for local-only, `eligible_voters` for a
    consensus' quorum)."""

    request_id: str
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None
    client_id: str | None = None
    is_local: bool = True
    eligible_voters: int = 1


class VoteResult(BaseModel):
    """`vote`'s answer: the request was resolved, or the vote was recorded below a
    consensus' quorum (`partial`)."""

    kind: Literal["resolved", "partial"]


class SetModeRequest(WorkerBound):
    """The update `set_approval_mode`: switch the session's approval mode."""

    mode: str
    originator: str | None = None
    # Also write `tools.approvalMode` to the workspace settings (new sessions start with it).
    persist: bool = False


class ModeSwitchResult(BaseModel):
    """`set_approval_mode`'s answer: the mode before and after, and whether it was persisted."""

    previous: str
    mode: str
    persisted: bool


class PersistApprovalModeInput(BaseModel):
    """PERSIST_APPROVAL_MODE's argument: the mode to write as the workspace's
    `tools.approvalMode`."""

    workspace_cwd: str
    mode: str


class RecapRequest(WorkerBound):
    """The update `recap`: a one-sentence recap of the session, from the model."""


class RecapInput(BaseModel):
    """RECAP's argument: the session to recap and the model to ask."""

    session_id: str
    model_id: str
    model_binding: ModelBinding | None = None
    # The session's tenant (its workspace), recorded on the recap's attempt row.
    tenant: str | None = None


class RecapResult(BaseModel):
    """RECAP's result, and the `recap` update's answer: its `recap` is None when none was made."""

    recap: str | None = None


class SetModelRequest(WorkerBound):
    """The update `set_model`: switch the session's model."""

    model_id: str
    originator: str | None = None
    # As SubmitPrompt.model_provider.
    model_provider: str | None = None
    # What Session:Default resolves to now (the API reads it): the choice is recorded
    # with it. None: an update sent before bindings were recorded.
    binding: ModelBinding | None = None
    # That binding's primary provider is of kind scripted: it serves only 'scripted'.
    binding_scripted: bool = False


class ModelSwitchResult(BaseModel):
    """`set_model`'s answer: `ok` False, with the `error`, when the model is not
    available to the session (nothing switched)."""

    ok: bool
    model_id: str
    error: str | None = None


class CloseRequest(WorkerBound):
    """The update `close`: cancel the active prompt, end the session."""

    closed_by: str | None = None


class PromptView(BaseModel):
    """A prompt as the `status` query shows it (`text` is its bounded preview)."""

    prompt_id: str
    text: str
    queued_at_ms: int
    state: Literal["running", "queued"]


class PermissionView(BaseModel):
    """An open permission request as the `status` query shows it."""

    request_id: str
    prompt_id: str | None
    options: list[str]


class SessionStatus(BaseModel):
    """The query `status`: the session's prompts, open permission requests, approval
    mode and model, and whether it is closing."""

    session_id: str
    active_prompt: PromptView | None = None
    queued: list[PromptView] = Field(default_factory=list)
    pending_permissions: list[PermissionView] = Field(default_factory=list)
    approval_mode: str = "default"
    model_id: str = "scripted"
    model_binding: ModelBinding | None = None
    closed: bool = False
    last_turn: dict[str, Any] | None = None


class OpenPromptInput(BaseModel):
    """Start a prompt's episode: its text (read from the store) becomes the transcript's
    user message and the `user_message_chunk` event."""

    session_id: str
    prompt_id: str
    run_id: str
    originator: str | None = None
    retention: int = 8000
    # Whose `tools.disabled` apply to this prompt (None in inputs recorded before).
    workspace_cwd: str | None = None


class ModelStepInput(BaseModel):
    """MODEL_STEP's argument: step `step` of a prompt's episode."""

    session_id: str
    prompt_id: str
    step: int
    run_id: str
    model_id: str
    shell_enabled: bool = False
    retention: int = 8000
    # One attempt of the step's fallback chain (Session:Default). None: a step of a
    # prompt started before the chain, which makes the first attempt of the live plan.
    attempt: AttemptSpec | None = None
    # The session's workspace, the tenant its attempts are accounted to.
    tenant: str | None = None


class ModelStepResult(BaseModel):
    """MODEL_STEP's result: what the model answered (its text and the tool calls it
    asked for) and why it stopped."""

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop_reason: StopReason = "end_turn"
    # What the attempt came to (None from a step without `attempt`): on a failed one,
    # the rest of the result is empty and the workflow's chain decides what follows.
    report: AttemptReport | None = None


class ToolStepInput(BaseModel):
    """One tool call of a prompt's episode: the argument of PREVIEW_TOOL and of the
    activities that run it (RUN_TOOL, RUN_EFFECT, WINDOWS_TOOL, MCP_READ, MCP_CALL)."""

    session_id: str
    prompt_id: str
    workspace_cwd: str
    run_id: str
    step: int = 0
    call: ToolCall
    shell_enabled: bool = False
    retention: int = 8000
    # "run": execute and report; "refuse": report as failed without running.
    action: Literal["run", "refuse"] = "run"
    refusal: str | None = None
    # File tools: the target's content hash when the call was proposed (compare-and-swap).
    expected_hash: str | None = None
    # MCP tools: what the preview resolved the call to (it runs on exactly this).
    mcp: McpBinding | None = None

    @property
    def call_key(self) -> str:
        """The call within its session: prompt, model step and the model's call id (bounded)."""
        call = self.call.id if len(self.call.id) <= 64 else _digest(self.call.id)
        return f"{self.prompt_id}/s{self.step}/{call}"

    @property
    def op_id(self) -> str:
        """The call's operation id: the same for every retry of its activity."""
        return f"session/{self.session_id}/{self.call_key}"


class ToolPreview(BaseModel):
    """PREVIEW_TOOL's result: what the call would do, shown in the permission request
    (`tool_call`, `kind`), and what the workflow needs to decide whether to ask, refuse
    or run it, and how."""

    tool_call: dict[str, Any]
    kind: str
    # File tools: the target's content hash now (see ToolStepInput.expected_hash).
    target_hash: str | None = None
    # The tool was disabled (`tools.disabled`) when the prompt began: the call is refused.
    disabled: bool = False
    # run_shell_command: whether the fence passed what the command's paths and program
    # resolve to (see activities.workspace.previews.shell_fenced). None for other tools,
    # and in previews recorded before the `auto` allow-list: the workflow then replays
    # the decision of the rule of that time (runtime.sessions.approval_modes_v0).
    shell_fenced: bool | None = None
    # How the call is dispatched (runtime/tools.Dispatch): an own tool's descriptor's, an
    # MCP tool's from its server's annotations (with the server's timeout that bounds it).
    # None in previews recorded before, and for names no tool has.
    dispatch: str | None = None
    timeout_ms: int | None = None
    mcp: McpBinding | None = None


class ToolStepResult(BaseModel):
    """How a tool call ended (the activity journaled its event and its answer to the model)."""

    status: Literal["completed", "failed"]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


SessionInput.model_rebuild()
PromptItem.model_rebuild()


class SessionActivityContracts:
    """Each SessionActivity with the types of its argument and result."""

    OPEN_PROMPT: Final = ActivityContract(SessionActivity.OPEN_PROMPT, OpenPromptInput, type(None))
    MODEL_STEP: Final = ActivityContract(
        SessionActivity.MODEL_STEP, ModelStepInput, ModelStepResult
    )
    PREVIEW_TOOL: Final = ActivityContract(SessionActivity.PREVIEW_TOOL, ToolStepInput, ToolPreview)
    PERSIST_APPROVAL_MODE: Final = ActivityContract(
        SessionActivity.PERSIST_APPROVAL_MODE, PersistApprovalModeInput, type(None)
    )
    RECAP: Final = ActivityContract(SessionActivity.RECAP, RecapInput, RecapResult)
    RUN_TOOL: Final = ActivityContract(SessionActivity.RUN_TOOL, ToolStepInput, ToolStepResult)
    WINDOWS_TOOL: Final = ActivityContract(
        SessionActivity.WINDOWS_TOOL, ToolStepInput, ToolStepResult
    )
    TASK_DECISION: Final = ActivityContract(
        SessionActivity.TASK_DECISION, TaskDecisionInput, type(None)
    )
    MCP_READ: Final = ActivityContract(SessionActivity.MCP_READ, ToolStepInput, ToolStepResult)
    MCP_CALL: Final = ActivityContract(SessionActivity.MCP_CALL, ToolStepInput, ToolStepResult)
    RUN_EFFECT: Final = ActivityContract(SessionActivity.RUN_EFFECT, ToolStepInput, ToolStepResult)


def session_workflow_id(session_id: str) -> str:
    """The id of a session's `SessionWorkflow`: whoever starts, signals or updates it."""
    return f"session/{session_id}"


def session_search_attributes(request: SessionInput) -> list[SearchAttributePair[Any]]:
    """A new session's search attributes: a session, of its workspace, idle."""
    return starting("session", request.workspace_cwd, status="idle")
