"""The session agent's windows_* tools (spec standing-agents §2.3, "Voie Windows").

Offered to the model only while the session's tenant (`SESSION_TENANT`, "default") has
the windows-pool feature. Each call goes through the session's lease
(`windows-lease/default/session-{sessionId}`, runtime/windows/lease_client.py): the
first leases a machine, the session's close settles it. The tool's answer is the verb's
result as JSON, or its error `{code, message, data}`; a screenshot's tool message also
carries its reference, which the next model step resolves into the image itself.
"""

from __future__ import annotations

import asyncio
import json

from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.llm import ToolSpec
from runtime.failures import decode_failure
from runtime.sessions.contracts import ToolStepInput
from runtime.settings import Settings
from runtime.store import Store
from runtime.store.tenants import feature_enabled
from runtime.tools.results import ToolResult, failed_result, text_item
from runtime.windows import lease_client
from runtime.windows.errors import WindowsError, WindowsErrorCode
from runtime.windows.lease_contracts import SESSION_TENANT, WINDOWS_POOL_FEATURE, session_holder
from runtime.windows.tools import WINDOWS_TOOLS
from runtime.windows.verbs import (
    SESSION_ACTIVITY_TIMEOUT,
    activity_timeout,
    parse_verb,
    validate_and_clamp,
)


def windows_tool_specs() -> list[ToolSpec]:
    """Specs of the windows_* verbs, from their descriptors (runtime/windows/tools)."""
    return [tool.spec() for tool in WINDOWS_TOOLS.values()]


def windows_enabled(store: Store) -> bool:
    return feature_enabled(store, SESSION_TENANT, WINDOWS_POOL_FEATURE)


async def run_windows_tool(
    store: Store, settings: Settings, client: Client, request: ToolStepInput
) -> ToolResult:
    """Run one windows_* call of the session's model through the session's lease."""
    call = request.call
    try:
        verb = parse_verb(call.name)
        if not await asyncio.to_thread(windows_enabled, store):
            return _failed(WindowsError.agentrt(WindowsErrorCode.FEATURE_DISABLED))
        args = validate_and_clamp(verb, dict(call.arguments))
    except ApplicationError as err:
        failure = decode_failure(err)
        assert isinstance(failure, WindowsError)
        return _failed(failure)
    try:
        result = await lease_client.call_verb(
            client,
            task_queue=settings.task_queue,
            tenant=SESSION_TENANT,
            holder=session_holder(request.session_id),
            verb=verb,
            args=args,
            lease_ms=settings.windows_lease_ms,
            idle_ms=settings.windows_lease_idle_ms,
            wait_ms=settings.worker_wait_ms,
            result_wait_s=(
                activity_timeout(verb, args) + SESSION_ACTIVITY_TIMEOUT * 2
            ).total_seconds(),
            # A retry of this activity (its worker died) is the same update: never run twice.
            update_id=request.op_id,
        )
    except lease_client.LeaseCallFailed as err:
        return _failed(err.error)
    except lease_client.LeaseUnavailable:
        return failed_result("No worker took the Windows call in time; retry")
    text = json.dumps(result)
    ref = result.get("screenshotRef") if isinstance(result, dict) else None
    return ToolResult(
        status="completed",
        output_text=text[:16_000],
        content=[text_item(text[:4000])],
        # The model sees the image too: the next model step reads it back by reference.
        image_refs=[ref] if isinstance(ref, str) else [],
    )


def _failed(error: WindowsError) -> ToolResult:
    return failed_result(json.dumps(error.body()))
