"""All of agentrt's settings, in one pydantic-settings class.

Every daemon flag of spec 002 (`--hostname`, `--port`, `--token`, ...) has a field
here, read from the environment as `AGENTRT_<FLAG>`; the CLI (`cli.py`)
overrides the environment with the flags it was given. A few variables keep
their conventional names: `QWEN_SERVER_TOKEN` (drop-in compatibility with the
spec's daemon clients), `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `DATABASE_URL`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from runtime.device_flow.providers import DeviceFlowProvider, all_providers, parse_providers
from runtime.sessions.contracts import MAX_DEADLINE_MS

# The key of an approval timeout's override: what is asked (runtime/approvals/clock.py).
APPROVAL_OVERRIDE_KEY = re.compile(r"(tool|mode):[A-Za-z0-9._:-]{1,200}")
# The longest an approval may wait (a year): beyond it, say 0 (none).
MAX_APPROVAL_TIMEOUT_MS = 365 * 86_400_000
LOOPBACK_HOSTNAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
BODY_LIMIT_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class Flag:
    """A setting that `agentrt`'s commands also take as a flag (`--<name-with-dashes>`):
    cli.py builds every flag from the settings that carry one, with this help, the
    setting's type (an int, a path, a choice, a repeatable value, an on/off switch) and
    its default. `default` overrides how the default is said; `negated` makes an on-by-
    default switch a `--no-<name>` flag."""

    help: str
    default: str | None = None
    metavar: str | None = None
    negated: bool = False


class Settings(BaseSettings):
    """agentrt's configuration: environment first, then CLI flags on top."""

    model_config = SettingsConfigDict(env_prefix="AGENTRT_", extra="ignore", populate_by_name=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The arguments, then the environment. agentrt reads no `.env` file and no
        secrets directory, and those two sources still walked every field on each
        construction (more than half of its cost)."""
        return (init_settings, env_settings)

    hostname: Annotated[str, Flag("address to bind")] = "127.0.0.1"
    port: Annotated[int, Flag("API port")] = Field(default=4170, ge=0, le=65535)
    token: Annotated[
        str | None, Flag("bearer token (prefer QWEN_SERVER_TOKEN: flags show in `ps`)")
    ] = Field(
        default=None, validation_alias=AliasChoices("AGENTRT_TOKEN", "QWEN_SERVER_TOKEN", "token")
    )
    require_auth: Annotated[
        bool, Flag("demand the bearer on every route, loopback /health included")
    ] = False
    # Failed bearer checks allowed per minute and network address (a token bucket); past
    # it the address is answered 429 until it refills (api/security/bearer.py).
    auth_failures_per_minute: int = Field(default=10, ge=1)
    allow_origin: Annotated[
        list[str],
        NoDecode,
        Flag("admit a browser origin (repeatable; '*' needs a token)", metavar="PATTERN"),
    ] = Field(default_factory=list)
    # The session agents' workspace. None: `<data-dir>/workspace`, created at start-up, so
    # that agents never write into whatever directory the daemon was started from.
    workspace: Annotated[
        Path | None, Flag("the directory session agents work in", default="<data-dir>/workspace")
    ] = None
    max_sessions: Annotated[int, Flag("live session cap")] = Field(default=20, ge=1)
    max_pending_prompts_per_session: Annotated[int, Flag("prompt queue bound")] = Field(
        default=5, ge=1
    )
    event_ring_size: Annotated[int, Flag("events kept per stream for replay")] = Field(
        default=8000, ge=1
    )
    rate_limit: Annotated[bool, Flag("turn on per-client token-bucket rate limiting")] = False
    # Extra Host header values to admit (e.g. a reverse proxy's name).
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    data_dir: Annotated[Path, Flag("where the store and Temporal keep state")] = Path(".data")

    temporal_address: str | None = Field(
        default=None, validation_alias=AliasChoices("TEMPORAL_ADDRESS", "temporal_address")
    )
    temporal_namespace: str = Field(
        default="default", validation_alias=AliasChoices("TEMPORAL_NAMESPACE", "temporal_namespace")
    )
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "database_url")
    )
    temporal_port: Annotated[int, Flag("embedded Temporal frontend port")] = Field(
        default=7233, ge=1, le=65535
    )
    temporal_ui_port: Annotated[int, Flag("embedded Temporal Web UI port")] = Field(
        default=8233, ge=1, le=65535
    )
    # The embedded dev server's Web UI. It has no authentication and answers any Host
    # (DNS rebinding): false runs the dev server without it (`--headless`).
    temporal_ui: Annotated[
        bool,
        Flag(
            "run the embedded Temporal dev server without its Web UI (it has no auth)", negated=True
        ),
    ] = True
    task_queue: str = "agentrt"
    # Names this deployment in agent-tools streams and rows (isolation per instance).
    instance: str = "local"
    # Session daemon: permission mediation, timeouts, prompt deadlines, the shell tool.
    permission_policy: Annotated[
        Literal["first-responder", "designated", "consensus", "local-only"],
        Flag("who decides a permission request"),
    ] = "first-responder"
    permission_response_timeout_ms: Annotated[
        int,
        Flag("permission requests resolve as cancelled after this", default="300000; 0 = never"),
    ] = Field(default=300_000, ge=0)
    prompt_deadline_ms: Annotated[
        int | None, Flag("cap on a prompt's run time", default="none")
    ] = Field(default=None, ge=1, le=MAX_DEADLINE_MS)
    # A prompt's text (UTF-8 bytes of its text blocks); a larger one is answered 413.
    max_prompt_bytes: Annotated[
        int, Flag("largest prompt text accepted, in UTF-8 bytes; larger ones get 413")
    ] = Field(default=1024 * 1024, ge=1)
    session_shell: Annotated[bool, Flag("give session agents the run_shell_command tool")] = False
    # The workspace memory file POST /workspace/init creates (a file name, no directory).
    memory_file_name: Annotated[
        str, Flag("the workspace memory file POST /workspace/init creates")
    ] = Field(default="AGENTS.md", pattern=r"^[^/\\]+$", max_length=255)
    # How long a route waits for a worker to take a workflow update before it answers
    # 503 worker_unavailable; the update's validator refuses it after that, so it is
    # never applied behind the caller's back (api/sessions/temporal_calls.update_session).
    worker_wait_ms: int = Field(default=15_000, ge=100)
    # The time bound of one search tool call (glob, grep_search) of a session; below the
    # 2-minute bound of the activity that runs it.
    session_search_timeout_ms: int = Field(default=30_000, ge=1, le=100_000)
    # Search children (glob, grep_search, GET /glob) one process runs at once: GET /glob
    # over the cap is a 429 with Retry-After; a session's search waits for a slot.
    search_children: int = Field(default=4, ge=1, le=64)
    # A worker's connection to an MCP server unused this long is closed (the next need
    # opens it again): AGENTRT_MCP_IDLE_SECONDS.
    mcp_idle_seconds: float = Field(default=300.0, gt=0)
    # The workspace's own `.qwen/settings.json` mcpServers: used once an operator approved
    # each entry (`approve`), as they are (`trusted`), or not at all (`off`):
    # AGENTRT_MCP_WORKSPACE_SERVERS (runtime/mcp/config.merged).
    mcp_workspace_servers: Literal["approve", "trusted", "off"] = "approve"
    # The MCP client budget (spec: mcp_guardrails): servers a worker keeps connected per
    # workspace, AGENTRT_MCP_CLIENT_BUDGET / --mcp-client-budget; and what passing it
    # does, AGENTRT_MCP_BUDGET_MODE / --mcp-budget-mode: `warn` (the default with a
    # budget) or `enforce` (refused in declaration order); `off` (the default without).
    mcp_client_budget: Annotated[
        int | None, Flag("MCP servers a worker keeps connected per workspace", default="no budget")
    ] = Field(default=None, ge=1)
    mcp_budget_mode: Annotated[
        Literal["warn", "enforce", "off"] | None,
        Flag("past the MCP client budget: warn, or refuse in declaration order (enforce)"),
    ] = None

    @property
    def effective_mcp_budget_mode(self) -> Literal["warn", "enforce", "off"]:
        """What passing the MCP client budget does: `off` without a budget (whatever
        `mcp_budget_mode` says), else `mcp_budget_mode`, `warn` when it is not set."""
        if self.mcp_budget_mode is not None:
            return self.mcp_budget_mode if self.mcp_client_budget is not None else "off"
        return "warn" if self.mcp_client_budget is not None else "off"

    # Agent-tools gateway: default investigation workspace and retention windows (FIFO).
    agent_tools_workspace: str = "demo"
    agent_tools_max_results: int = Field(default=64, ge=1)
    agent_tools_max_events: int = Field(default=128, ge=1)
    # The page's browser sessions (cookies) kept in the store, newest first; expired ones
    # are purged whenever one is opened (runtime/agent_tools/browser.py).
    agent_tools_max_browser_sessions: int = Field(default=64, ge=1)

    # Models (DESIGN.md "Models"): `scripted` (built in) or `openai` (any compatible endpoint).
    model_provider: Annotated[
        Literal["scripted", "openai"],
        Flag(
            "model behind the agents: scripted (built in) or openai "
            "(OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL)"
        ),
    ] = "scripted"
    openai_base_url: str = Field(
        default="https://api.openai.com/v1",
        validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url"),
    )
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key")
    )
    openai_model: str = Field(
        default="gpt-4o-mini", validation_alias=AliasChoices("OPENAI_MODEL", "openai_model")
    )
    # The price, in dollars per million tokens, of an attempt whose served and requested
    # models both have none (runtime/llm/pricing.py): never zero by default, so that an
    # unpriced model still counts against budgets and credits. High on purpose: set a
    # price for the model (`PUT /api/v1/llm/prices/{model}`, 0 for a free local one).
    default_price_per_mtok_in: float = Field(default=10.0, ge=0)
    default_price_per_mtok_out: float = Field(default=30.0, ge=0)
    # OAuth device flows (RFC 8628): the built-in `qwen-oauth` provider's base URL, and any
    # number of standard providers as a JSON object (runtime/device_flow/providers.py).
    qwen_oauth_base_url: str = "https://chat.qwen.ai"
    device_flow_providers: str | None = None
    # More variables a provider credential's `apiKeyEnv` may name, beyond `*_API_KEY` and
    # `*_API_KEY_<n>` (runtime/egress.py); agentrt's own are refused even when listed.
    provider_key_envs: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Standing agents (spec standing-agents §3.2-§3.6). Cadence of the heartbeat: a fixed
    # interval while the idle heartbeat is enabled, else a geometric backoff on idle ticks.
    agent_heartbeat_ms: int = Field(default=86_400_000, ge=1000)
    agent_idle_heartbeat_enabled: bool = True
    agent_backoff_base_ms: int = Field(default=30_000, ge=1000)
    agent_backoff_factor: float = Field(default=2.0, ge=1.0)
    agent_max_backoff_ms: int = Field(default=1_800_000, ge=1000)
    forced_replan_every_n_idle_ticks: int = Field(default=20, ge=1)
    # Spec §3.2's deployment level (AgentDispatcher:Enabled): off, no agent of any tenant
    # ticks and the API's sweeper does not run; the routes still store what they accept,
    # which waits for a restart with it on. Each tenant opts in on top of it.
    standing_agents_enabled: bool = True
    # Spec §3.2 MaxConcurrentInstancesPerTenant: at most this many of a tenant's agents tick
    # at once; the others wait (durably) and tick in turn. A tick lease older than the
    # stale time (its workflow died mid-tick) no longer counts.
    max_concurrent_instances_per_tenant: int = Field(default=4, ge=1, le=1000)
    agent_tick_lease_stale_ms: int = Field(default=1_200_000, ge=10_000)
    # A schedule (runtime/standing_agents/schedules.py) firing more often than this is
    # refused at creation: an agent's ticks cost money, and a loop guard counts only the
    # agent's own wake-ups.
    agent_schedule_min_interval_s: int = Field(default=60, ge=1)
    max_consecutive_blocked_turns: int = Field(default=3, ge=1)
    # The loop guards (issue 21, item 10; runtime/standing_agents/loop_guard.py): close an agent
    # whose last N planned turns decided the same, or that planned more than M times in
    # an hour on its own heartbeat with no operator or external event.
    agent_max_repeated_decisions: int = Field(default=5, ge=2)
    agent_max_self_wakes_per_hour: int = Field(default=12, ge=1)
    # The STUCK guard closes an agent after N blocked turns (the spec's pod path); on in agentrt.
    enforce_stuck_guard: bool = True
    # Enabling the feature for a tenant ensures its singleton SOA (auto-bootstrap): Active
    # and seeded with AgentInitialized when idle-by-default, Paused otherwise.
    standing_agents_auto_bootstrap: bool = True
    standing_agents_idle_by_default: bool = True
    # The per-tick budget's settings layer (below system_configs, above the code default).
    agent_tick_max_tokens: int | None = Field(default=None, ge=1)
    agent_tick_max_tool_calls: int | None = Field(default=None, ge=1)
    agent_tick_max_seconds: float | None = Field(default=None, gt=0)
    agent_tick_max_cost_usd: float | None = Field(default=None, gt=0)
    agent_tick_max_turns: int | None = Field(default=None, ge=1)
    agent_tick_max_output_tokens_per_turn: int | None = Field(default=None, ge=1)
    # The foundational phase (§3.6): its per-turn output cap and its length (both under
    # system_configs' AgentDispatcher:Foundational* keys).
    agent_foundational_max_output_tokens_per_turn: int = Field(default=16_384, ge=1)
    agent_foundational_window_ms: int = Field(default=86_400_000, ge=60_000)
    # The weekly planning credit of a tenant's agents (§3.4.9), in dollars.
    agent_weekly_credit_usd: float = Field(default=60.0, ge=0)
    credit_enforcement_enabled: bool = True
    # The coordination registry's entries expire this long after their last heartbeat.
    registry_ttl_ms: int = Field(default=300_000, ge=1000)
    # The Windows machine pool (README "Windows machine pool"; issue 12): where it is, the
    # bearer token agentrt presents to it, the lease length asked of it (renewed while held),
    # and how long a lease stays held without a verb before it is released.
    windows_pool_url: str | None = None
    windows_pool_token: str | None = None
    windows_lease_ms: int = Field(default=300_000, ge=10_000)
    windows_lease_idle_ms: int = Field(default=1_800_000, ge=1000)
    # A coding task's holder that does not heartbeat for this long loses its claim (the
    # task is open again, its Windows lease released).
    coding_task_claim_timeout_ms: int = Field(default=300_000, ge=1000)
    # agentrt's own coders running at once per tenant (the others wait for a slot).
    coders_per_tenant: int = Field(default=4, ge=1, le=100)
    # Approvals' timeouts (0: none): a research authorization, a standing agent's decision
    # (mode change, stuck, budget reached, a coder's question) and its MCP call approval
    # expire unanswered after these; `approval.expiring` is owed this long before.
    research_timeout_ms: int = Field(default=86_400_000, ge=0, le=MAX_APPROVAL_TIMEOUT_MS)
    decision_timeout_ms: int = Field(default=604_800_000, ge=0, le=MAX_APPROVAL_TIMEOUT_MS)
    mcp_approval_timeout_ms: int = Field(default=86_400_000, ge=0, le=MAX_APPROVAL_TIMEOUT_MS)
    approval_expiring_lead_ms: int = Field(default=900_000, ge=0)
    # Overrides of those, in ms (0: none), by what is asked (JSON object):
    # `{"tool:mcp__files__write": 3600000, "mode:Incident": 600000}`. `tool:<name>` times an
    # MCP call of that tool; `mode:<mode>` a standing agent's decision or MCP call raised in
    # that mode. A tool's override wins over a mode's, a mode's over the kind's default.
    approval_timeout_overrides: dict[str, int] = Field(default_factory=dict)
    # The approvals' clock looks at least this often even when nothing is due (a wake that
    # was lost with its process).
    approval_clock_idle_ms: int = Field(default=300_000, ge=50)
    # Outbound webhooks: a delivery is tried this many times, waiting base * 2^(n-1) ms
    # (at most the cap) after the n-th failure, then moves to the dead-letter list. The
    # defaults keep trying for about two hours: a receiver down for an hour loses nothing.
    notification_max_attempts: int = Field(default=20, ge=1, le=100)
    notification_retry_base_ms: int = Field(default=1000, ge=10)
    notification_retry_cap_ms: int = Field(default=600_000, ge=10)
    # Set by `agentrt up` for its children: the Temporal server is the embedded one.
    temporal_embedded: bool = False

    @field_validator("allow_origin", "allowed_hosts", "provider_key_envs", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        # AGENTRT_ALLOW_ORIGIN="https://a.example,https://b.example"
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("approval_timeout_overrides")
    @classmethod
    def _check_timeout_overrides(cls, value: dict[str, int]) -> dict[str, int]:
        for key, ms in value.items():
            if not APPROVAL_OVERRIDE_KEY.fullmatch(key):
                raise ValueError(f"{key!r}: an override is `tool:<tool>` or `mode:<mode>`")
            if not 0 <= ms <= MAX_APPROVAL_TIMEOUT_MS:
                raise ValueError(
                    f"{key!r}: a timeout is 0 (none) to {MAX_APPROVAL_TIMEOUT_MS} ms (a year)"
                )
        return value

    @field_validator("device_flow_providers")
    @classmethod
    def _check_providers(cls, value: str | None) -> str | None:
        parse_providers(value)  # a ValueError here is a refusal to start
        return value

    @property
    def device_flow_provider_map(self) -> dict[str, DeviceFlowProvider]:
        """`qwen-oauth` and the configured providers, by providerId."""
        return all_providers(self.qwen_oauth_base_url, self.device_flow_providers)

    @property
    def token_configured(self) -> bool:
        """Whether the daemon has a bearer token; a route that mutates state refuses
        (`TokenRequired`) when it has none."""
        return bool(self.token)

    @property
    def loopback_bind(self) -> bool:
        """Whether the API binds a loopback address (`is_loopback_host`)."""
        return is_loopback_host(self.hostname)

    @property
    def resolved_workspace(self) -> Path:
        """The session agents' workspace, absolute: `<data-dir>/workspace` when unset."""
        if self.workspace is None:
            return self.resolved_data_dir / "workspace"
        return self.workspace.expanduser().resolve()

    @property
    def workspace_cwd(self) -> str:
        """`resolved_workspace` as a string: how sessions and the store name the workspace."""
        return str(self.resolved_workspace)

    @property
    def resolved_data_dir(self) -> Path:
        """The data dir, absolute (`~` expanded, symlinks resolved)."""
        return self.data_dir.expanduser().resolve()

    @property
    def resolved_database_url(self) -> str:
        """`DATABASE_URL`, or the SQLite file `<data-dir>/agentrt.db` when it is unset."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.resolved_data_dir / 'agentrt.db'}"

    @property
    def embedded_temporal_address(self) -> str:
        """Where the embedded dev server listens: `127.0.0.1:<temporal_port>`."""
        return f"127.0.0.1:{self.temporal_port}"

    @property
    def effective_temporal_address(self) -> str:
        """The Temporal frontend to connect to: `TEMPORAL_ADDRESS`, else the embedded one."""
        return self.temporal_address or self.embedded_temporal_address


def is_loopback_host(hostname: str) -> bool:
    """True for the loopback binds of spec 002 (127.0.0.1, localhost, ::1, [::1]), and
    for any other loopback address literal (127.0.0.2, ...)."""
    if hostname in LOOPBACK_HOSTNAMES:
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False
