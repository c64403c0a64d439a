"""The workflows and activities of the `llm-chain` benchmark: one model call made
directly from an activity, and the same call through the fallback chain (the site's plan
resolved by `llm.resolve_chain`, each attempt one activity through the model gateway).
Workflow code here follows the house rules (deterministic, no I/O, no clock)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from activities.llm.gateway import LlmOwner, ModelGateway
    from activities.llm.openai import OpenAIProvider
    from runtime.llm.contracts import AttemptReport, AttemptSpec, ChatMessage, OwnerKind
    from workflows.llm.chain import ATTEMPT_RETRY, resolve_chain, run_chain

DIRECT_CALL = "bench.llm_direct_call"
CHAIN_ATTEMPT = "bench.llm_chain_attempt"
DIRECT_WORKFLOW = "BenchDirectCall"
CHAIN_WORKFLOW = "BenchChainCall"
ACTIVITY_TIMEOUT = timedelta(seconds=30)
HELLO = [ChatMessage(role="user", content="hello")]


class CallInput(BaseModel):
    call_id: str
    site: str = "Default"


class CallResult(BaseModel):
    attempts: int
    served_model: str | None


class BenchLlmActivities:
    def __init__(self, gateway: ModelGateway, base_url: str, api_key: str) -> None:
        self.gateway = gateway
        self.base_url = base_url
        self.api_key = api_key

    @activity.defn(name=DIRECT_CALL)
    async def direct_call(self, request: CallInput) -> CallResult:
        provider = OpenAIProvider(base_url=self.base_url, model="bench", api_key=self.api_key)
        reply = await provider.complete(HELLO, [])
        return CallResult(attempts=1, served_model=reply.served_model)

    @activity.defn(name=CHAIN_ATTEMPT)
    async def chain_attempt(self, spec: AttemptSpec) -> AttemptReport:
        owner = LlmOwner(OwnerKind.TURN, "bench", None)
        report, _ = await self.gateway.attempt(spec, owner, HELLO, [])
        return report


@workflow.defn(name=DIRECT_WORKFLOW)
class DirectCallWorkflow:
    @workflow.run
    async def run(self, request: CallInput) -> CallResult:
        result: CallResult = await workflow.execute_activity(
            DIRECT_CALL,
            request,
            result_type=CallResult,
            start_to_close_timeout=ACTIVITY_TIMEOUT,
            retry_policy=ATTEMPT_RETRY,
        )
        return result


@workflow.defn(name=CHAIN_WORKFLOW)
class ChainCallWorkflow:
    @workflow.run
    async def run(self, request: CallInput) -> CallResult:
        plan = await resolve_chain(request.site)

        async def attempt(spec: AttemptSpec) -> AttemptReport:
            report: AttemptReport = await workflow.execute_activity(
                CHAIN_ATTEMPT,
                spec,
                result_type=AttemptReport,
                start_to_close_timeout=ACTIVITY_TIMEOUT,
                retry_policy=ATTEMPT_RETRY,
            )
            return report

        done = await run_chain(plan, request.call_id, attempt)
        return CallResult(attempts=len(done.attempts), served_model=done.report.served_model)


WORKFLOWS = [DirectCallWorkflow, ChainCallWorkflow]
