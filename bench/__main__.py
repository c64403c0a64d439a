"""`python -m bench NAME [--runs N] [--warmup W] [--agents N --storm M --idle-seconds S]` and
`python -m bench --list`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from bench.registry import BENCHMARKS, RUNS, RUNS_DEFAULT
from bench.report import BenchOptions, format_report


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("name", nargs="?", help="benchmark to run (see --list)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument(
        "--runs",
        type=_positive,
        # Not stored unless given, so the benchmark's own default applies (see RUNS).
        default=argparse.SUPPRESS,
        help=f"measured runs per figure (default: {RUNS_DEFAULT}; "
        + ", ".join(f"{name}: {runs}" for name, runs in sorted(RUNS.items()))
        + ")",
    )
    parser.add_argument("--warmup", type=_non_negative, default=2, help="unmeasured runs first")
    parser.add_argument(
        "--agents", type=_positive, default=None, help="standing-agents: agents (default 10000)"
    )
    parser.add_argument(
        "--storm",
        type=_positive,
        default=None,
        help="standing-agents: agents due at once in the heartbeat storm (default 1000)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=_positive,
        default=None,
        help="standing-agents: length of each idle CPU window (default 10)",
    )
    args = parser.parse_args(argv)
    if not args.list and args.name is None:
        parser.error("a benchmark name is required (or --list)")
    if args.name is not None and args.name not in BENCHMARKS:
        parser.error(f"unknown benchmark {args.name!r}; known: {', '.join(sorted(BENCHMARKS))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name in sorted(BENCHMARKS):
            print(name)
        return 0
    runs: int = getattr(args, "runs", None) or RUNS.get(args.name, RUNS_DEFAULT)
    options = BenchOptions(
        runs=runs,
        warmup=args.warmup,
        agents=args.agents,
        storm=args.storm,
        idle_seconds=args.idle_seconds,
    )
    report = asyncio.run(BENCHMARKS[args.name](options))
    print(format_report(report))
    return 0


if __name__ == "__main__":
    code = main()
    # The interpreter can abort at shutdown after a run that passed (sdk-python issue 300,
    # "PyGILState_Release ... must be current"), turning a good run into exit 134. Like the
    # SDK's own conftest, skip interpreter finalisation once everything is printed; failures
    # raise before this line and keep their traceback and non-zero code.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
