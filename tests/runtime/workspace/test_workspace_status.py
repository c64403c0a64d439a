"""The redaction helpers of GET /workspace/env: proxies as host:port, presence only."""

from __future__ import annotations

import pytest

from runtime.workspace.status import SECRET_VARS, env_cells, no_proxy_hosts, proxy_host


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("http://proxy.internal:1080", "proxy.internal:1080"),
        ("http://user:secret@proxy.internal:1080/some/path?q=1", "proxy.internal:1080"),
        ("socks5://u@10.0.0.1:9050", "10.0.0.1:9050"),
        ("proxy.internal:3128", "proxy.internal:3128"),
        ("https://proxy.example", "proxy.example"),
        ("http://[::1]:8080", "[::1]:8080"),
        ("", None),
        ("http://proxy:notaport", None),
    ],
)
def test_proxy_host(raw: str, shown: str | None) -> None:
    assert proxy_host(raw) == shown


def test_no_proxy_is_a_host_list() -> None:
    assert no_proxy_hosts("127.0.0.1, localhost,,u:p@internal") == "127.0.0.1,localhost,internal"


def test_env_cells_never_carry_a_secret() -> None:
    environ = {name: f"value-of-{name}" for name in SECRET_VARS}
    environ["https_proxy"] = "http://a:b@p.example:8080"
    environ["ALL_PROXY"] = "::::"
    cells = env_cells(environ)
    assert "value-of-" not in repr(cells) and "a:b" not in repr(cells)
    secrets = [c for c in cells if c.kind == "env_var"]
    assert {c.name for c in secrets} == set(SECRET_VARS)
    assert all(c.present is True and c.value is None for c in secrets)
    proxies = {c.name: c for c in cells if c.kind == "proxy"}
    assert proxies["HTTPS_PROXY"].value == "p.example:8080"
    assert proxies["ALL_PROXY"].status == "warning"
    assert proxies["ALL_PROXY"].error_kind == "parse_error"
    assert proxies["ALL_PROXY"].value is None
