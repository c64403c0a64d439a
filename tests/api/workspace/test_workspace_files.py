"""The workspace file routes: GET /file, /file/bytes, /stat, /list, /glob, POST /file/write
and /file/edit (spec session-daemon-http-protocol), every error kind, the write race,
symlink escapes, encoding preservation, and the strict-mutation guard.

No Temporal is needed: the app is built without a client and its lifespan is not run.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import create_app
from runtime.settings import Settings

TOKEN = "files-token"
NO_STORE = {"cache-control": "no-store", "x-content-type-options": "nosniff"}

Client = Callable[..., Awaitable[httpx.AsyncClient]]


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.txt").write_bytes(b"hello workspace\n")
    (workspace / "multi.txt").write_bytes(b"line1\nline2\nline3\nline4\n")
    (workspace / "bin.dat").write_bytes(bytes(range(256)))
    (workspace / "sub").mkdir()
    (workspace / "sub" / "inner.txt").write_bytes(b"inner\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_bytes(b"secret\n")
    os.symlink(tmp_path / "outside" / "secret.txt", workspace / "escape_link")
    os.symlink(tmp_path / "outside", workspace / "escape_dir")
    os.symlink(workspace / "README.txt", workspace / "inside_link")
    return workspace


@pytest.fixture
async def client(ws: Path, tmp_path: Path) -> AsyncIterator[Client]:
    clients: list[httpx.AsyncClient] = []

    async def make(token: str | None = TOKEN) -> httpx.AsyncClient:
        settings = Settings(workspace=ws, data_dir=tmp_path / ".data", port=4170, token=token)
        app = create_app(settings)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        c = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://127.0.0.1:4170",
            headers=headers,
        )
        clients.append(c)
        return c

    yield make
    for c in clients:
        await c.aclose()


def assert_error(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["errorKind"] == kind
    assert body["status"] == status
    assert isinstance(body["error"], str) and isinstance(body["hint"], str)
    for name, value in NO_STORE.items():
        assert response.headers[name] == value
    return body


# -- reads ------------------------------------------------------------------------------


async def test_read_file_whole(client: Client, ws: Path) -> None:
    c = await client()
    response = await c.get("/file", params={"path": "README.txt"})
    assert response.status_code == 200
    for name, value in NO_STORE.items():
        assert response.headers[name] == value
    assert response.json() == {
        "kind": "file",
        "path": "README.txt",
        "content": "hello workspace\n",
        "encoding": "utf-8",
        "bom": False,
        "lineEnding": "lf",
        "sizeBytes": 16,
        "returnedBytes": 16,
        "truncated": False,
        "hash": sha(b"hello workspace\n"),
        "matchedIgnore": None,
        "originalLineCount": 2,
        "nextCursor": None,
        "hasMore": False,
    }
    # An absolute path inside the workspace answers the relative path.
    absolute = await c.get("/file", params={"path": str(ws / "README.txt")})
    assert absolute.json()["path"] == "README.txt"
    # A symlink that stays inside is followed; the answer names the real file.
    assert (await c.get("/file", params={"path": "inside_link"})).json()["path"] == "README.txt"


async def test_read_file_slices_keep_the_whole_file_hash(client: Client, ws: Path) -> None:
    c = await client()
    whole = sha((ws / "multi.txt").read_bytes())
    by_lines = (await c.get("/file?path=multi.txt&line=2&limit=2")).json()
    assert by_lines["content"] == "line2\nline3"
    assert by_lines["returnedBytes"] == 11
    assert by_lines["truncated"] is True and by_lines["hasMore"] is True
    assert by_lines["originalLineCount"] == 5
    assert by_lines["hash"] == whole
    by_bytes = (await c.get("/file?path=multi.txt&maxBytes=7")).json()
    assert by_bytes["content"] == "line1\nl"
    assert (by_bytes["returnedBytes"], by_bytes["truncated"]) == (7, True)
    assert by_bytes["hash"] == whole


async def test_read_file_never_splits_a_character(client: Client, ws: Path) -> None:
    (ws / "accents.txt").write_text("é" * 4, encoding="utf-8")
    c = await client()
    body = (await c.get("/file?path=accents.txt&maxBytes=3")).json()
    assert (body["content"], body["returnedBytes"]) == ("é", 2)


async def test_read_file_errors(client: Client, ws: Path) -> None:
    c = await client()
    assert_error(await c.get("/file"), 400, "parse_error")
    assert_error(await c.get("/file?path=nope.txt"), 404, "path_not_found")
    assert_error(await c.get("/file?path=../../../etc/passwd"), 400, "path_outside_workspace")
    assert_error(await c.get("/file?path=/etc/passwd"), 400, "path_outside_workspace")
    assert_error(await c.get("/file?path=escape_link"), 400, "symlink_escape")
    assert_error(await c.get("/file?path=escape_dir/secret.txt"), 400, "symlink_escape")
    body = assert_error(await c.get("/file?path=bin.dat"), 422, "binary_file")
    assert body["hint"] == "use readBytes for binary content"
    assert_error(await c.get("/file?path=sub"), 400, "parse_error")
    assert_error(await c.get("/file?path=README.txt&maxBytes=0"), 400, "parse_error")
    assert_error(await c.get("/file?path=README.txt&line=x"), 400, "parse_error")


async def test_read_file_too_large(
    client: Client, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("runtime.workspace.fs.MAX_TEXT_BYTES", 10)
    c = await client()
    body = assert_error(await c.get("/file?path=README.txt"), 413, "file_too_large")
    assert "/file/bytes" in body["hint"]


async def test_read_bytes_windows(client: Client, ws: Path) -> None:
    c = await client()
    window = (await c.get("/file/bytes?path=bin.dat&maxBytes=16")).json()
    assert window == {
        "kind": "file_bytes",
        "path": "bin.dat",
        "offset": 0,
        "sizeBytes": 256,
        "returnedBytes": 16,
        "truncated": True,
        "contentBase64": base64.b64encode(bytes(range(16))).decode(),
    }
    tail = (await c.get("/file/bytes?path=bin.dat&offset=250")).json()
    assert base64.b64decode(tail["contentBase64"]) == bytes(range(250, 256))
    assert tail["truncated"] is False and "hash" not in tail
    whole = (await c.get("/file/bytes?path=bin.dat")).json()
    assert whole["hash"] == sha(bytes(range(256)))
    assert whole["returnedBytes"] == 256
    assert_error(await c.get("/file/bytes?path=bin.dat&maxBytes=262145"), 400, "parse_error")
    assert (await c.get("/file/bytes?path=bin.dat&maxBytes=262144")).status_code == 200
    assert_error(await c.get("/file/bytes?path=escape_link"), 400, "symlink_escape")
    assert_error(await c.get("/file/bytes?path=../x"), 400, "path_outside_workspace")
    assert_error(await c.get("/file/bytes?path=gone"), 404, "path_not_found")


async def test_stat_list_glob(client: Client, ws: Path) -> None:
    c = await client()
    info = (await c.get("/stat?path=README.txt")).json()
    assert (info["kind"], info["path"], info["type"], info["sizeBytes"]) == (
        "stat",
        "README.txt",
        "file",
        16,
    )
    assert isinstance(info["modifiedMs"], float)
    assert (await c.get("/stat?path=sub")).json()["type"] == "directory"
    assert_error(await c.get("/stat?path=nope"), 404, "path_not_found")
    assert_error(await c.get("/stat?path=escape_dir"), 400, "symlink_escape")

    listing = (await c.get("/list?path=.")).json()
    assert listing["kind"] == "list" and listing["path"] == "."
    kinds = {e["name"]: e["kind"] for e in listing["entries"]}
    assert kinds["sub"] == "directory" and kinds["README.txt"] == "file"
    assert kinds["escape_link"] == "symlink" and kinds["escape_dir"] == "symlink"
    assert all(e["ignored"] is False for e in listing["entries"])
    assert (await c.get("/list?path=sub")).json()["entries"] == [
        {"name": "inner.txt", "kind": "file", "ignored": False}
    ]
    assert_error(await c.get("/list?path=escape_dir"), 400, "symlink_escape")
    assert_error(await c.get("/list?path=README.txt"), 400, "parse_error")

    found = (await c.get("/glob?pattern=*.txt")).json()
    assert found["kind"] == "glob" and found["cwd"] == ""
    assert sorted(found["matches"]) == ["README.txt", "multi.txt"]
    assert found["count"] == 2 and found["truncated"] is False
    deep = (await c.get("/glob", params={"pattern": "**/*.txt"})).json()
    assert "sub/inner.txt" in deep["matches"]
    assert not any("secret" in m for m in deep["matches"])  # never through escape_dir
    assert_error(await c.get("/glob"), 400, "parse_error")
    assert_error(await c.get("/glob?pattern=*&cwd=../"), 400, "path_outside_workspace")


# -- writes -----------------------------------------------------------------------------


async def test_write_create_then_replace(client: Client, ws: Path) -> None:
    c = await client()
    created = await c.post(
        "/file/write", json={"path": "new.txt", "content": "v1\n", "mode": "create"}
    )
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    assert created.json() == {
        "kind": "file_write",
        "path": "new.txt",
        "mode": "create",
        "created": True,
        "sizeBytes": 3,
        "hash": sha(b"v1\n"),
        "encoding": "utf-8",
        "bom": False,
        "lineEnding": "lf",
        "matchedIgnore": None,
    }
    again = await c.post("/file/write", json={"path": "new.txt", "content": "x", "mode": "create"})
    assert_error(again, 409, "file_already_exists")
    assert (ws / "new.txt").read_bytes() == b"v1\n"

    replaced = await c.post(
        "/file/write",
        json={
            "path": "new.txt",
            "content": "v2\n",
            "mode": "replace",
            "expectedHash": sha(b"v1\n"),
        },
    )
    assert replaced.status_code == 200
    assert replaced.json()["created"] is False and replaced.json()["hash"] == sha(b"v2\n")
    stale = await c.post(
        "/file/write",
        json={
            "path": "new.txt",
            "content": "v3\n",
            "mode": "replace",
            "expectedHash": sha(b"v1\n"),
        },
    )
    body = assert_error(stale, 409, "hash_mismatch")
    assert body["error"] == "expected " + sha(b"v1\n") + ", found " + sha(b"v2\n")
    assert (ws / "new.txt").read_bytes() == b"v2\n"
    assert sorted(p.name for p in ws.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize(
    ("body", "status", "kind"),
    [
        ({"path": "new.txt", "content": "v3\n", "mode": "replace"}, 400, "parse_error"),
        (
            {"path": "new.txt", "content": "x", "mode": "replace", "expectedHash": "md5:abc"},
            400,
            "parse_error",
        ),
        (
            {
                "path": "new.txt",
                "content": "x",
                "mode": "replace",
                "expectedHash": "sha256:" + "A" * 64,
            },
            400,
            "parse_error",
        ),
        ({"path": "new.txt", "content": "x", "mode": "append"}, 400, "parse_error"),
        ({"path": "new.txt", "content": "x"}, 400, "parse_error"),
        ({"path": "new.txt", "content": 5, "mode": "create"}, 400, "parse_error"),
        ({"content": "x", "mode": "create"}, 400, "parse_error"),
        (
            {"path": "n.txt", "content": "x", "mode": "create", "encoding": "latin1"},
            400,
            "parse_error",
        ),
        (
            {"path": "../outside.txt", "content": "x", "mode": "create"},
            400,
            "path_outside_workspace",
        ),
        (
            {"path": "/etc/agentrt-x", "content": "x", "mode": "create"},
            400,
            "path_outside_workspace",
        ),
        ({"path": "escape_dir/new.txt", "content": "x", "mode": "create"}, 400, "symlink_escape"),
        (
            {
                "path": "escape_link",
                "content": "x",
                "mode": "replace",
                "expectedHash": sha(b"secret\n"),
            },
            400,
            "symlink_escape",
        ),
        ({"path": "sub/deeper/file.txt", "content": "x", "mode": "create"}, 404, "path_not_found"),
        (
            {"path": "missing.txt", "content": "x", "mode": "replace", "expectedHash": sha(b"")},
            404,
            "path_not_found",
        ),
    ],
)
async def test_write_errors(
    client: Client, ws: Path, tmp_path: Path, body: dict[str, Any], status: int, kind: str
) -> None:
    c = await client()
    assert_error(await c.post("/file/write", json=body), status, kind)
    assert (tmp_path / "outside" / "secret.txt").read_bytes() == b"secret\n"
    assert not (tmp_path / "outside" / "new.txt").exists()
    assert not (ws / "sub" / "deeper").exists()


async def test_write_invalid_json(client: Client) -> None:
    c = await client()
    response = await c.post(
        "/file/write", content=b"{bad", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Invalid JSON in request body"}


async def test_replace_preserves_the_profile_unless_overridden(client: Client, ws: Path) -> None:
    original = b"\xef\xbb\xbfa\r\nb\r\n"
    (ws / "win.txt").write_bytes(original)
    c = await client()
    read = (await c.get("/file?path=win.txt")).json()
    assert (read["bom"], read["lineEnding"], read["content"]) == (True, "crlf", "a\nb\n")
    kept = await c.post(
        "/file/write",
        json={
            "path": "win.txt",
            "content": "c\nd\n",
            "mode": "replace",
            "expectedHash": sha(original),
        },
    )
    assert (ws / "win.txt").read_bytes() == b"\xef\xbb\xbfc\r\nd\r\n"
    assert kept.json()["lineEnding"] == "crlf" and kept.json()["bom"] is True
    overridden = await c.post(
        "/file/write",
        json={
            "path": "win.txt",
            "content": "e\n",
            "mode": "replace",
            "expectedHash": kept.json()["hash"],
            "bom": False,
            "lineEnding": "lf",
        },
    )
    assert overridden.status_code == 200
    assert (ws / "win.txt").read_bytes() == b"e\n"
    utf16 = await c.post(
        "/file/write",
        json={
            "path": "u16.txt",
            "content": "hé\n",
            "mode": "create",
            "encoding": "utf-16le",
            "bom": True,
        },
    )
    assert (ws / "u16.txt").read_bytes() == b"\xff\xfe" + "hé\n".encode("utf-16le")
    assert utf16.json()["encoding"] == "utf-16le"
    assert (await c.get("/file?path=u16.txt")).json()["content"] == "hé\n"


async def test_eight_concurrent_replaces_one_wins(client: Client, ws: Path) -> None:
    (ws / "race.txt").write_bytes(b"start\n")
    c = await client()
    start = sha(b"start\n")

    async def replace(i: int) -> httpx.Response:
        return await c.post(
            "/file/write",
            json={
                "path": "race.txt",
                "content": f"writer {i}\n",
                "mode": "replace",
                "expectedHash": start,
            },
        )

    answers = await asyncio.gather(*(replace(i) for i in range(8)))
    winners = [r for r in answers if r.status_code == 200]
    losers = [r for r in answers if r.status_code == 409]
    assert len(winners) == 1 and len(losers) == 7
    assert all(r.json()["errorKind"] == "hash_mismatch" for r in losers)
    assert sha((ws / "race.txt").read_bytes()) == winners[0].json()["hash"]
    assert [p.name for p in ws.iterdir() if p.name.startswith(".race.txt")] == []


# -- edit -------------------------------------------------------------------------------


async def test_edit_preserves_crlf_and_bom(client: Client, ws: Path) -> None:
    original = b"\xef\xbb\xbftimeout: 30000\r\nretries: 1\r\n"
    (ws / "edit.txt").write_bytes(original)
    c = await client()
    response = await c.post(
        "/file/edit",
        json={
            "path": "edit.txt",
            "oldText": "timeout: 30000",
            "newText": "timeout: 60000\nverbose: true",
            "expectedHash": sha(original),
        },
    )
    assert response.status_code == 200, response.text
    expected = b"\xef\xbb\xbftimeout: 60000\r\nverbose: true\r\nretries: 1\r\n"
    assert (ws / "edit.txt").read_bytes() == expected
    assert response.json() == {
        "kind": "file_edit",
        "path": "edit.txt",
        "replacements": 1,
        "sizeBytes": len(expected),
        "hash": sha(expected),
        "encoding": "utf-8",
        "bom": True,
        "lineEnding": "crlf",
        "matchedIgnore": None,
    }
    for name, value in NO_STORE.items():
        assert response.headers[name] == value
    assert [p.name for p in ws.iterdir() if p.name.endswith(".tmp")] == []


async def test_edit_errors(client: Client, ws: Path) -> None:
    data = b"timeout: 1\nretries: 1\nretries: 1\n"
    (ws / "e.txt").write_bytes(data)
    c = await client()
    good = sha(data)

    async def edit(**fields: Any) -> httpx.Response:
        body = {"path": "e.txt", "oldText": "timeout: 1", "newText": "x", "expectedHash": good}
        body.update(fields)
        return await c.post("/file/edit", json={k: v for k, v in body.items() if v is not None})

    body = assert_error(await edit(oldText="nothing here"), 422, "text_not_found")
    assert "nothing here" in body["hint"]
    assert_error(await edit(oldText="retries: 1"), 422, "ambiguous_text_match")
    assert_error(await edit(oldText=""), 400, "parse_error")
    assert_error(await edit(expectedHash=None), 400, "parse_error")
    assert_error(await edit(expectedHash="sha256:abc"), 400, "parse_error")
    assert_error(await edit(expectedHash=sha(b"other")), 409, "hash_mismatch")
    assert_error(await edit(path="../../etc/hostname"), 400, "path_outside_workspace")
    assert_error(await edit(path="escape_link"), 400, "symlink_escape")
    assert_error(await edit(path="escape_dir/secret.txt"), 400, "symlink_escape")
    assert_error(await edit(path="nope.txt"), 404, "path_not_found")
    assert_error(
        await edit(path="bin.dat", expectedHash=sha(bytes(range(256)))), 422, "binary_file"
    )
    assert (ws / "e.txt").read_bytes() == data
    done = await edit()
    assert done.status_code == 200 and (ws / "e.txt").read_bytes().startswith(b"x\n")


# -- the strict mutation guard --------------------------------------------------------------


async def test_mutations_need_a_configured_token_on_loopback(client: Client, ws: Path) -> None:
    c = await client(token=None)
    assert (await c.get("/file?path=README.txt")).status_code == 200  # reads stay open
    write = await c.post("/file/write", json={"path": "t.txt", "content": "t\n", "mode": "create"})
    assert write.status_code == 401
    assert write.json()["code"] == "token_required"
    assert write.headers["cache-control"] == "no-store"
    edit = await c.post(
        "/file/edit",
        json={
            "path": "README.txt",
            "oldText": "hello",
            "newText": "bye",
            "expectedHash": sha(b"hello workspace\n"),
        },
    )
    assert edit.status_code == 401 and edit.json()["code"] == "token_required"
    assert not (ws / "t.txt").exists()
    assert (ws / "README.txt").read_bytes() == b"hello workspace\n"


async def test_reads_need_the_token_when_one_is_configured(client: Client) -> None:
    c = await client()
    anonymous = httpx.AsyncClient(transport=c._transport, base_url="http://127.0.0.1:4170")
    async with anonymous:
        assert (await anonymous.get("/file?path=README.txt")).status_code == 401


async def test_mixed_line_endings_keep_their_bytes(client: Client, ws: Path) -> None:
    original = b"a\r\nb\nc\r\n"
    (ws / "mixed.txt").write_bytes(original)
    c = await client()
    read = (await c.get("/file?path=mixed.txt")).json()
    assert (read["lineEnding"], read["content"]) == ("lf", "a\r\nb\nc\r\n")
    edit = await c.post(
        "/file/edit",
        json={"path": "mixed.txt", "oldText": "b", "newText": "B", "expectedHash": sha(original)},
    )
    assert edit.status_code == 200
    assert (ws / "mixed.txt").read_bytes() == b"a\r\nB\nc\r\n"


async def test_read_cursor_is_refused(client: Client) -> None:
    c = await client()
    assert_error(await c.get("/file?path=README.txt&cursor=abc"), 400, "parse_error")


async def test_utf16_needs_its_bom_and_writes_stay_under_the_text_limit(
    client: Client, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = await client()
    implicit = await c.post(
        "/file/write",
        json={"path": "u.txt", "content": "x\n", "mode": "create", "encoding": "utf-16be"},
    )
    assert implicit.status_code == 201 and implicit.json()["bom"] is True
    assert (ws / "u.txt").read_bytes() == b"\xfe\xff" + "x\n".encode("utf-16be")
    refused = await c.post(
        "/file/write",
        json={
            "path": "v.txt",
            "content": "x",
            "mode": "create",
            "encoding": "utf-16le",
            "bom": False,
        },
    )
    assert_error(refused, 400, "parse_error")
    monkeypatch.setattr("runtime.workspace.fs.MAX_TEXT_BYTES", 4)
    big = await c.post(
        "/file/write", json={"path": "big.txt", "content": "12345", "mode": "create"}
    )
    assert_error(big, 413, "file_too_large")
    assert not (ws / "v.txt").exists() and not (ws / "big.txt").exists()


async def test_a_workspace_configured_through_a_symlink(tmp_path: Path, ws: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(ws, alias)
    settings = Settings(workspace=alias, data_dir=tmp_path / ".data", port=4170)
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:4170") as c:
        for name in (str(alias / "README.txt"), str(ws / "README.txt"), "README.txt"):
            response = await c.get("/file", params={"path": name})
            assert response.status_code == 200 and response.json()["path"] == "README.txt"
        outside = await c.get(
            "/file", params={"path": str(alias / ".." / "outside" / "secret.txt")}
        )
        assert_error(outside, 400, "path_outside_workspace")


async def test_ignored_paths_are_readable_and_writable_and_say_so(client: Client, ws: Path) -> None:
    """Spec 002: the caller named the path, so it is allowed; `matchedIgnore` says why."""
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    c = await client()
    written = await c.post(
        "/file/write", json={"path": "build/out.txt", "content": "x", "mode": "create"}
    )
    assert written.status_code == 201 and written.json()["matchedIgnore"] == "directory"
    logged = await c.post("/file/write", json={"path": "a.log", "content": "x", "mode": "create"})
    assert logged.json()["matchedIgnore"] == "file"
    assert (await c.get("/file", params={"path": "a.log"})).json()["matchedIgnore"] == "file"
    plain = await c.post("/file/write", json={"path": "b.txt", "content": "x", "mode": "create"})
    assert plain.json()["matchedIgnore"] is None
    listed = (await c.get("/list", params={"path": "."})).json()
    flags = {e["name"]: e["ignored"] for e in listed["entries"]}
    assert flags["build"] is True and flags["a.log"] is True and flags["b.txt"] is False
    inside = (await c.get("/list", params={"path": "build"})).json()
    assert inside["matchedIgnore"] == "file" and inside["entries"][0]["ignored"] is True


async def test_file_system_refusals_are_file_errors_never_500(client: Client, ws: Path) -> None:
    c = await client()
    too_long = "x" * 300  # one path component past the file system's 255-byte limit
    for response in (
        await c.get("/list", params={"path": too_long}),
        await c.get("/glob", params={"pattern": "*", "cwd": too_long}),
        await c.post("/file/write", json={"path": too_long, "content": "x", "mode": "create"}),
    ):
        assert response.status_code < 500, response.text
        assert {"errorKind", "error", "hint", "status"} <= set(response.json())


async def test_a_long_valid_name_can_be_written(client: Client, ws: Path) -> None:
    """The temporary file's name must not push a valid name past the limit."""
    c = await client()
    name = "n" * 250
    created = await c.post("/file/write", json={"path": name, "content": "x", "mode": "create"})
    assert created.status_code == 201, created.text
    assert (ws / name).read_text() == "x"


async def test_a_symlinked_gitignore_is_not_followed(
    client: Client, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-ignore"
    outside.write_text("secretline\n")
    (ws / ".gitignore").symlink_to(outside)
    (ws / "secretline").write_text("x")
    c = await client()
    read = await c.get("/file", params={"path": "secretline"})
    assert read.status_code == 200 and read.json()["matchedIgnore"] is None


async def test_the_data_dir_inside_the_workspace_is_not_served(ws: Path) -> None:
    """`--workspace .` with the default `.data`: the store and credentials stay private."""
    data_dir = ws / ".data"
    (data_dir / "credentials").mkdir(parents=True)
    (data_dir / "credentials" / "github.json").write_text('{"access_token": "t"}')
    settings = Settings(workspace=ws, data_dir=data_dir, port=4170, token=TOKEN)
    app = create_app(settings)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://127.0.0.1:4170",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as c:
        read = await c.get("/file", params={"path": ".data/credentials/github.json"})
        assert_error(read, 403, "permission_denied")
        listed = await c.get("/list", params={"path": ".data"})
        assert_error(listed, 403, "permission_denied")
        written = await c.post(
            "/file/write",
            json={"path": ".data/credentials/evil.json", "content": "x", "mode": "create"},
        )
        assert_error(written, 403, "permission_denied")
        assert not (data_dir / "credentials" / "evil.json").exists()


async def test_the_default_workspace_inside_the_data_dir_is_served(tmp_path: Path) -> None:
    """`make run`'s default: the workspace is `<data-dir>/workspace`."""
    data_dir = tmp_path / ".data"
    workspace = data_dir / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.txt").write_text("hi\n")
    settings = Settings(data_dir=data_dir, port=4170, token=TOKEN)
    assert settings.resolved_workspace == workspace.resolve()
    app = create_app(settings)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://127.0.0.1:4170",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as c:
        read = await c.get("/file", params={"path": "a.txt"})
        assert read.status_code == 200, read.text
        written = await c.post(
            "/file/write", json={"path": "b.txt", "content": "x", "mode": "create"}
        )
        assert written.status_code == 201, written.text
