"""`kernelindex bench OPERATION`: the benchmark harness (needs the kernels extra).

The options are the harness's own (kernels.harness.cli); torch is imported only to run."""

from __future__ import annotations

import argparse
import sys

from cli.common import require_kernels_extra
from kernels.harness import cli as harness_cli
from server.settings import Settings


def register(sub) -> None:
    bench = sub.add_parser(
        "bench", help="run the benchmark harness side by side (needs the kernels extra)", description=harness_cli.__doc__.split("\n\n")[0]
    )
    harness_cli.add_arguments(bench)
    bench.set_defaults(handler=cmd_bench)


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    require_kernels_extra("bench")
    # The run's record keeps the command as typed after `kernelindex`.
    return harness_cli.run(args, ["bench", *sys.argv[sys.argv.index("bench") + 1 :]] if "bench" in sys.argv else ["bench"])
