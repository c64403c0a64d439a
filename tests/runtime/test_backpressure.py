"""The SSE backpressure state machine (runtime.backpressure), without I/O."""

from __future__ import annotations

import pytest

from runtime.backpressure import (
    DEFAULT_MAX_QUEUED,
    Backlog,
    BackpressureState,
    Offer,
    parse_max_queued,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, DEFAULT_MAX_QUEUED), ("16", 16), ("2048", 2048), ("256", 256), ("0016", 16)],
)
def test_max_queued_accepted(raw: str | None, expected: int) -> None:
    assert parse_max_queued(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "5", "15", "2049", "4096", "abc", "16.0", "-16", " 16", "1e3", "0x10", "١٦"]
)
def test_max_queued_refused(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_max_queued(raw)


def test_warns_once_at_three_quarters() -> None:
    state = BackpressureState(16)
    outcomes = [state.offer() for _ in range(16)]
    # 12 of 16 is 75 %: the 12th frame warns, the others are plain accepts.
    assert outcomes[11] is Offer.WARN
    assert [i for i, o in enumerate(outcomes) if o is Offer.WARN] == [11]
    assert state.queued == 16
    assert state.warnings == 1


def test_overflow_evicts_and_stays_evicted() -> None:
    state = BackpressureState(16)
    for _ in range(16):
        state.offer()
    assert state.offer() is Offer.EVICT
    assert state.evicted
    assert state.queued == 16
    state.drained()
    assert state.offer() is Offer.EVICT  # terminal: no frame is accepted after eviction


def test_warning_rearms_only_after_draining_to_three_eighths() -> None:
    state = BackpressureState(16)
    for _ in range(12):
        state.offer()
    assert state.warned
    # Drain to 7 (above 37.5 % = 6): still warned, back to 12 does not warn again.
    for _ in range(5):
        state.drained()
    assert state.queued == 7 and state.warned
    assert [state.offer() for _ in range(5)] == [Offer.ACCEPTED] * 5
    assert state.warnings == 1
    # Drain to 6 (37.5 %): re-armed; climbing back to 12 warns a second time.
    for _ in range(6):
        state.drained()
    assert state.queued == 6 and not state.warned
    outcomes = [state.offer() for _ in range(6)]
    assert outcomes == [Offer.ACCEPTED] * 5 + [Offer.WARN]
    assert state.warnings == 2


def test_default_thresholds() -> None:
    state = BackpressureState(DEFAULT_MAX_QUEUED)
    outcomes = [state.offer() for _ in range(DEFAULT_MAX_QUEUED)]
    assert [i + 1 for i, o in enumerate(outcomes) if o is Offer.WARN] == [192]
    assert state.offer() is Offer.EVICT


def test_a_reader_that_keeps_up_never_warns() -> None:
    state = BackpressureState(16)
    for _ in range(1000):
        assert state.offer() is Offer.ACCEPTED
        state.drained()
    assert state.warnings == 0 and not state.evicted


def test_drained_without_queued_frames_is_an_error() -> None:
    with pytest.raises(ValueError):
        BackpressureState(16).drained()
    with pytest.raises(ValueError):
        BackpressureState(0)


def test_backlog_forced_items_do_not_count() -> None:
    backlog: Backlog[str] = Backlog(16)
    for i in range(100):
        backlog.force(f"replay-{i}")
    assert len(backlog) == 100
    assert backlog.state.queued == 0
    assert backlog.offer("live-1") is Offer.ACCEPTED
    assert backlog.state.queued == 1
    items = [backlog.pop() for _ in range(101)]
    assert items[-1] == "live-1"
    assert backlog.pop() is None
    assert backlog.state.queued == 0


def test_backlog_slow_reader_gets_warning_then_eviction_in_order() -> None:
    """The route's protocol: force the warning after a WARN, force the terminal frame on EVICT."""
    backlog: Backlog[str] = Backlog(16)
    delivered: list[str] = []
    for seq in range(1, 41):
        outcome = backlog.offer(f"event-{seq}")
        if outcome is Offer.EVICT:
            backlog.force(f"client_evicted droppedAfter={seq - 1}")
            backlog.close()
            break
        if outcome is Offer.WARN:
            backlog.force(f"slow_client_warning queueSize={backlog.state.queued}")
        if seq == 1:  # the reader takes one frame, then stalls
            item = backlog.pop()
            assert item is not None
            delivered.append(item)
    assert backlog.closed and not backlog.exhausted
    while (item := backlog.pop()) is not None:
        delivered.append(item)
    assert backlog.exhausted
    assert delivered == [
        *(f"event-{seq}" for seq in range(1, 14)),
        "slow_client_warning queueSize=12",
        *(f"event-{seq}" for seq in range(14, 18)),
        "client_evicted droppedAfter=17",
    ]
    with pytest.raises(RuntimeError):
        backlog.offer("late")
