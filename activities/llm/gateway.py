"""The model gateway: ONE attempt of a model call, recorded (issue 11 "The chain").

The workflow walks the call's chain plan (`runtime.llm.chain`) and runs each attempt
as its own activity, with no retries; the activity hands the attempt to
`ModelGateway.attempt`, which:

1. returns the call's stored reply if an earlier attempt already succeeded (a worker
   killed after a success never pays twice), with no HTTP;
2. resolves the attempt's credential alias to a key (`apiKey`, `apiKeyEnv`, or the
   token a device flow stored); a credential that cannot be used (unknown provider or
   alias, unset variable, a variable the provider-key rule refuses: `runtime.egress`)
   is an `auth_error` attempt row with no HTTP, and a deviceFlow credential without a
   usable token also reports `device_flow_required`; a base URL the egress rule refuses
   is a `server_error` row with no HTTP (the same outcome as a connection the rule
   refuses at connect time: the chain moves on to its next provider);
3. writes the attempt row `in_flight`, makes one HTTP call (no retries inside);
4. classifies the answer: 429 rate_limited (with its Retry-After), 401/403 auth_error,
   5xx server_error, no answer in time timeout, any other 4xx bad_request;
5. prices the reply at the served model's price (never the model's own claim; the
   requested model's, else the default price, when it has none: `runtime.llm.pricing`),
   with tokens the provider did not report estimated (`runtime.llm.token_estimate`),
   finishes the attempt row and, on success, stores the reply under the call id. The
   report says whose price and whose tokens it was (`price_source`, `usage_source`):
   the caller journals a cost warning on its owner's stream when either was a guess
   (`runtime.llm.cost_warning`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple

import httpx
from opentelemetry import trace
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm import record
from activities.llm.contracts import (
    ChatMessage,
    DeltaCallback,
    ModelError,
    ModelProvider,
    ModelReply,
    ToolSpec,
)
from activities.llm.openai import DEFAULT_TIMEOUT, OpenAIProvider
from activities.llm.scripted import ScriptedModel
from runtime.device_flow.tokens import forget_token, usable_token
from runtime.egress import url_refusal
from runtime.failures import refusal_of
from runtime.llm.config_store import LlmConfigRefusal, provider_config, static_api_key
from runtime.llm.contracts import (
    AttemptOutcome,
    AttemptReport,
    AttemptSpec,
    CredentialConfig,
    Overlay,
    OwnerKind,
    ProviderConfig,
)
from runtime.llm.pricing import SCRIPTED, attempt_cost, default_price
from runtime.llm.reservation import SpendGate, SpendRefused, worst_case_usd
from runtime.settings import Settings
from runtime.store.engine import Store

log = logging.getLogger(__name__)
tracer = trace.get_tracer("agentrt.llm")

ProviderLookup = Callable[[str], ProviderConfig | None]


class LlmOwner(NamedTuple):
    """Who a call is made for: `owner.kind`/`owner.id` of its attempts, and the tenant."""

    kind: OwnerKind
    owner_id: str
    tenant: str | None


class _NotSent(Exception):
    """The attempt cannot be made (its credential or its URL): reported, never sent."""

    def __init__(
        self,
        message: str,
        *,
        device_flow: str | None = None,
        outcome: AttemptOutcome = AttemptOutcome.AUTH_ERROR,
    ) -> None:
        super().__init__(message)
        self.device_flow = device_flow
        self.outcome = outcome


class ModelGateway:
    """One attempt of a model call against one provider credential."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        scripted: ModelProvider | None = None,
        providers: ProviderLookup | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        purpose: str = "ModelCall",
    ) -> None:
        self.store = store
        self.settings = settings
        # The `scripted` provider kind: the worker's own model (the sessions' scripted
        # model, the agents' sibling, or what a test runs the worker with).
        self.scripted: ModelProvider = scripted or ScriptedModel()
        self._providers = providers
        self.timeout = timeout
        self.purpose = purpose

    def provider_config(self, provider_id: str) -> ProviderConfig | None:
        """The provider as configured now (live: read at every attempt)."""
        if self._providers is not None:
            return self._providers(provider_id)
        return provider_config(self.store, self.settings, provider_id)

    async def attempt(
        self,
        spec: AttemptSpec,
        owner: LlmOwner,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
        max_tokens: int | None = None,
        now: datetime | None = None,
        overlay_may_lower: bool = True,
        gate: SpendGate | None = None,
    ) -> tuple[AttemptReport, ModelReply | None]:
        """Make the attempt `spec` (or find the call's stored success); never raises for
        what a provider answered: the report says how it ended. `overlay_may_lower`
        False: `max_tokens` stands even where the preset overlay's cap is lower (the
        foundational phase's cap). With a `gate`, the attempt's worst case is reserved
        before it is sent (runtime/llm/reservation.py).

        Raises:
            SpendRefused: the gate refused the reservation; nothing was sent or recorded.
        """
        with tracer.start_as_current_span(
            "llm.attempt",
            attributes={
                "llm.call_id": spec.call_id,
                "llm.attempt_index": spec.attempt_index,
                "llm.site": spec.site,
                "llm.preset_id": spec.preset_id,
                "llm.fallback_step": spec.fallback_step,
                "llm.provider": spec.provider,
                "llm.credential_alias": spec.credential_alias or "",
                "llm.requested_model": spec.model,
                "llm.owner_kind": owner.kind.value,
            },
        ) as span:
            if not overlay_may_lower and max_tokens and spec.overlay is not None:
                # The caller's cap stands: the overlay keeps everything but its own cap.
                unbounded = spec.overlay.model_copy(update={"max_output_tokens": None})
                spec = spec.model_copy(update={"overlay": unbounded})
            report, reply = await self._attempt(
                spec, owner, messages, tools, on_delta, max_tokens, now, gate
            )
            span.set_attribute("llm.outcome", report.outcome.value)
            if report.served_model:
                span.set_attribute("llm.served_model", report.served_model)
            if report.http_status is not None:
                span.set_attribute("http.response.status_code", report.http_status)
            span.set_attribute("llm.cost_usd", report.cost_usd)
            if report.price_source is not None:
                span.set_attribute("llm.price_source", report.price_source.value)
            if report.usage_source is not None:
                span.set_attribute("llm.usage_source", report.usage_source.value)
            return report, reply

    async def _attempt(
        self,
        spec: AttemptSpec,
        owner: LlmOwner,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        on_delta: DeltaCallback | None,
        max_tokens: int | None,
        now: datetime | None,
        gate: SpendGate | None = None,
    ) -> tuple[AttemptReport, ModelReply | None]:
        at = now or datetime.now(UTC)
        this_id = record.attempt_id(spec.call_id, spec.attempt_index)
        stored = await asyncio.to_thread(record.stored_success, self.store, spec.call_id)
        if stored is not None:
            return (
                AttemptReport(
                    attempt_id=stored.attempt_id or this_id,
                    outcome=AttemptOutcome.OK,
                    served_model=stored.reply.served_model,
                    cost_usd=stored.cost_usd,
                    provider=stored.provider or spec.provider,
                    credential_alias=stored.credential_alias,
                    price_source=stored.price_source,
                    usage_source=stored.usage_source,
                ),
                stored.reply,
            )
        report = AttemptReport(
            attempt_id=this_id,
            outcome=AttemptOutcome.AUTH_ERROR,
            provider=spec.provider,
            credential_alias=spec.credential_alias,
        )
        call_owner = record.CallOwner(
            call_id=spec.call_id,
            tenant=owner.tenant,
            owner_kind=owner.kind,
            owner_id=owner.owner_id,
            site=spec.site,
            provider=spec.provider,
            requested_model=spec.model,
            purpose=self.purpose,
            preset_id=spec.preset_id,
            fallback_step=spec.fallback_step,
            credential_alias=spec.credential_alias,
        )
        config = await asyncio.to_thread(self.provider_config, spec.provider)
        try:
            if config is None:
                raise _NotSent(f"provider {spec.provider!r} is not configured")
            refusal = None if config.kind == "scripted" else url_refusal(config.base_url)
            if refusal is not None:
                raise _NotSent(refusal.message, outcome=AttemptOutcome.SERVER_ERROR)
            key = await self._credential(config, spec.credential_alias)
        except _NotSent as err:
            # Never sent, yet an attempt the chain counts (and its failure names): it has
            # its row like any other, at no cost. A device-flow credential's row stands
            # as this auth_error while the flow runs; the attempt made again after it
            # overwrites the row (same attempt id).
            await asyncio.to_thread(
                record.record_failure,
                self.store,
                call_owner,
                attempt=spec.attempt_index,
                outcome=err.outcome.value,
                http_status=None,
                error=str(err),
                duration_ms=0,
                now=at,
            )
            update = {
                "outcome": err.outcome,
                "error": str(err),
                "device_flow_required": err.device_flow,
            }
            return report.model_copy(update=update), None
        cap = _cap(max_tokens, spec.overlay)
        model = self._model(config, spec, key, cap)
        reserve = 0.0
        if gate is not None and model.name != SCRIPTED:
            reserve = await asyncio.to_thread(
                worst_case_usd,
                self.store,
                requested_model=spec.model,
                default=default_price(self.settings),
                messages=_overlaid(messages, spec.overlay),
                tools=tools,
                max_output_tokens=cap,
            )
        refused = await asyncio.to_thread(
            record.begin_attempt,
            self.store,
            call_owner,
            attempt=spec.attempt_index,
            now=at,
            reserve_usd=reserve,
            gate=gate,
        )
        if refused is not None:
            trace.get_current_span().set_attribute("llm.refused_axis", refused.axis)
            raise SpendRefused(refused)
        started = time.monotonic()
        try:
            reply = await heartbeating(
                model.complete(_overlaid(messages, spec.overlay), tools, on_delta=on_delta)
            )
        except ModelError as err:
            outcome = record.failure_outcome(err.status, timed_out=err.timed_out)
            if outcome is AttemptOutcome.AUTH_ERROR and key is not None:
                await self._forget_refused(config, spec.credential_alias, key)
            # A reply that failed after the server answered may have been billed in full:
            # under a budget it costs its reservation (runtime/llm/reservation.py).
            charged = reserve if err.answered else 0.0
            await asyncio.to_thread(
                record.record_failure,
                self.store,
                call_owner,
                attempt=spec.attempt_index,
                outcome=outcome.value,
                http_status=err.status,
                error=str(err),
                duration_ms=_ms_since(started),
                now=at,
                cost_usd=charged,
            )
            failed = report.model_copy(
                update={
                    "outcome": outcome,
                    "http_status": err.status,
                    "retry_after_s": err.retry_after,
                    "error": str(err)[: record.ERROR_MAX],
                }
            )
            return failed, None
        # Priced by the model that answered, never by the name its reply carries: the
        # built-in scripted model is free, whatever the worker runs as `scripted` (a
        # test's priced model) is priced, and so is a remote model named `scripted`.
        cost = await asyncio.to_thread(
            attempt_cost,
            self.store,
            provider_kind=model.name,
            requested_model=spec.model,
            served_model=reply.served_model,
            usage=reply.usage,
            default=default_price(self.settings),
        )
        status = None if config.kind == "scripted" else 200
        await asyncio.to_thread(
            record.record_success,
            self.store,
            call_owner,
            attempt=spec.attempt_index,
            reply=reply,
            cost=cost,
            duration_ms=_ms_since(started),
            now=at,
            http_status=status,
        )
        ok = report.model_copy(
            update={
                "outcome": AttemptOutcome.OK,
                "http_status": status,
                "served_model": reply.served_model,
                "cost_usd": cost.cost_usd,
                "price_source": cost.price_source,
                "usage_source": reply.usage.source,
            }
        )
        return ok, reply

    def _model(
        self, config: ProviderConfig, spec: AttemptSpec, key: str | None, max_tokens: int | None
    ) -> ModelProvider:
        if config.kind == "scripted":
            return self.scripted
        return OpenAIProvider(
            base_url=config.base_url,
            model=spec.model,
            api_key=key,
            max_tokens=max_tokens,
            temperature=spec.overlay.temperature if spec.overlay else None,
            timeout=self.timeout,
        )

    async def _credential(self, config: ProviderConfig, alias: str | None) -> str | None:
        """The key behind `alias` now.

        Raises:
            _NotSent: unknown alias, unset or refused variable, or no usable device-flow
                token.
        """
        if alias is None:
            return None
        credential = next((c for c in config.credentials if c.alias == alias), None)
        if credential is None:
            raise _NotSent(f"provider {config.provider_id!r} has no credential {alias!r}")
        return await self._key(credential)

    async def _forget_refused(self, config: ProviderConfig, alias: str | None, token: str) -> None:
        """A device-flow token the provider refused (revoked, or expired early) is not
        offered again: the next call with that credential refreshes it or runs the flow."""
        credential = next((c for c in config.credentials if c.alias == alias), None)
        if credential is not None and credential.device_flow is not None:
            data_dir = self.settings.resolved_data_dir
            await forget_token(data_dir, credential.device_flow, token)

    async def _key(self, credential: CredentialConfig) -> str:
        if credential.api_key is not None:
            return credential.api_key
        if credential.api_key_env is not None:
            # The provider-key rule again, before the variable is read: a row stored
            # before the rule (or written around PUT) names no secret of the worker's.
            try:
                value = static_api_key(credential, os.environ, self.settings.provider_key_envs)
            except ApplicationError as err:
                refused = refusal_of(err, LlmConfigRefusal)
                if refused is None:
                    raise
                raise _NotSent(refused.message) from None
            if not value:
                raise _NotSent(f"environment variable {credential.api_key_env} is not set")
            return value
        assert credential.device_flow is not None
        # Refreshed first when near expiry (runtime/device_flow/tokens.py).
        token = await usable_token(
            self.settings.resolved_data_dir, self.settings, credential.device_flow
        )
        if token is None:
            raise _NotSent(
                f"no usable device-flow token for {credential.device_flow!r}",
                device_flow=credential.device_flow,
            )
        return token


def _cap(max_tokens: int | None, overlay: Overlay | None) -> int | None:
    """The smaller of the caller's output cap and the preset overlay's."""
    caps = [c for c in (max_tokens, overlay.max_output_tokens if overlay else None) if c]
    return min(caps) if caps else None


def _overlaid(messages: list[ChatMessage], overlay: Overlay | None) -> list[ChatMessage]:
    """The overlay's system-prompt suffix appended to the (first) system message."""
    if overlay is None or not overlay.system_prompt_suffix:
        return messages
    suffix = overlay.system_prompt_suffix
    for index, message in enumerate(messages):
        if message.role == "system":
            changed = message.model_copy(update={"content": f"{message.content}\n\n{suffix}"})
            return [*messages[:index], changed, *messages[index + 1 :]]
    return [ChatMessage(role="system", content=suffix), *messages]


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
