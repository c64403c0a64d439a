"""The provider-key rule and the egress rule (issue 18), as tables, and the start-up check
that applies them to the deployment's own outbound URLs."""

from __future__ import annotations

import ipaddress
import json

import pytest

from cli import main
from runtime.egress import (
    forbidden_address,
    key_env_refusal,
    listed_key_env_refusal,
    literal_address,
    redact_url,
    url_refusal,
)
from runtime.settings import Settings
from runtime.startup import StartupRefusal, check_startup

# -- the provider-key rule --------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_2",
        "OPENROUTER_API_KEY",
        "MY_LOCAL_LLM_API_KEY_10",
        "A_API_KEY",
    ],
)
def test_a_variable_ending_in_api_key_is_allowed(name: str) -> None:
    assert key_env_refusal(name) is None


@pytest.mark.parametrize(
    ("name", "listed"),
    [
        ("AGENTRT_WINDOWS_POOL_TOKEN", ()),
        ("AGENTRT_TOKEN", ()),
        ("QWEN_SERVER_TOKEN", ()),
        ("DATABASE_URL", ()),
        ("HOME", ()),
        ("PATH", ()),
        ("AWS_SECRET_ACCESS_KEY", ()),
        ("OPENAI_KEY", ()),
        ("openai_api_key", ()),  # lower case is another variable: not the pattern
        ("OPENAI_API_KEY_", ()),
        ("OPENAI_API_KEY_X", ()),
        ("_API_KEY", ()),
        ("API_KEY", ()),
        ("NOT A NAME", ()),
        # agentrt's own names, even those that end in _API_KEY, and even when listed
        ("AGENTRT_X_API_KEY", ()),
        ("TEMPORAL_API_KEY", ()),
        ("OTEL_EXPORTER_API_KEY", ()),
        ("PGPASSWORD", ("PGPASSWORD",)),
        ("PG_API_KEY", ()),
        ("AGENTRT_WINDOWS_POOL_TOKEN", ("AGENTRT_WINDOWS_POOL_TOKEN",)),
        ("DATABASE_URL", ("DATABASE_URL",)),
        ("TEMPORAL_TLS_KEY", ("TEMPORAL_TLS_KEY",)),
        ("OTEL_EXPORTER_OTLP_HEADERS", ("OTEL_EXPORTER_OTLP_HEADERS",)),
        ("agentrt_token", ("agentrt_token",)),
    ],
)
def test_any_other_variable_is_refused_naming_the_rule(name: str, listed: tuple[str, ...]) -> None:
    refusal = key_env_refusal(name, listed)
    assert refusal is not None and refusal.rule == "provider_key_env"
    assert repr(name) in refusal.message
    assert "_API_KEY" in refusal.message and "AGENTRT_PROVIDER_KEY_ENVS" in refusal.message


def test_the_operator_may_list_more_variables() -> None:
    assert key_env_refusal("HF_TOKEN", ["HF_TOKEN"]) is None
    assert key_env_refusal("HF_TOKEN", ["OTHER"]) is not None
    assert key_env_refusal("HF_TOKEN") is not None


@pytest.mark.parametrize(
    ("listed", "needle"),
    [
        ("HF_TOKEN,AGENTRT_WINDOWS_POOL_TOKEN", "AGENTRT_WINDOWS_POOL_TOKEN"),
        ("DATABASE_URL", "never a provider key"),
        ("PGPASSWORD", "never a provider key"),
        ("NOT-A-NAME", "not an environment variable name"),
    ],
)
def test_listing_agentrts_own_variables_is_refused_at_start_up(
    listed: str, needle: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTRT_PROVIDER_KEY_ENVS", listed)
    assert main(["api"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "AGENTRT_PROVIDER_KEY_ENVS" in err


def test_the_listed_variables_are_read_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRT_PROVIDER_KEY_ENVS", "HF_TOKEN, GROQ_TOKEN,")
    assert Settings().provider_key_envs == ["HF_TOKEN", "GROQ_TOKEN"]
    assert listed_key_env_refusal("HF_TOKEN") is None


# -- the egress rule --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "http://x/v1",
        "http://127.0.0.1:8080/v1",  # loopback: local model servers
        "http://localhost:11434/v1",
        "http://[::1]:8080/v1",
        "http://10.0.0.5/v1",  # private ranges too
        "http://192.168.1.20:1234/v1",
        "http://172.16.0.1/v1",
        "http://[fd00::1]/v1",  # unique-local, but not AWS's metadata address
        "http://169.255.0.1/v1",
        "http://[fe00::1]/v1",
        "http://metadata.example/v1",  # a name: checked at connect time
        "http://bücher.example/v1",  # an IDNA name
        "http://localhost./v1",  # a trailing dot on a name
        "http://[2001:db8::1]/v1",
        "http://[64:ff9b::808:808]/v1",  # NAT64 to a public address
    ],
)
def test_allowed_urls(url: str) -> None:
    assert url_refusal(url) is None


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("file:///etc/passwd", "url_scheme"),
        ("ftp://x/v1", "url_scheme"),
        ("gopher://x/", "url_scheme"),
        ("not a url", "url_scheme"),
        ("http:///v1", "url_scheme"),
        ("http://x:99999/v1", "url_scheme"),
        ("http://x\\@169.254.169.254/", "url_scheme"),
        ("http://x /v1", "url_scheme"),
        ("http://user:s3cr3t@api.example/v1", "url_userinfo"),
        ("https://token@api.example/v1", "url_userinfo"),
        ("http://api.example@169.254.169.254/", "url_userinfo"),
        ("http://169.254.169.254/latest/meta-data/", "link_local_or_metadata"),
        ("http://169.254.0.1:8080/v1", "link_local_or_metadata"),
        ("http://169.254.255.255/", "link_local_or_metadata"),
        ("http://[fe80::1]/", "link_local_or_metadata"),
        ("http://[fe80::1%25eth0]:80/", "link_local_or_metadata"),
        ("http://[febf:ffff::1]/", "link_local_or_metadata"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "link_local_or_metadata"),
        ("http://100.100.100.200/latest/meta-data/", "link_local_or_metadata"),
        ("http://[::ffff:169.254.169.254]/", "link_local_or_metadata"),
        ("http://[::ffff:a9fe:a9fe]/", "link_local_or_metadata"),
        ("http://[64:ff9b::169.254.169.254]/", "link_local_or_metadata"),
        ("http://[2002:a9fe:a9fe::1]/", "link_local_or_metadata"),
        ("http://[::169.254.169.254]/", "link_local_or_metadata"),
        ("http://2852039166/", "link_local_or_metadata"),  # 169.254.169.254 as one number
        ("http://0xa9fea9fe/", "link_local_or_metadata"),
        ("http://0251.0376.0251.0376/", "link_local_or_metadata"),
        ("http://169.254.43518/", "link_local_or_metadata"),
        # spelled so that urlsplit does not see the address, httpx (which connects) does
        ("http://169\u3002254\u3002169\u3002254/", "link_local_or_metadata"),
        ("http://169\uff0e254\uff0e169\uff0e254/latest/", "link_local_or_metadata"),
        ("http://169.254.169.254./", "link_local_or_metadata"),
        # Teredo (2001::/32) whose client is 169.254.169.254 (stored inverted)
        ("http://[2001:0:4136:e378:8000:63bf:5601:5601]/", "link_local_or_metadata"),
        # NAT64's local-use prefix 64:ff9b:1::/48, at the /96 and the /48 positions
        ("http://[64:ff9b:1::a9fe:a9fe]/", "link_local_or_metadata"),
        ("http://[64:ff9b:1:a9fe:a9:fe00::]/", "link_local_or_metadata"),
        # a base URL the worker appends /chat/completions to: a query or fragment would
        # swallow it, and the POST would go to the path the URL chose
        ("http://127.0.0.1:7243/api/v1/sessions/s1/terminate#", "url_query_or_fragment"),
        ("http://127.0.0.1:7243/api/v1/x?", "url_query_or_fragment"),
        ("http://127.0.0.1:7243/api/v1/x?a=", "url_query_or_fragment"),
        ("http://127.0.0.1:7243/v1#frag", "url_query_or_fragment"),
        ("http://127.0.0.1:7243?", "url_query_or_fragment"),
        ("http://api.example#", "url_query_or_fragment"),
    ],
)
def test_refused_urls_name_the_rule(url: str, rule: str) -> None:
    refusal = url_refusal(url, "baseUrl")
    assert refusal is not None and refusal.rule == rule, refusal
    assert refusal.message.startswith("baseUrl ")
    assert "s3cr3t" not in refusal.message and "token@" not in refusal.message


def test_the_query_and_fragment_rule_is_named() -> None:
    refusal = url_refusal("http://127.0.0.1:7243/x#")
    assert refusal is not None
    assert "query" in refusal.message and "fragment" in refusal.message
    # An endpoint called as it is may carry a query, never a fragment.
    assert url_refusal("https://idp.example/device?tenant=a", base=False) is None
    refused = url_refusal("https://idp.example/device#", base=False)
    assert refused is not None and refused.rule == "url_query_or_fragment"


def test_the_reserved_names_are_written_once() -> None:
    from runtime.egress import RESERVED_ENV_NAMES, RESERVED_ENV_PREFIXES, RULES

    problem = listed_key_env_refusal("PGPASSWORD")
    assert problem is not None
    for text in (RULES["provider_key_env"], problem):
        for prefix in RESERVED_ENV_PREFIXES:
            assert f"{prefix}*" in text
        for name in RESERVED_ENV_NAMES:
            assert name in text


@pytest.mark.parametrize(
    ("address", "forbidden"),
    [
        ("2001:0:4136:e378:8000:63bf:5601:5601", True),  # Teredo, client 169.254.169.254
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo, client 192.0.2.45
        ("64:ff9b:1::a9fe:a9fe", True),  # local-use NAT64, /96
        ("64:ff9b:1:a9fe:a9:fe00::", True),  # /48 (the IPv4 around bits 64-71)
        ("64:ff9b:1:ffa9:fe:a9fe::", True),  # /56
        ("64:ff9b:1:0:a9:fea9:fe00:0", True),  # /64
        ("64:ff9b:1::808:808", False),
        ("169.254.169.254", True),
        ("fe80::abcd", True),
        ("fd00:ec2::254", True),
        ("::ffff:169.254.1.1", True),
        ("::ffff:127.0.0.1", False),
        ("64:ff9b::a9fe:a9fe", True),
        ("64:ff9b::808:808", False),
        ("127.0.0.1", False),
        ("::1", False),
        ("::", False),
        ("0.0.0.0", False),
        ("10.1.2.3", False),
        ("fd00:ec2::253", False),
        ("8.8.8.8", False),
    ],
)
def test_forbidden_addresses(address: str, forbidden: bool) -> None:
    assert forbidden_address(ipaddress.ip_address(address)) is forbidden


def test_literal_addresses_are_read_as_a_resolver_would() -> None:
    assert literal_address("127.1") == ipaddress.ip_address("127.0.0.1")
    assert literal_address("[::1]") == ipaddress.ip_address("::1")
    assert literal_address("api.openai.com") is None
    assert literal_address("cafe") is None  # a name, though it spells hex


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://u:p@h.example/v1", "https://h.example/v1"),
        ("https://token@h.example:8443/v1?q=1", "https://h.example:8443/v1?q=1"),
        ("http://a@b@c.example/", "http://c.example/"),
        ("https://h.example/v1/a@b", "https://h.example/v1/a@b"),  # an @ in the path stays
        ("https://h.example/v1", "https://h.example/v1"),
        ("", ""),
    ],
)
def test_urls_are_shown_without_user_info(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# -- the deployment's own outbound URLs, at start-up --------------------------------------------


def _idp(endpoint: str) -> str:
    return json.dumps(
        {
            "idp": {
                "deviceAuthorizationEndpoint": endpoint,
                "tokenEndpoint": "https://idp.example/token",
                "clientId": "c",
            }
        }
    )


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        (
            Settings(windows_pool_url="http://169.254.169.254/pool"),
            "AGENTRT_WINDOWS_POOL_URL 'http://169.254.169.254/pool' is refused",
        ),
        (
            Settings(windows_pool_url="https://u:secret@pool.example"),
            "AGENTRT_WINDOWS_POOL_URL 'https://pool.example' is refused",
        ),
        (
            Settings(device_flow_providers=_idp("http://[fd00:ec2::254]/device")),
            "AGENTRT_DEVICE_FLOW_PROVIDERS['idp'].deviceAuthorizationEndpoint",
        ),
        (
            Settings(device_flow_providers=_idp("file:///device")),
            "must be an http(s) URL",
        ),
        (Settings(qwen_oauth_base_url="http://169.254.1.1"), "AGENTRT_QWEN_OAUTH_BASE_URL"),
        (
            Settings(model_provider="openai", openai_base_url="http://[fe80::2]/v1"),
            "OPENAI_BASE_URL",
        ),
    ],
)
def test_outbound_urls_of_the_settings_are_refused_at_start_up(
    settings: Settings, needle: str
) -> None:
    with pytest.raises(StartupRefusal) as refused:
        check_startup(settings)
    assert needle in str(refused.value) and "secret" not in str(refused.value)


def test_allowed_outbound_urls_start() -> None:
    settings = Settings(
        windows_pool_url="http://127.0.0.1:9100",
        device_flow_providers=_idp("http://10.0.0.2/device"),
        model_provider="openai",
        openai_base_url="http://localhost:11434/v1",
        provider_key_envs=["HF_TOKEN"],
    )
    assert check_startup(settings) == []
