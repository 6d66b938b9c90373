"""What every verb module shares: the one-line failure, the database block, the API options."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from server.settings import Settings


class CommandError(Exception):
    """A failure to report as one `error:` line."""


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def with_db(settings: Settings, work):
    """Run `await work(db)` against the command's database (MONGODB_URI, else the running
    `serve`'s embedded server; neither: one `error:` line saying how to start it)."""
    from cli.database import with_database

    return with_database(settings, work)


def add_api_options(parser: argparse.ArgumentParser, key_help: str) -> None:
    """--api / --api-key / --timeout, named the same on every verb that calls the API."""
    parser.add_argument(
        "--api",
        default=None,
        metavar="URL",
        help="GraphQL endpoint (default: KERNELINDEX_API, else the running `kernelindex serve`'s, else http://127.0.0.1:8000/graphql)",
    )
    parser.add_argument("--api-key", default=None, metavar="KEY", help=f"{key_help} (default: KERNELINDEX_API_KEY)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds to wait for each API call")


def default_api(args: argparse.Namespace) -> None:
    """A verb that calls the API and was given no --api nor KERNELINDEX_API talks to the stack
    that `kernelindex serve` runs on this home (whatever its port), if one runs."""
    if getattr(args, "api", "unset") is None and not os.environ.get("KERNELINDEX_API"):
        from store.embedded import running_stack_api

        args.api = running_stack_api()


def api_key(args: argparse.Namespace, who: str) -> str:
    key = args.api_key or os.environ.get("KERNELINDEX_API_KEY")
    if not key:
        raise CommandError(f"--api-key (or KERNELINDEX_API_KEY): the {who} API key is required")
    return key


def add_signing_key(parser: argparse.ArgumentParser, help: str, required: bool = True) -> None:
    parser.add_argument("--signing-key", type=Path, required=required, default=None, metavar="PEM", help=help)


def load_signing_key(path: Path):
    """The ed25519 private key in PEM at `path`, or a CommandError naming --signing-key."""
    from registry.dsse import SignatureError, load_private_key

    if not path.is_file():
        raise CommandError(f"--signing-key: no such file {path}")
    try:
        return load_private_key(path.read_bytes())
    except (ValueError, TypeError, SignatureError) as error:
        raise CommandError(f"--signing-key: not an unencrypted ed25519 private key in PEM ({error})") from None


# Where the CPU-only build of torch is published (PyPI's Linux torch is the CUDA build, ~5 GB).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def require_kernels_extra(verb: str) -> None:
    """Before importing the harness: one line instead of a traceback when torch is missing."""
    missing = [name for name in ("torch", "numpy") if importlib.util.find_spec(name) is None]
    if missing:
        raise CommandError(
            f"kernelindex {verb} needs the kernels extra: no module named {missing[0]}; install it with `make kernels` in the "
            f"repository (the CPU build of torch where there is no GPU), or `pip install torch --index-url {TORCH_CPU_INDEX}` "
            "then `pip install numpy matplotlib` (on a GPU host: `pip install torch numpy matplotlib`)"
        )
