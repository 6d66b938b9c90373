"""The `kernelindex` command line: one module per group of verbs.

Each verb module has `register(sub)`, which adds its sub-parser(s) with `handler=` set to a
function `(args, settings) -> exit code`. To add a verb, write such a module and list it in
VERB_MODULES. Expected failures print one `error: ...` line and exit non-zero; no tracebacks.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from cli import agents, attest, bench, imports, jobs, keys, manifests, reading, reports, runner, serve, supergraph, web
from cli.common import CommandError, default_api, fail
from client.api import ApiError
from registry.manifests import ManifestError
from server.bootstrap import BootstrapError
from server.settings import Settings
from store.client import STORAGE_PATH_ENV, StoreError, unavailable
from store.embedded import EmbeddedDatabaseError, home

# What a command's files say when its storage is unusable: read-only, full, over quota, forbidden.
STORAGE_ERRNOS = {errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM}

VERB_MODULES = (serve, supergraph, web, manifests, imports, keys, reports, jobs, runner, attest, bench, agents, reading)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelindex", description="KernelIndex: GPU-kernel performance evidence.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in VERB_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings()
    default_api(args)
    try:
        return args.handler(args, settings)
    except ManifestError as error:
        for path, reason in error.problems:
            print(f"error: {path}: {reason}" if path else f"error: {reason}", file=sys.stderr)
        print("error: nothing was written", file=sys.stderr)
        return 1
    except (EmbeddedDatabaseError, CommandError, BootstrapError, ApiError) as error:
        return fail(str(error))
    except OSError as error:
        if error.errno not in STORAGE_ERRNOS:
            raise
        # A read-only, full or forbidden home (or any file a command writes): the path and why.
        where = f"{error.filename}: " if error.filename else ""
        return fail(f"cannot write {where}{error.strerror or error}; KERNELINDEX_HOME must be a writable directory with free space")
    except StoreError as error:
        # The database refused or failed: one line, never the driver's traceback or raw reply.
        down = unavailable(error, storage_path=os.environ.get(STORAGE_PATH_ENV) or home() / "db")
        if down is not None:
            return fail(f"{down[1]} ({down[0]})")
        return fail(f"the database failed: {str(error).split(', full error:')[0][:300]}")
    except KeyboardInterrupt:
        return 130
