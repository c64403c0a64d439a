"""The standing-agents benchmark runs end to end at a small scale (a smoke run: the figures
themselves are the benchmark's business; only what must hold at any scale is asserted)."""

from __future__ import annotations

from pathlib import Path

from bench.__main__ import parse_args
from bench.registry import BENCHMARKS
from bench.report import BenchOptions, format_report
from bench.standing_agents import Scale, report, run, scale_from


def test_the_benchmark_is_registered_with_its_scale_flags() -> None:
    assert "standing-agents" in BENCHMARKS
    args = parse_args(["standing-agents", "--agents", "50", "--storm", "500"])
    options = BenchOptions(runs=1, warmup=0, agents=args.agents, storm=args.storm)
    # The storm never names more agents than there are.
    assert scale_from(options) == Scale(agents=50, storm=50)
    assert scale_from(BenchOptions(runs=1, warmup=0)).agents == 10_000


# Long by design (about 30 s on 2 cores): every phase of the benchmark at a small scale on
# a whole `agentrt up`, the last one with a priced model on loopback.
async def test_a_small_run_measures_every_figure(tmp_path: Path) -> None:
    scale = Scale(
        agents=12,
        storm=6,
        concurrency=4,
        idle_windows=2,
        idle_window_s=1.0,
        tenant_agents=5,
        cap_rounds=1,
        overshoot_rounds=1,
    )
    result = await run(scale, tmp_path)
    # Idle agents wait on their timers: nothing is planned or recorded between heartbeats.
    assert result.idle.model_calls == 0
    assert result.idle.turns == 0
    assert [storm.agents for storm in result.storms] == [6, 6]
    assert len(result.start.enable_ms) == 12
    # One tenant's agents: never more than its cap ticking, never a cent past its credit,
    # and the burst against the credit ends with each agent answered or paused on it.
    assert all(r.max_ticking <= 4 for r in result.caps)
    assert all(r.max_ticking <= 4 for r in result.overshoots)
    [burst] = result.overshoots
    assert burst.overshoot_percent == 0 and burst.spent_usd <= burst.credit_usd
    assert burst.answered + burst.paused == 5 and burst.paused >= 1
    text = format_report(report(result))
    assert "12 idle agents" in text
    assert "heartbeat storm, 6 due at once" in text
    print(text)
