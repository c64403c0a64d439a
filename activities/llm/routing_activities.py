"""`llm.resolve_chain`: the plan of one model call, from the live configuration.

A local activity: the workflow resolves its call site at the start of every call, so a
re-bound site or a changed preset takes effect at the next call without a restart.
"""

from __future__ import annotations

import asyncio

from temporalio.exceptions import ApplicationError

from runtime.failures import refusal_of
from runtime.llm.config_store import LlmConfigRefusal, load_chain_plan
from runtime.llm.contracts import ChainPlan, LlmActivityContracts, ResolveChainInput
from runtime.settings import Settings
from runtime.store.engine import Store


class LlmActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @LlmActivityContracts.RESOLVE_CHAIN.defn
    async def resolve_chain(self, request: ResolveChainInput) -> ChainPlan:
        try:
            return await asyncio.to_thread(
                load_chain_plan,
                self.store,
                self.settings,
                request.site,
                request.model_override,
                request.override_binding,
                request.preset_override,
            )
        except ApplicationError as err:
            refused = refusal_of(err, LlmConfigRefusal)
            if refused is None:
                raise
            # An unknown site or a dangling preset: retrying reads the same config.
            raise refused.application_error(retryable=False) from err
