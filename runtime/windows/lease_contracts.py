"""The lease side of the Windows pool: what crosses into `WindowsLeaseWorkflow` and back,
and the pure timing policy (when to renew, when an idle lease ends).

One workflow per (tenant, holder), id `windows-lease/{tenant}/{holder}`. Holders name
what they belong to, so that its end settles the lease: `session-{sessionId}` (the
session agent's windows_* tools), `turn-{turnId}`, `agent-{instanceId}`; a direct REST
client may use any other name and releases with `windows_release` (or the idle expiry).

Pure: no I/O, so workflows import it through `imports_passed_through`.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field
from temporalio.common import SearchAttributePair

from runtime.search_attributes import starting
from runtime.windows.contracts import PoolSession
from runtime.windows.errors import WindowsError, WindowsErrorCode

WINDOWS_POOL_FEATURE = "windows-pool"
LEASE_KIND = "windows-lease"
WORKFLOW_NAME = "WindowsLeaseWorkflow"
CALL_UPDATE = "call"
SETTLE_SIGNAL = "settle"
LEASE_QUERY = "lease"

# The tenant of a daemon session's windows_* tools. Sessions carry no tenant of their own
# (a daemon serves one workspace): their leases, and the windows-pool flag they need, are
# the "default" tenant's.
SESSION_TENANT = "default"

HOLDER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"

# A lease started by a verb waits this long for the verb's update (sent right after the
# start, by the same caller) before it ends holding nothing.
FIRST_CALL_GRACE_MS = 120_000
# A renewal the pool did not answer is tried again after this.
RENEW_RETRY_MS = 10_000


LeaseState = Literal["leasing", "held", "released", "evicted", "idle_expired", "settled"]


def lease_search_attributes(request: LeaseInput) -> list[SearchAttributePair[Any]]:
    return starting(LEASE_KIND, request.tenant, status="leasing")


def lease_workflow_id(tenant: str, holder: str) -> str:
    return f"windows-lease/{tenant}/{holder}"


def session_holder(session_id: str) -> str:
    return f"session-{session_id}"


def turn_holder(turn_id: str) -> str:
    return f"turn-{turn_id}"


def agent_holder(instance_id: str) -> str:
    return f"agent-{instance_id}"


def task_holder(task_id: str) -> str:
    """A coding task (runtime/coding_tasks): its settlement releases the lease."""
    return f"task-{task_id}"


HolderKind = Literal["session", "turn", "agent", "task"]

# Why agentrt refuses a verb for a holder of its own (VALIDATION_ERROR, nothing leased).
HOLDER_SETTLED = "holder_settled"
UNKNOWN_HOLDER = "unknown_holder"


def known_holder(holder: str) -> tuple[HolderKind, str] | None:
    """The kind and id of a holder agentrt settles (`session-{id}`, `turn-{id}`,
    `agent-{id}`, `task-{id}`); None for a direct client's own name."""
    for kind in get_args(HolderKind):
        prefix = f"{kind}-"
        if holder.startswith(prefix) and len(holder) > len(prefix):
            return kind, holder.removeprefix(prefix)
    return None


def holder_settled(holder: str, detail: str = "") -> WindowsError:
    """A verb for a holder that is gone: no machine is leased for nobody."""
    return WindowsError.agentrt(
        WindowsErrorCode.VALIDATION_ERROR,
        f"the holder {holder} has settled{f' ({detail})' if detail else ''}; nothing was leased",
        reason=HOLDER_SETTLED,
    )


def unknown_holder(holder: str, tenant: str, detail: str) -> WindowsError:
    """A verb for an agentrt holder that is not this tenant's: its settlement would
    never reach a lease under this tenant."""
    return WindowsError.agentrt(
        WindowsErrorCode.VALIDATION_ERROR,
        f"{holder} is not a holder of tenant {tenant!r}: {detail}; nothing was leased",
        reason=UNKNOWN_HOLDER,
    )


def idle_deadline_ms(last_verb_ms: int, idle_ms: int) -> int:
    """When a lease with no verb since `last_verb_ms` is released."""
    return last_verb_ms + idle_ms


class LeaseInput(BaseModel):
    tenant: str
    holder: str
    lease_ms: int = Field(gt=0)
    idle_ms: int = Field(gt=0)
    # Carried over by continue-as-new: the pool session is workflow state.
    session: PoolSession | None = None
    renewed_at_ms: int | None = None
    last_verb_ms: int | None = None
    calls: int = 0


class LeaseCall(BaseModel):
    """One verb through the lease (the update `call`)."""

    verb: str
    args: dict[str, Any] = Field(default_factory=dict)
    # The API's bound: the validator refuses the update once this has passed.
    accept_before_ms: int | None = None


class LeaseCallResult(BaseModel):
    result: Any = None


class SettleRequest(BaseModel):
    """The holder is gone (its session closed, its turn finished, its agent stopped)."""

    reason: str = "settled"


class LeaseView(BaseModel):
    holder: str
    sessionId: str | None = None
    host: str | None = None
    expiresAt: str | None = None
    state: LeaseState


def release_not_held() -> dict[str, Any]:
    """windows_release with nothing held: idempotent, nothing is called."""
    return {"released": False, "outcome": "not_held"}
