"""Settings and start-up refusals (spec 002: one clear line on stderr, exit code 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli import build_parser, main, settings_from_args, settings_to_env
from runtime.settings import Settings
from runtime.startup import canonical_origin


def _settings(argv: list[str]) -> Settings:
    return settings_from_args(build_parser().parse_args(argv))


def test_defaults() -> None:
    settings = Settings()
    assert settings.hostname == "127.0.0.1"
    assert settings.port == 4170
    assert settings.token is None
    assert settings.event_ring_size == 8000
    assert settings.max_sessions == 20
    assert not settings.rate_limit
    assert settings.resolved_database_url.endswith("/.data/agentrt.db")


def test_every_flag_is_also_an_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTRT_HOSTNAME", "localhost")
    monkeypatch.setenv("AGENTRT_PORT", "5001")
    monkeypatch.setenv("AGENTRT_TOKEN", "t0k")
    monkeypatch.setenv("AGENTRT_REQUIRE_AUTH", "true")
    monkeypatch.setenv("AGENTRT_ALLOW_ORIGIN", "https://a.example,https://b.example")
    monkeypatch.setenv("AGENTRT_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("AGENTRT_MAX_SESSIONS", "3")
    monkeypatch.setenv("AGENTRT_EVENT_RING_SIZE", "100")
    monkeypatch.setenv("AGENTRT_RATE_LIMIT", "1")
    monkeypatch.setenv("AGENTRT_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "ns")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db/agentrt")
    settings = _settings(["api"])
    assert settings.hostname == "localhost"
    assert settings.port == 5001
    assert settings.token == "t0k"
    assert settings.require_auth
    assert settings.allow_origin == ["https://a.example", "https://b.example"]
    assert settings.workspace_cwd == str(tmp_path.resolve())
    assert settings.max_sessions == 3
    assert settings.event_ring_size == 100
    assert settings.rate_limit
    assert settings.resolved_data_dir == (tmp_path / "d").resolve()
    assert settings.effective_temporal_address == "temporal:7233"
    assert settings.temporal_namespace == "ns"
    assert settings.resolved_database_url == "postgresql://u:p@db/agentrt"


def test_flags_win_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRT_PORT", "5001")
    monkeypatch.setenv("AGENTRT_ALLOW_ORIGIN", "https://env.example")
    settings = _settings(
        [
            "api",
            "--port",
            "6000",
            "--allow-origin",
            "https://a.example",
            "--allow-origin",
            "https://b.example",
        ]
    )
    assert settings.port == 6000
    assert settings.allow_origin == ["https://a.example", "https://b.example"]


def test_token_from_qwen_server_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN_SERVER_TOKEN", "from-qwen")
    assert _settings(["api"]).token == "from-qwen"
    assert _settings(["api", "--token", "flag"]).token == "flag"


def test_settings_round_trip_through_child_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    original = _settings(
        [
            "up",
            "--port",
            "4999",
            "--token",
            "s3",
            "--allow-origin",
            "https://a.example",
            "--rate-limit",
        ]
    )
    for key, value in settings_to_env(original).items():
        monkeypatch.setenv(key, value)
    copy = Settings()
    assert copy.model_dump() == original.model_dump() | {
        "workspace": copy.workspace,
        "data_dir": copy.data_dir,
    }
    assert copy.workspace_cwd == original.workspace_cwd


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--hostname", "0.0.0.0"], "non-loopback"),
        (["--hostname", "192.168.1.5"], "non-loopback"),
        (["--require-auth"], "--require-auth"),
        (["--allow-origin", "*"], "--allow-origin '*'"),
        (["--allow-origin", "http://Example.com"], "'http://example.com'"),
        (["--allow-origin", "http://example.com/"], "'http://example.com'"),
        (["--allow-origin", "https://example.com:443"], "'https://example.com'"),
        (["--allow-origin", "http://example.com/path"], "'http://example.com'"),
        (["--allow-origin", "example.com"], "<scheme>://<host>[:<port>]"),
    ],
)
def test_startup_refusals(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["api", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert needle in err


def test_refusal_lifted_by_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    settings = _settings(["api", "--hostname", "0.0.0.0", "--token", "x", "--allow-origin", "*"])
    from runtime.startup import check_startup

    assert check_startup(settings) == ["--allow-origin '*' admits every browser origin"]


def test_refusal_exit_code_of_the_console_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli", "api", "--require-auth"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "agentrt: --require-auth needs a bearer token: pass --token or set QWEN_SERVER_TOKEN"
    ]


@pytest.mark.parametrize(
    ("pattern", "canonical"),
    [
        ("http://example.com", "http://example.com"),
        ("http://example.com:8080", "http://example.com:8080"),
        ("HTTP://EXAMPLE.COM", "http://example.com"),
        ("http://[::1]:3000", "http://[::1]:3000"),
        ("ftp://example.com", None),
        ("nonsense", None),
    ],
)
def test_canonical_origin(pattern: str, canonical: str | None) -> None:
    assert canonical_origin(pattern) == canonical


def test_the_default_workspace_is_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    assert settings.workspace is None
    assert settings.workspace_cwd == str((tmp_path / "d" / "workspace").resolve())
    assert Settings(data_dir=tmp_path / "d", workspace=tmp_path).workspace_cwd == str(tmp_path)
    # A child given the settings' environment computes the same default.
    assert "AGENTRT_WORKSPACE" not in settings_to_env(settings)
