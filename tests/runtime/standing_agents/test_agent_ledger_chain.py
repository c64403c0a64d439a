"""The ledger's hash chain and `agentrt ledger verify` (an export checked offline)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli import main
from runtime.standing_agents.ledger_chain import (
    CHAIN_FIELDS,
    canonical_turn,
    turn_hash,
    verify_chain,
)

T0 = datetime(2026, 11, 30, 18, 0, 0, 123_456, tzinfo=UTC)


def build_chain(count: int, first_seq: int = 1) -> list[dict[str, Any]]:
    """Turns as the ledger route emits them (camelCase), each hash chained on the previous."""
    turns: list[dict[str, Any]] = []
    prev: str | None = None
    for n in range(count):
        turn: dict[str, Any] = {
            "seq": first_seq + n,
            "eventKind": "AgentInitialized" if n == 0 else "AgentTick",
            "decisionKind": "Initialized" if n == 0 else "Heartbeat",
            "decision": {"actions": [{"tool": "soa_send_message"}], "reasoningSummary": "héllo"},
            "planInputHash": hashlib.sha256(str(n).encode()).hexdigest(),
            "llmCallId": f"agent/t/a1/e{n}/llm1" if n % 2 == 0 else None,
            "servedModel": "scripted" if n % 2 == 0 else None,
            "costUsd": 0.0125 * n,
            "createdAt": (T0 + timedelta(minutes=n)).isoformat(timespec="milliseconds")[:-6] + "Z",
            "prevHash": prev,
            "activeMode": "Strategic",  # shown by the route, not chained
        }
        turn["hash"] = turn_hash(prev, turn)
        prev = turn["hash"]
        turns.append(turn)
    return turns


def test_the_documented_canonical_form() -> None:
    """What a third party re-implements: sorted keys, compact separators, raw UTF-8."""
    turn = build_chain(1)[0]
    fields = {name: turn[name] for name in CHAIN_FIELDS}
    expected = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_turn(turn) == expected.encode("utf-8")
    assert b"h\xc3\xa9llo" in canonical_turn(turn)
    assert turn["hash"] == hashlib.sha256(b"" + expected.encode("utf-8")).hexdigest()
    second = build_chain(2)[1]
    assert (
        second["hash"] == hashlib.sha256(turn["hash"].encode() + canonical_turn(second)).hexdigest()
    )


def test_store_spelling_hashes_the_same() -> None:
    """The store side (snake_case, datetime, int cost) and the export agree byte for byte."""
    turn = build_chain(1)[0]
    stored = {
        "seq": 1,
        "event_kind": turn["eventKind"],
        "decision_kind": turn["decisionKind"],
        "decision": turn["decision"],
        "plan_input_hash": turn["planInputHash"],
        "llm_call_id": turn["llmCallId"],
        "served_model": turn["servedModel"],
        "cost_usd": 0,
        "created_at": T0,
        "prev_hash": None,
    }
    assert turn_hash(None, stored) == turn["hash"] == turn_hash("", stored)


def test_a_whole_chain_verifies() -> None:
    turns = build_chain(5)
    verdict = verify_chain(turns)
    assert verdict.ok and verdict.count == 5 and verdict.head == turns[-1]["hash"]
    assert verdict.first_bad_seq is None and verdict.reason is None
    assert verify_chain([]).model_dump() == {
        "ok": True,
        "count": 0,
        "head": None,
        "first_bad_seq": None,
        "reason": None,
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("eventKind", "OperatorMessage"),
        ("decisionKind", "Escalated"),
        ("decision", {"actions": []}),
        ("planInputHash", "0" * 64),
        ("llmCallId", "other"),
        ("servedModel", "gpt-4o"),
        ("costUsd", 99.0),
        ("createdAt", "2026-11-30T18:02:00.124Z"),
    ],
)
def test_a_tampered_field_breaks_at_that_seq(field: str, value: Any) -> None:
    turns = build_chain(5)
    turns[2][field] = value
    verdict = verify_chain(turns)
    assert not verdict.ok
    assert verdict.first_bad_seq == 3 and verdict.count == 3
    assert verdict.reason == "hash does not match the turn's content"


def test_a_rewritten_turn_with_a_fresh_hash_breaks_the_next_link() -> None:
    turns = build_chain(5)
    turns[1]["costUsd"] = 0.0
    turns[1]["hash"] = turn_hash(turns[1]["prevHash"], turns[1])
    verdict = verify_chain(turns)
    assert (verdict.ok, verdict.first_bad_seq) == (False, 3)
    assert verdict.reason == "prevHash does not match the previous turn's hash"


def test_fields_outside_the_chain_do_not_matter() -> None:
    turns = build_chain(3)
    turns[1]["activeMode"] = "Incident"
    assert verify_chain(turns).ok


@pytest.mark.parametrize(
    ("mutate", "bad_seq", "reason"),
    [
        (lambda t: [t[0], t[2], t[1], t[3]], 3, "seq 3 follows seq 1 (expected 2)"),
        (lambda t: [t[0], t[1], t[3]], 4, "seq 4 follows seq 2 (expected 3)"),
        (lambda t: t[1:], 2, "the first turn has a prevHash (not the start of a chain)"),
        (lambda t: [t[0], t[1], t[1]], 2, "seq 2 follows seq 2 (expected 3)"),
        (lambda t: [t[0], {**t[1], "hash": None}], 2, "missing hash"),
        (
            lambda t: [t[0], {k: v for k, v in t[1].items() if k != "decision"}],
            2,
            "missing field decision",
        ),
        (lambda t: [{**t[0], "seq": "1"}], None, "seq must be an integer"),
    ],
)
def test_reorder_drop_and_malformed_turns_break(
    mutate: Any, bad_seq: int | None, reason: str
) -> None:
    verdict = verify_chain(mutate(build_chain(4)))
    assert (verdict.ok, verdict.first_bad_seq, verdict.reason) == (False, bad_seq, reason)


def test_a_segment_verifies_when_asked() -> None:
    turns = build_chain(6, first_seq=40)
    assert verify_chain(turns[2:], require_genesis=False).ok
    assert not verify_chain(turns[2:]).ok


# --- agentrt ledger verify ------------------------------------------------------------------


def _ndjson(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    path = tmp_path / "ledger.ndjson"
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns))
    return path


def test_cli_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = build_chain(4)
    path = _ndjson(tmp_path, turns)
    assert main(["ledger", "verify", str(path)]) == 0
    assert capsys.readouterr().out == f"ok: 4 turns, head {turns[-1]['hash']}\n"


def test_cli_broken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = build_chain(4)
    turns[1]["decisionKind"] = "ActedWithTool"
    assert main(["ledger", "verify", str(_ndjson(tmp_path, turns))]) == 1
    assert capsys.readouterr().out == "broken at seq 2: hash does not match the turn's content\n"


def test_cli_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = build_chain(4)[1:]
    path = _ndjson(tmp_path, turns)
    assert main(["ledger", "verify", str(path)]) == 1
    assert main(["ledger", "verify", "--partial", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"ok: 3 turns, head {turns[-1]['hash']}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ('{"seq": 1}\n{not json\n', "line 2: bad JSON"),
        ("[1, 2]\n", "line 1: not a JSON object"),
        (b"\xff\xfe\n", "cannot read"),
    ],
)
def test_cli_unreadable_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "ledger.ndjson"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["ledger", "verify", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and message in captured.err


def test_the_real_command_needs_no_store_or_server(tmp_path: Path) -> None:
    """As a verifier runs it: no settings, database or Temporal, only the file."""
    turns = build_chain(3)
    path = _ndjson(tmp_path, turns)
    done = subprocess.run(
        [sys.executable, "-m", "cli", "ledger", "verify", str(path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"},
    )
    assert (done.returncode, done.stdout) == (0, f"ok: 3 turns, head {turns[-1]['hash']}\n")
    turns[0]["seq"] = 0
    bad = subprocess.run(
        [sys.executable, "-m", "cli", "ledger", "verify", str(_ndjson(tmp_path, turns))],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert bad.returncode == 1 and bad.stdout.startswith("broken at seq 0: ")
