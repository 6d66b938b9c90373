"""`kernelindex supergraph`: the composed supergraph SDL of the two subgraphs (the Guild's
composer), with the URLs where the gateway will reach them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.common import fail
from server.settings import Settings


def register(sub) -> None:
    cmd = sub.add_parser("supergraph", help="print the composed supergraph SDL (registry + benchmarks subgraphs)")
    cmd.add_argument("--registry-url", default="http://127.0.0.1:4001/graphql", help="where the gateway reaches the registry subgraph")
    cmd.add_argument("--benchmarks-url", default="http://127.0.0.1:4002/graphql", help="where the gateway reaches the benchmarks subgraph")
    # `serve`'s first start composes here, while the bundled data loads: into this cache, as this
    # home's last composition (gateway/stack.py cached_composition), printing nothing.
    cmd.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    cmd.set_defaults(handler=cmd_supergraph)


def cmd_supergraph(args: argparse.Namespace, settings: Settings) -> int:
    from gateway.stack import StackError, cached_composition, compose_supergraph, gateway_packages
    from server.schema import build_schema

    # The same SDL each subgraph serves at `_service { sdl }`.
    services = [
        (name, url, build_schema(settings, name).as_str())
        for name, url in (("registry", args.registry_url), ("benchmarks", args.benchmarks_url))
    ]
    try:
        if args.cache is not None:
            cached_composition(services, gateway_packages(), args.cache)
        else:
            sys.stdout.write(compose_supergraph(services) + "\n")
    except StackError as error:
        return fail(str(error))
    return 0
