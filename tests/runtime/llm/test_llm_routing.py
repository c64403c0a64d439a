"""Model routing (issue 11): call-site inheritance, the fallback chain's policy, and the
plan a site resolves to from the stored configuration (live, settings as the root)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from temporalio.exceptions import ApplicationError

from runtime.failures import refusal_of
from runtime.llm.chain import SHORT_RETRY_AFTER_S, first_attempt, next_attempt
from runtime.llm.config_store import (
    LlmConfigRefusal,
    bind_site,
    find_credential,
    list_presets,
    list_providers,
    list_sites,
    load_chain_plan,
    provider_config,
    put_preset,
    put_provider,
    static_api_key,
    unbind_site,
)
from runtime.llm.contracts import (
    SITE_PARENTS,
    AttemptOutcome,
    AttemptSpec,
    ChainEntry,
    ChainPlan,
    CredentialConfig,
    Overlay,
    PlanEntry,
    resolve_site,
)
from runtime.settings import Settings
from runtime.store import Store

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

# -- site inheritance -------------------------------------------------------------------------

INHERITANCE = [
    # (bindings, site, resolved preset, resolved from, own binding)
    ({}, "Default", "settings", "Default", None),
    ({}, "Agent:Planning", "settings", "Default", None),
    ({"Default": "p"}, "Agent:Planning", "p", "Default", None),
    ({"Default": "p", "Agent:Default": "a"}, "Agent:Planning", "a", "Agent:Default", None),
    (
        {"Agent:Default": "a", "Agent:Planning": "plan"},
        "Agent:Planning",
        "plan",
        "Agent:Planning",
        "plan",
    ),
    ({"Agent:Default": "a"}, "Agent:Compliance", "a", "Agent:Default", None),
    ({"Agent:Default": "a"}, "Agent:Pod", "a", "Agent:Default", None),
    ({"Agent:Default": "a"}, "Session:Default", "settings", "Default", None),
    ({"Agent:Default": "a"}, "PromptRedactor:Redact", "settings", "Default", None),
    ({"PromptRedactor:Default": "r"}, "PromptRedactor:Redact", "r", "PromptRedactor:Default", None),
    ({"Default": "p", "Turn:Model": "t"}, "Turn:Model", "t", "Turn:Model", "t"),
    ({"Default": "p"}, "Session:Default", "p", "Default", None),
    ({"Default": "p"}, "Default", "p", "Default", "p"),
]


class Refused:
    """The typed model-routing refusal a block raised (runtime/llm/config_errors.py)."""

    value: LlmConfigRefusal


@contextmanager
def llm_refusal() -> Iterator[Refused]:
    caught = Refused()
    with pytest.raises(ApplicationError) as raised:
        yield caught
    failure = refusal_of(raised.value, LlmConfigRefusal)
    assert failure is not None, raised.value
    caught.value = failure


@pytest.mark.parametrize(("bindings", "site", "preset", "source", "own"), INHERITANCE)
def test_a_site_inherits_the_nearest_binding(
    bindings: dict[str, str], site: str, preset: str, source: str, own: str | None
) -> None:
    resolved = resolve_site(site, bindings)
    assert (resolved.resolved_preset_id, resolved.resolved_from, resolved.preset_id) == (
        preset,
        source,
        own,
    )
    assert resolved.parent == SITE_PARENTS[site]


def test_an_unknown_site_is_refused() -> None:
    with pytest.raises(KeyError):
        resolve_site("Agent:Nope", {})


# -- the chain's policy -----------------------------------------------------------------------

PLAN = ChainPlan(
    site="Session:Default",
    preset_id="p",
    entries=[
        PlanEntry(model="m1", provider="a", credential_aliases=["k1", "k2"]),
        PlanEntry(model="m2", provider="b", credential_aliases=[None]),
        PlanEntry(model="m3", provider="c", credential_aliases=["only"]),
    ],
)


def _at(step: int, alias: str | None, index: int = 0) -> AttemptSpec:
    entry = PLAN.entries[step]
    return AttemptSpec(
        call_id="call",
        attempt_index=index,
        site=PLAN.site,
        preset_id=PLAN.preset_id,
        fallback_step=step,
        provider=entry.provider,
        credential_alias=alias,
        model=entry.model,
    )


POLICY = [
    # (previous step and alias, outcome, Retry-After, next (step, alias) or None, wait, advanced)
    (0, "k1", AttemptOutcome.RATE_LIMITED, None, (0, "k2"), 0.0, False),
    (0, "k1", AttemptOutcome.RATE_LIMITED, 2.0, (0, "k2"), 2.0, False),
    (
        0,
        "k1",
        AttemptOutcome.RATE_LIMITED,
        SHORT_RETRY_AFTER_S,
        (0, "k2"),
        SHORT_RETRY_AFTER_S,
        False,
    ),
    (0, "k1", AttemptOutcome.RATE_LIMITED, 120.0, (0, "k2"), 0.0, False),
    (0, "k1", AttemptOutcome.AUTH_ERROR, None, (0, "k2"), 0.0, False),
    (0, "k1", AttemptOutcome.AUTH_ERROR, 2.0, (0, "k2"), 0.0, False),
    # The provider's credentials are used up: the next entry.
    (0, "k2", AttemptOutcome.RATE_LIMITED, 1.0, (1, None), 0.0, True),
    (0, "k2", AttemptOutcome.AUTH_ERROR, None, (1, None), 0.0, True),
    # A 5xx or a timeout advances at once, other credentials of the provider untried.
    (0, "k1", AttemptOutcome.SERVER_ERROR, None, (1, None), 0.0, True),
    (0, "k1", AttemptOutcome.TIMEOUT, None, (1, None), 0.0, True),
    (1, None, AttemptOutcome.RATE_LIMITED, None, (2, "only"), 0.0, True),
    # A 400 ends the chain; so does a success.
    (0, "k1", AttemptOutcome.BAD_REQUEST, None, None, 0.0, False),
    (1, None, AttemptOutcome.OK, None, None, 0.0, False),
    # Exhaustion: the last entry's last credential fails.
    (2, "only", AttemptOutcome.SERVER_ERROR, None, None, 0.0, False),
    (2, "only", AttemptOutcome.RATE_LIMITED, 1.0, None, 0.0, False),
    (2, "only", AttemptOutcome.TIMEOUT, None, None, 0.0, False),
]


@pytest.mark.parametrize(
    ("step", "alias", "outcome", "retry_after", "expected", "wait", "advanced"), POLICY
)
def test_the_chain_policy(
    step: int,
    alias: str | None,
    outcome: AttemptOutcome,
    retry_after: float | None,
    expected: tuple[int, str | None] | None,
    wait: float,
    advanced: bool,
) -> None:
    following = next_attempt(PLAN, _at(step, alias, index=3), outcome, retry_after)
    if expected is None:
        assert following.attempt is None
    else:
        assert following.attempt is not None
        assert (following.attempt.fallback_step, following.attempt.credential_alias) == expected
        assert following.attempt.attempt_index == 4
        assert following.attempt.model == PLAN.entries[expected[0]].model
        assert following.attempt.call_id == "call"
    assert following.wait_s == wait
    assert following.advanced is advanced


def test_a_whole_chain_walk_tries_every_credential_then_stops() -> None:
    spec = first_attempt(PLAN, "call")
    seen: list[tuple[str, str | None]] = []
    while spec is not None:
        seen.append((spec.provider, spec.credential_alias))
        spec = next_attempt(PLAN, spec, AttemptOutcome.RATE_LIMITED, None).attempt
    assert seen == [("a", "k1"), ("a", "k2"), ("b", None), ("c", "only")]


def test_an_empty_plan_has_no_first_attempt() -> None:
    assert first_attempt(ChainPlan(site="Default", preset_id="p", entries=[]), "c") is None


# -- the plan from the store --------------------------------------------------------------------


def _openai(**extra: object) -> Settings:
    values: dict[str, object] = {
        "model_provider": "openai",
        "openai_base_url": "http://127.0.0.1:9/v1",
        "openai_api_key": "sk-settings",
        "openai_model": "gpt-4o-mini",
    }
    return Settings(**{**values, **extra})  # type: ignore[arg-type]


def _two_providers(store: Store, settings: Settings) -> None:
    put_provider(
        store,
        settings,
        "alpha",
        "http://127.0.0.1:9001/v1",
        [
            CredentialConfig(alias="a1", apiKey="sk-a1"),
            CredentialConfig(alias="a2", apiKeyEnv="ALPHA_API_KEY_2"),
        ],
        NOW,
    )
    put_provider(store, settings, "beta", "https://beta.example/v1", [], NOW)


def test_nothing_configured_is_todays_settings(store: Store) -> None:
    scripted = load_chain_plan(store, Settings(), "Session:Default", "whatever")
    assert scripted.preset_id == "settings"
    assert scripted.entries == [
        PlanEntry(model="scripted", provider="settings", credential_aliases=[None])
    ]
    plan = load_chain_plan(store, _openai(), "Agent:Planning")
    assert plan.entries == [
        PlanEntry(model="gpt-4o-mini", provider="settings", credential_aliases=["env"])
    ]
    keyless = load_chain_plan(store, _openai(openai_api_key=None), "Turn:Model")
    assert keyless.entries[0].credential_aliases == [None]
    provider = provider_config(store, _openai(), "settings")
    assert provider is not None and provider.kind == "openai"
    assert provider.credentials[0].api_key == "sk-settings"
    assert provider.base_url == "http://127.0.0.1:9/v1"


def test_a_sessions_model_choice_replaces_the_settings_model_only(store: Store) -> None:
    settings = _openai()
    # Under the settings provider: the session's choice, except a leftover "scripted".
    assert (
        load_chain_plan(store, settings, "Session:Default", "gpt-4o").entries[0].model == "gpt-4o"
    )
    leftover = load_chain_plan(store, settings, "Session:Default", "scripted")
    assert leftover.entries[0].model == "gpt-4o-mini"
    assert load_chain_plan(store, Settings(), "Session:Default", "gpt-4o").entries[0].model == (
        "scripted"
    )
    # Bound to another provider: the binding wins over the session's old choice.
    _two_providers(store, settings)
    put_preset(store, settings, "p", "claude-3:beta", "alpha", None, [], NOW)
    bind_site(store, settings, "Session:Default", "p", NOW)
    plan = load_chain_plan(store, settings, "Session:Default", "gpt-4o")
    assert plan.entries[0].model == "claude-3:beta"


def test_a_preset_with_a_fallback_expands_each_providers_credentials(store: Store) -> None:
    settings = _openai()
    _two_providers(store, settings)
    overlay = Overlay(systemPromptSuffix="Be brief.", temperature=0.2, maxOutputTokens=512)
    put_preset(
        store,
        settings,
        "fast",
        "openai/gpt-4o",
        "alpha",
        overlay,
        [
            ChainEntry(model="llama-3", provider="beta"),
            ChainEntry(model="x", provider="settings"),
        ],
        NOW,
    )
    bind_site(store, settings, "Agent:Default", "fast", NOW)
    plan = load_chain_plan(store, settings, "Agent:Compliance", "ignored")
    assert plan.site == "Agent:Compliance"
    assert plan.preset_id == "fast"
    assert plan.overlay == overlay
    assert plan.entries == [
        PlanEntry(model="openai/gpt-4o", provider="alpha", credential_aliases=["a1", "a2"]),
        PlanEntry(model="llama-3", provider="beta", credential_aliases=[None]),
        # A fallback onto the settings provider keeps its own model (no session override).
        PlanEntry(model="x", provider="settings", credential_aliases=["env"]),
    ]
    # The plan carries aliases, never a key.
    assert "sk-a1" not in plan.model_dump_json()
    # Site bindings are live: detaching falls back to the parent's (settings) at once.
    unbind_site(store, "Agent:Default")
    assert load_chain_plan(store, settings, "Agent:Compliance").preset_id == "settings"


def test_providers_list_aliases_and_never_a_key(store: Store) -> None:
    settings = _openai()
    _two_providers(store, settings)
    views = list_providers(store, settings)
    assert [v.provider_id for v in views] == ["settings", "alpha", "beta"]
    assert views[0].built_in and views[0].credentials[0].alias == "env"
    alpha = views[1]
    assert [(c.alias, c.kind, c.api_key_env) for c in alpha.credentials] == [
        ("a1", "apiKey", None),
        ("a2", "apiKeyEnv", "ALPHA_API_KEY_2"),
    ]
    dumped = "".join(v.model_dump_json() for v in views)
    assert "sk-a1" not in dumped and "sk-settings" not in dumped
    # The worker side sees the key.
    alpha_config = provider_config(store, settings, "alpha")
    assert alpha_config is not None and alpha_config.credentials[0].api_key == "sk-a1"
    assert provider_config(store, settings, "nope") is None


REFUSED_PROVIDERS = [
    ("settings", "http://x/v1", [], "reserved_id"),
    ("bad id!", "http://x/v1", [], "invalid_id"),
    ("p", "ftp://x/v1", [], "invalid_base_url"),
    ("p", "http:///v1", [], "invalid_base_url"),
    ("p", "http://x:99999/v1", [], "invalid_base_url"),
    (
        "p",
        "http://x/v1",
        [{"alias": "a", "apiKey": "k"}, {"alias": "a", "apiKey": "j"}],
        "invalid_credentials",
    ),
    ("p", "http://x/v1", [{"alias": "a", "apiKeyEnv": "NOT A NAME"}], "invalid_credentials"),
    ("p", "http://x/v1", [{"alias": "a", "apiKey": ""}], "invalid_credentials"),
    (
        "p",
        "http://x/v1",
        [{"alias": "a", "deviceFlow": "no-such-idp"}],
        "unknown_device_flow_provider",
    ),
]


@pytest.mark.parametrize(("provider_id", "base_url", "credentials", "code"), REFUSED_PROVIDERS)
def test_a_bad_provider_is_refused(
    store: Store, provider_id: str, base_url: str, credentials: list[dict[str, str]], code: str
) -> None:
    parsed = [CredentialConfig.model_validate(c) for c in credentials]
    with llm_refusal() as refused:
        put_provider(store, Settings(), provider_id, base_url, parsed, NOW)
    assert refused.value.kind_name == code
    assert refused.value.http_status == 400


def test_a_device_flow_credential_names_a_configured_provider(store: Store) -> None:
    view = put_provider(
        store,
        Settings(),
        "qwen",
        "https://dashscope.example/v1",
        [CredentialConfig(alias="oauth", deviceFlow="qwen-oauth")],
        NOW,
    )
    assert [(c.kind, c.device_flow) for c in view.credentials] == [("deviceFlow", "qwen-oauth")]
    plan_provider = provider_config(store, Settings(), "qwen")
    assert plan_provider is not None and plan_provider.credentials[0].device_flow == "qwen-oauth"


def test_a_preset_naming_an_unknown_provider_is_refused(store: Store) -> None:
    settings = Settings()
    with llm_refusal() as refused:
        put_preset(store, settings, "p", "m", "nope", None, [], NOW)
    assert (refused.value.http_status, refused.value.kind_name) == (400, "unknown_provider")
    with llm_refusal() as fallback:
        put_preset(
            store, settings, "p", "m", "settings", None, [ChainEntry(model="m", provider="x")], NOW
        )
    assert fallback.value.kind_name == "unknown_provider"
    with llm_refusal() as reserved:
        put_preset(store, settings, "settings", "m", "settings", None, [], NOW)
    assert reserved.value.kind_name == "reserved_id"
    assert [v.preset.preset_id for v in list_presets(store, settings)] == ["settings"]


def test_binding_an_unknown_site_or_preset_is_refused(store: Store) -> None:
    settings = Settings()
    with llm_refusal() as site:
        bind_site(store, settings, "Agent:Nope", "settings", NOW)
    assert (site.value.http_status, site.value.kind_name) == (404, "unknown_site")
    with llm_refusal() as preset:
        bind_site(store, settings, "Default", "nope", NOW)
    assert (preset.value.http_status, preset.value.kind_name) == (400, "unknown_preset")
    with llm_refusal() as load:
        load_chain_plan(store, settings, "Agent:Nope")
    assert load.value.kind_name == "unknown_site"


def test_sites_list_every_site_with_its_resolution(store: Store) -> None:
    settings = Settings()
    put_preset(store, settings, "p", "scripted", "settings", None, [], NOW)
    bind_site(store, settings, "Agent:Default", "p", NOW)
    sites = {s.site_id: s for s in list_sites(store)}
    assert list(sites) == list(SITE_PARENTS)
    assert sites["Agent:Planning"].resolved_preset_id == "p"
    assert sites["Agent:Planning"].resolved_from == "Agent:Default"
    assert sites["Agent:Default"].preset_id == "p"
    assert sites["Session:Default"].resolved_preset_id == "settings"
    # Detaching is idempotent.
    unbind_site(store, "Agent:Default")
    assert unbind_site(store, "Agent:Default").resolved_preset_id == "settings"


def test_an_attempts_alias_finds_its_credential_and_key(store: Store) -> None:
    settings = _openai()
    _two_providers(store, settings)
    alpha = provider_config(store, settings, "alpha")
    assert alpha is not None
    a1 = find_credential(alpha, "a1")
    a2 = find_credential(alpha, "a2")
    assert a1 is not None and a2 is not None
    assert static_api_key(a1, {}) == "sk-a1"
    assert static_api_key(a2, {"ALPHA_API_KEY_2": "sk-from-env"}) == "sk-from-env"
    assert static_api_key(a2, {}) is None
    assert static_api_key(a2, {"ALPHA_API_KEY_2": ""}) is None
    beta = provider_config(store, settings, "beta")
    assert beta is not None and find_credential(beta, None) is None
    with llm_refusal() as gone:
        find_credential(alpha, "replaced")
    assert gone.value.kind_name == "unknown_credential"
    settings_config = provider_config(store, settings, "settings")
    assert settings_config is not None
    env = find_credential(settings_config, "env")
    assert env is not None and static_api_key(env, {}) == "sk-settings"
    flow = CredentialConfig(alias="oauth", deviceFlow="qwen-oauth")
    assert static_api_key(flow, {"X": "y"}) is None
