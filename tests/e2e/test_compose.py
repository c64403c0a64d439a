"""docker-compose.yml, the Dockerfile and deploy/temporal/, checked without Docker.

Docker cannot run here, so these tests read the files: the services and their
images, the start-up order (depends_on conditions), where the API and the
worker find Temporal and PostgreSQL, the search attributes the namespace job
registers (against `runtime.temporal.SEARCH_ATTRIBUTES`), and that every file
the compose file mounts exists in the repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from temporalio.api.enums.v1 import IndexedValueType

from runtime.temporal import SEARCH_ATTRIBUTES

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"

POSTGRESQL = "postgresql"
SCHEMA_JOB = "temporal-schema-setup"
TEMPORAL = "temporal"
TEMPORAL_UI = "temporal-ui"
NAMESPACE_JOB = "temporal-create-namespace"
API = "api"
WORKER = "worker"

HEALTHY = "service_healthy"
COMPLETED = "service_completed_successfully"

# Who waits for whom, and for what: the start-up order of the stack.
EXPECTED_DEPENDS_ON: dict[str, dict[str, str]] = {
    SCHEMA_JOB: {POSTGRESQL: HEALTHY},
    TEMPORAL: {SCHEMA_JOB: COMPLETED},
    TEMPORAL_UI: {TEMPORAL: HEALTHY},
    NAMESPACE_JOB: {TEMPORAL: HEALTHY},
    API: {POSTGRESQL: HEALTHY, NAMESPACE_JOB: COMPLETED},
    WORKER: {POSTGRESQL: HEALTHY, NAMESPACE_JOB: COMPLETED},
}

EXPECTED_IMAGES = {
    POSTGRESQL: "postgres",
    SCHEMA_JOB: "temporalio/admin-tools",
    TEMPORAL: "temporalio/server",
    TEMPORAL_UI: "temporalio/ui",
    NAMESPACE_JOB: "temporalio/admin-tools",
}

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def _interpolate(value: str) -> str:
    """Compose's `${VAR:-default}` with an empty environment: the defaults."""

    def replace(match: re.Match[str]) -> str:
        op = match.group("op") or ""
        return match.group("arg") if op.endswith("-") else ""

    return _VARIABLE.sub(replace, value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = compose["services"]
    assert isinstance(found, dict)
    return found


def _environment(service: dict[str, Any]) -> dict[str, str | None]:
    raw = service.get("environment", {})
    if isinstance(raw, list):
        pairs = (item.split("=", 1) if "=" in item else (item, None) for item in raw)
        return {key: value for key, value in pairs}
    return {key: None if value is None else str(value) for key, value in raw.items()}


def _image_repository(service: dict[str, Any]) -> str:
    image = _interpolate(str(service["image"]))
    name, _, _tag = image.partition(":")
    return name


def _bind_mounts(service: dict[str, Any]) -> list[tuple[Path, PurePosixPath]]:
    """(host path in the repo, container path) of each bind mount from the repository."""
    mounts: list[tuple[Path, PurePosixPath]] = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") != "bind":
                continue
            source, target = str(volume["source"]), str(volume["target"])
        else:
            source, _, rest = str(volume).partition(":")
            target = rest.split(":")[0]
        if source.startswith((".", "/")):
            mounts.append((ROOT / _interpolate(source), PurePosixPath(target)))
    return mounts


def _host_path(service: dict[str, Any], container_path: PurePosixPath) -> Path | None:
    """The repository file behind a container path, through the service's bind mounts."""
    for host, target in _bind_mounts(service):
        if container_path == target:
            return host
        if container_path.is_relative_to(target):
            return host / container_path.relative_to(target)
    return None


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return command.split() if isinstance(command, str) else [str(part) for part in command]


def _job_script(service: dict[str, Any]) -> str:
    """The text of the shell script a one-shot job runs, read from the repository."""
    assert service["entrypoint"] == ["/bin/sh"]
    script = _host_path(service, PurePosixPath(_command(service)[0]))
    assert script is not None, "the job's script is not mounted from the repository"
    return script.read_text()


def test_services_exist(services: dict[str, dict[str, Any]]) -> None:
    expected = {POSTGRESQL, SCHEMA_JOB, TEMPORAL, TEMPORAL_UI, NAMESPACE_JOB, API, WORKER}
    assert expected <= set(services)


def test_images_follow_the_current_temporal_layout(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, repository in EXPECTED_IMAGES.items():
        assert _image_repository(services[name]) == repository, name
    for name, service in services.items():
        assert "auto-setup" not in str(service.get("image", "")), name
    assert "temporalio/auto-setup" not in COMPOSE_FILE.read_text()


def test_images_are_pinned(services: dict[str, dict[str, Any]]) -> None:
    for name in EXPECTED_IMAGES:
        tag = _interpolate(str(services[name]["image"])).partition(":")[2]
        assert tag and tag != "latest", f"{name} should pin a version, got {tag!r}"


def test_postgresql_healthcheck_uses_pg_isready(services: dict[str, dict[str, Any]]) -> None:
    test = services[POSTGRESQL]["healthcheck"]["test"]
    assert "pg_isready" in " ".join(test if isinstance(test, list) else [test])


def test_temporal_has_a_healthcheck(services: dict[str, dict[str, Any]]) -> None:
    # The UI and the namespace job wait for `service_healthy`, which needs one.
    assert services[TEMPORAL]["healthcheck"]["test"]


def test_api_healthcheck_sends_the_bearer(services: dict[str, dict[str, Any]]) -> None:
    test = services[API]["healthcheck"]["test"]
    assert isinstance(test, list)
    assert test[:3] == ["CMD", "python", "-c"]
    code = test[3]
    assert "/health" in code
    assert "Authorization" in code and "Bearer " in code
    assert "AGENTRT_TOKEN" in code
    assert "$" not in code  # compose would interpolate it on the host
    compile(code, "<healthcheck>", "exec")


@pytest.mark.parametrize("service_name", sorted(EXPECTED_DEPENDS_ON))
def test_depends_on_conditions(services: dict[str, dict[str, Any]], service_name: str) -> None:
    depends_on = services[service_name]["depends_on"]
    assert isinstance(depends_on, dict), "use the long form, with conditions"
    for dependency, condition in EXPECTED_DEPENDS_ON[service_name].items():
        assert dependency in depends_on, f"{service_name} must wait for {dependency}"
        assert depends_on[dependency]["condition"] == condition, (service_name, dependency)
    for dependency, spec in depends_on.items():
        assert dependency in services
        if spec["condition"] == HEALTHY:
            assert "healthcheck" in services[dependency], dependency


@pytest.mark.parametrize("service_name", [API, WORKER])
def test_api_and_worker_build_from_the_dockerfile(
    services: dict[str, dict[str, Any]], service_name: str
) -> None:
    build = services[service_name]["build"]
    context, dockerfile = (
        (build, "Dockerfile")
        if isinstance(build, str)
        else (
            build.get("context", "."),
            build.get("dockerfile", "Dockerfile"),
        )
    )
    assert (ROOT / context / dockerfile).resolve() == DOCKERFILE


@pytest.mark.parametrize("service_name", [API, WORKER])
def test_api_and_worker_reach_temporal_and_postgresql(
    services: dict[str, dict[str, Any]], service_name: str
) -> None:
    env = _environment(services[service_name])

    host, _, port = str(env["TEMPORAL_ADDRESS"]).partition(":")
    assert host == TEMPORAL and port == "7233"
    assert _image_repository(services[host]) == "temporalio/server"

    url = urlsplit(_interpolate(str(env["DATABASE_URL"])))
    assert url.scheme in ("postgresql", "postgres", "postgresql+psycopg")
    assert url.hostname == POSTGRESQL and (url.port or 5432) == 5432
    database = url.path.lstrip("/")
    assert database == "agentrt"
    # Its own database, created by the schema job (Temporal's are temporal*).
    assert _environment(services[SCHEMA_JOB])["AGENTRT_DB"] == database

    assert env["TEMPORAL_NAMESPACE"] == _environment(services[NAMESPACE_JOB])["TEMPORAL_NAMESPACE"]
    assert env.get("AGENTRT_WORKSPACE")


def test_api_command_binds_all_interfaces_with_a_required_token(
    services: dict[str, dict[str, Any]],
) -> None:
    api = services[API]
    command = _command(api)
    assert command[0] == "api"
    assert command[command.index("--hostname") + 1] == "0.0.0.0"
    token = str(_environment(api)["AGENTRT_TOKEN"])
    # `${AGENTRT_TOKEN:?...}`: compose refuses to start without one.
    assert token.startswith("${AGENTRT_TOKEN:?")
    assert any(str(port).endswith("4170") for port in api["ports"])


def test_worker_command(services: dict[str, dict[str, Any]]) -> None:
    assert _command(services[WORKER]) == ["worker"]
    assert "AGENTRT_TOKEN" not in _environment(services[WORKER])


def test_schema_job_sets_up_both_temporal_databases(
    services: dict[str, dict[str, Any]],
) -> None:
    job = services[SCHEMA_JOB]
    env = _environment(job)
    assert env["DB"] == "postgres12"
    assert env["POSTGRES_SEEDS"] == POSTGRESQL
    script = _job_script(job)
    for step in ("temporal-sql-tool", "create", "setup-schema", "update-schema"):
        assert step in script
    assert "temporal_visibility" in script
    # The server reads the same database settings.
    server_env = _environment(services[TEMPORAL])
    for key in ("DB", "DB_PORT", "POSTGRES_SEEDS", "POSTGRES_USER", "POSTGRES_PWD"):
        assert server_env[key] == env[key], key


def test_namespace_job_registers_the_search_attributes(
    services: dict[str, dict[str, Any]],
) -> None:
    job = services[NAMESPACE_JOB]
    env = _environment(job)
    registered = dict(pair.split("=", 1) for pair in str(env["AGENTRT_SEARCH_ATTRIBUTES"]).split())
    expected = {
        name: IndexedValueType.Name(kind).removeprefix("INDEXED_VALUE_TYPE_").lower()
        for name, kind in SEARCH_ATTRIBUTES.items()
    }
    assert {name: kind.lower() for name, kind in registered.items()} == expected
    assert set(registered) == {"AgentrtKind", "AgentrtTenant", "AgentrtStatus", "AgentrtMode"}
    assert all(kind == "Keyword" for kind in registered.values())

    host = str(env["TEMPORAL_ADDRESS"]).partition(":")[0]
    assert host == TEMPORAL
    script = _job_script(job)
    assert "temporal operator namespace create" in script
    assert "temporal operator search-attribute create" in script
    assert "--type" in script and "AGENTRT_SEARCH_ATTRIBUTES" in script


def test_every_mounted_file_exists(services: dict[str, dict[str, Any]]) -> None:
    mounts = [(name, host) for name, svc in services.items() for host, _ in _bind_mounts(svc)]
    assert mounts, "the Temporal jobs mount their scripts from deploy/temporal/"
    for name, host in mounts:
        assert host.exists(), f"{name} mounts {host.relative_to(ROOT)}, which is missing"
        assert host.resolve().is_relative_to(ROOT), f"{name} mounts {host} outside the repo"


def test_temporal_dynamic_config_file_is_mounted(services: dict[str, dict[str, Any]]) -> None:
    server = services[TEMPORAL]
    relative = str(_environment(server)["DYNAMIC_CONFIG_FILE_PATH"])
    # The server resolves it against its config root, /etc/temporal.
    host = _host_path(server, PurePosixPath("/etc/temporal") / relative)
    assert host is not None and host.is_file(), relative
    config = yaml.safe_load(host.read_text())
    assert isinstance(config, dict)
    for key, values in config.items():
        assert isinstance(values, list) and all("value" in v for v in values), key


def test_named_volumes_are_declared(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    declared = set(compose.get("volumes") or {})
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = str(volume).partition(":")[0] if isinstance(volume, str) else ""
            if source and not source.startswith((".", "/")):
                assert source in declared, f"{name} uses undeclared volume {source}"


def _dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def test_dockerfile_entrypoint_is_agentrt() -> None:
    instructions = _dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    entrypoints = [rest for keyword, rest in instructions if keyword == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == ["agentrt"]
    assert any(keyword == "RUN" and "pip install" in rest for keyword, rest in instructions)


def test_dockerfile_runs_as_a_non_root_user() -> None:
    users = [rest for keyword, rest in _dockerfile_instructions() if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")


def test_dockerignore_keeps_local_state_out_of_the_build() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".venv", ".data", ".git"} <= ignored
