"""One line in the worker's log per activity attempt that ends: what ran, for which
workflow, which attempt, how it ended and how long it took (`agentrt.activity`, INFO).

Ops read `.data/worker.log` next to the Temporal Web UI: the UI shows a workflow's
history, this shows the worker's side of it (local activities included, which the
history records only as markers).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

log = logging.getLogger("agentrt.activity")


class ActivityLog(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next)


class _Inbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        started = time.monotonic()
        outcome = "ok"
        try:
            return await super().execute_activity(input)
        except BaseException as err:
            outcome = f"failed: {type(err).__name__}"
            raise
        finally:
            log.info(
                "%s%s for %s attempt %d: %s in %.0f ms",
                info.activity_type,
                " (local)" if info.is_local else "",
                info.workflow_id,
                info.attempt,
                outcome,
                (time.monotonic() - started) * 1000,
            )
