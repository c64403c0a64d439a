"""The model layer's contracts: the payloads of a model call, then model routing's.

The payloads of a model call (DESIGN.md "Models"): messages in, one reply out.

One model per concept: `ToolCall` is the tool call a model asked for, everywhere —
in replies, in the transcript, in workflow inputs (session and agent-tools steps)
and in the tools that run it. Every type is a pydantic model, so requests and
replies cross Temporal as activity inputs and results (pydantic data converter).

Model routing (issue 11, spec standing-agents §2.5, §3.5, §3.7): call sites, providers,
presets, fallback chains, and what one attempt reports. Contracts and pure functions only.

Every model call agentrt makes is attributed to a call site. A site inherits its
parent's binding until an operator attaches a preset to it; the root `Default` is
bound to the built-in preset `settings`, which is today's settings
(`AGENTRT_MODEL_PROVIDER`, `OPENAI_*`), so nothing changes for a user who
configures nothing. A preset names a model on a provider, an optional overlay and a
fallback chain of further (model, provider) entries; a provider is an
OpenAI-compatible endpoint with an ordered list of credentials.

A `ChainPlan` (no secrets: credentials by alias) crosses Temporal; the worker resolves
each alias to its key at attempt time. Each attempt is one activity; the workflow
walks the plan with `runtime.llm.chain`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, Field, model_validator

from runtime.activity_contract import ActivityContract


class ToolCall(BaseModel):
    """A call the model asks for; `name` is always the tool's own id (dots included)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ImageRef(BaseModel):
    """An image a message shows the model, by reference (a stored screenshot's
    `<stream>#<seq>`), so transcripts and workflow histories never carry its bytes.
    `data_url` is filled only in the model step's own request, just before the call."""

    ref: str
    data_url: str | None = None


class ChatMessage(BaseModel):
    """One message of a conversation with a model, as transcripts store it and a model
    call sends it."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    # Assistant messages: the calls the model asked for in that turn.
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # Tool messages: which call this is the result of.
    tool_call_id: str | None = None
    # Tool messages: images the call produced (windows_screenshot), shown to the model.
    images: list[ImageRef] = Field(default_factory=list)


class ToolSpec(BaseModel):
    """A tool offered to the model: its name, what it does, and its arguments' schema."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


class UsageSource(StrEnum):
    """Where an attempt's token counts come from (`usageSource` of an attempt)."""

    REPORTED = "reported"  # the provider's own counts (`usage`), or the built-in model's
    ESTIMATED = "estimated"  # the provider reported none: counted by agentrt from the text


class Usage(BaseModel):
    """The tokens one model call consumed, and where their counts come from."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of `prompt_tokens`, those the provider read from its prompt cache (OpenAI's
    # `usage.prompt_tokens_details.cached_tokens`), billed at the cached-input price.
    # Defaults to 0: replies recorded in workflow histories before it was counted.
    cached_prompt_tokens: int = 0
    # Defaults to reported: replies recorded before agentrt estimated what was missing.
    source: UsageSource = UsageSource.REPORTED


class ModelReply(BaseModel):
    """A model's answer to one call: its text, the tool calls it asked for, why it
    stopped, the model asked for and the one that served, and the tokens it took."""

    content: str
    tool_calls: list[ToolCall]
    finish_reason: str  # "stop" | "tool_calls" | "length" | ... as the provider reported it
    # Recorded apart because endpoints serve aliases (gpt-4o → gpt-4o-2024-08-06).
    requested_model: str
    served_model: str
    usage: Usage


# -- model routing -------------------------------------------------------------------------


ROOT_SITE = "Default"
# The built-in preset and provider the root is bound to: the deployment's settings.
SETTINGS_PRESET = "settings"
SETTINGS_PROVIDER = "settings"

# §3.7's agent sites, plus agentrt's own Session:Default and Turn:Model, under Default.
SITE_PARENTS: dict[str, str | None] = {
    ROOT_SITE: None,
    "Agent:Default": ROOT_SITE,
    "Agent:Planning": "Agent:Default",
    "Agent:Compliance": "Agent:Default",
    "Agent:Pod": "Agent:Default",
    "PromptRedactor:Default": ROOT_SITE,
    "PromptRedactor:Redact": "PromptRedactor:Default",
    "Session:Default": ROOT_SITE,
    "Turn:Model": ROOT_SITE,
}
SESSION_SITE = "Session:Default"
TURN_SITE = "Turn:Model"


class OwnerKind(StrEnum):
    """Who a model call is made for (`owner.kind` of an attempt)."""

    SESSION = "session"
    TURN = "turn"
    AGENT = "agent"


# The longest start-to-close timeout of an attempt's activity (a session's or an agent's
# model step): an attempt row still `in_flight` after it lost its worker.
ATTEMPT_START_TO_CLOSE = timedelta(minutes=10)


class AttemptOutcome(StrEnum):
    OK = "ok"
    RATE_LIMITED = "rate_limited"
    AUTH_ERROR = "auth_error"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    BAD_REQUEST = "bad_request"


class PriceSource(StrEnum):
    """Whose price an attempt was charged at (`priceSource` of an attempt)."""

    SERVED = "served"  # the served model's: the normal case
    REQUESTED = "requested"  # the served model has no price: the requested model's
    DEFAULT = "default"  # neither has one: the deployment's default price
    BUILTIN = "builtin"  # the built-in scripted model, which costs nothing: free


class CredentialConfig(BaseModel):
    """One credential of a provider: exactly one of apiKey, apiKeyEnv, deviceFlow."""

    alias: str = Field(min_length=1, max_length=100)
    api_key: str | None = Field(default=None, alias="apiKey")
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")
    device_flow: str | None = Field(default=None, alias="deviceFlow")

    model_config = {"populate_by_name": True}

    @model_validator(mode="after")
    def _exactly_one(self) -> CredentialConfig:
        given = [v for v in (self.api_key, self.api_key_env, self.device_flow) if v is not None]
        if len(given) != 1:
            raise ValueError(
                f"credential {self.alias!r} needs exactly one of apiKey, apiKeyEnv, deviceFlow"
            )
        return self


class ProviderConfig(BaseModel):
    """A named OpenAI-compatible endpoint and its credentials, tried in order.

    `kind` is `scripted` only for the built-in `settings` provider when the deployment
    runs the scripted model; every stored provider is `openai`.
    """

    provider_id: str
    base_url: str
    credentials: list[CredentialConfig] = Field(default_factory=list)
    kind: Literal["openai", "scripted"] = "openai"


class Overlay(BaseModel):
    system_prompt_suffix: str | None = Field(default=None, alias="systemPromptSuffix")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_output_tokens: int | None = Field(default=None, alias="maxOutputTokens", ge=1)

    model_config = {"populate_by_name": True}


class ChainEntry(BaseModel):
    model: str
    provider: str


class PresetConfig(BaseModel):
    preset_id: str
    model: str
    provider: str
    overlay: Overlay | None = None
    fallback: list[ChainEntry] = Field(default_factory=list)


class ResolvedSite(BaseModel):
    """One row of GET /api/v1/llm/sites."""

    site_id: str
    parent: str | None
    preset_id: str | None  # the site's own binding, or None
    resolved_preset_id: str
    resolved_from: str  # the site whose binding it is


def resolve_site(site_id: str, bindings: Mapping[str, str]) -> ResolvedSite:
    """Climb the parent chain to the nearest bound site; the root falls back to `settings`.

    Raises:
        KeyError: an unknown site.
    """
    if site_id not in SITE_PARENTS:
        raise KeyError(site_id)
    current: str | None = site_id
    while current is not None:
        bound = bindings.get(current)
        if bound is not None:
            return ResolvedSite(
                site_id=site_id,
                parent=SITE_PARENTS[site_id],
                preset_id=bindings.get(site_id),
                resolved_preset_id=bound,
                resolved_from=current,
            )
        current = SITE_PARENTS[current]
    return ResolvedSite(
        site_id=site_id,
        parent=SITE_PARENTS[site_id],
        preset_id=None,
        resolved_preset_id=SETTINGS_PRESET,
        resolved_from=ROOT_SITE,
    )


class PlanEntry(BaseModel):
    """One (model, provider) of the chain, with the provider's credential aliases in order."""

    model: str
    provider: str
    credential_aliases: list[str | None]  # [None] for a provider that needs no key


class ChainPlan(BaseModel):
    """What a call will try, in order; resolved at the start of each call (live config)."""

    site: str
    preset_id: str
    entries: list[PlanEntry]
    overlay: Overlay | None = None


class AttemptSpec(BaseModel):
    """One attempt of a call: which entry of the chain, which credential."""

    call_id: str  # the logical call's operation id (a retry finds its stored reply)
    attempt_index: int  # 0, 1, ... in chain order: the attempt's id is call_id/a{index}
    site: str
    preset_id: str
    fallback_step: int  # index of the chain entry (0 = the preset's own model)
    provider: str
    credential_alias: str | None
    model: str
    overlay: Overlay | None = None


class AttemptReport(BaseModel):
    """What one attempt came to; the reply itself stays in the store (call_id)."""

    attempt_id: str
    outcome: AttemptOutcome
    http_status: int | None = None
    retry_after_s: float | None = None
    served_model: str | None = None
    cost_usd: float = 0.0
    provider: str
    credential_alias: str | None
    # A deviceFlow credential without a usable token: the provider id to run the flow for.
    device_flow_required: str | None = None
    error: str | None = None
    # A success's provenance of its cost: whose price, and whose token counts (None: a
    # failed attempt, or one reported before they were recorded).
    price_source: PriceSource | None = None
    usage_source: UsageSource | None = None


class ChainFailure(BaseModel):
    """Every attempt failed (or a 400 ended the chain): what each one came to."""

    attempts: list[AttemptReport]

    def message(self) -> str:
        parts = [
            f"{a.provider}/{a.credential_alias or '-'}: {a.outcome.value}"
            + (f" ({a.http_status})" if a.http_status else "")
            for a in self.attempts
        ]
        return "all model providers failed: " + "; ".join(parts)


# Errors crossing the Temporal boundary (ApplicationError.type).
ALL_PROVIDERS_EXHAUSTED = "all_providers_exhausted"


class LlmActivity(StrEnum):
    """The model-routing activities, called by name from the workflows."""

    RESOLVE_CHAIN = "llm.resolve_chain"  # local: the call's plan, from the live config


class ModelBinding(BaseModel):
    """What `Session:Default` resolved to when a session chose its own model: the preset
    and its primary provider. The choice holds while the site still resolves to both."""

    preset_id: str
    provider: str


class ResolveChainInput(BaseModel):
    """Resolve `site` to a plan; `model_override` (a session's own model) replaces the
    preset's model on the chain's first entry while the site resolves to
    `override_binding` (None: a choice recorded before bindings were, honoured only on
    the deployment's `settings` provider)."""

    site: str
    model_override: str | None = None
    override_binding: ModelBinding | None = None
    # A preset that wins over the site's binding (a coding task's `presetId`).
    preset_override: str | None = None


# A deviceFlow credential's flow failed or expired: the call ends with its errorKind.
DEVICE_FLOW_FAILED = "device_flow_failed"
# A 400 (or another 4xx) ended the chain at once: the request itself is at fault.
MODEL_BAD_REQUEST = "model_bad_request"


class LlmActivityContracts:
    """Each LlmActivity with the types of its argument and result."""

    RESOLVE_CHAIN: Final = ActivityContract(LlmActivity.RESOLVE_CHAIN, ResolveChainInput, ChainPlan)
