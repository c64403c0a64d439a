"""`llm.resolve_chain`: the plan of one model call, from the live configuration.

A local activity: the workflow resolves its call site at the start of every call, so a
re-bound site or a changed preset takes effect at the next call without a restart.
"""

from __future__ import annotations

import asyncio

from temporalio import activity

from activities.llm.settings_chain import settings_plan
from runtime.llm.routing import ChainPlan, LlmActivity, ResolveChainInput
from runtime.settings import Settings
from runtime.store.engine import Store


class LlmActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @activity.defn(name=LlmActivity.RESOLVE_CHAIN)
    async def resolve_chain(self, request: ResolveChainInput) -> ChainPlan:
        return await asyncio.to_thread(
            settings_plan, self.settings, request.site, request.model_override
        )
