"""`kernelindex serve`: the federated stack (gateway/stack.py), or one subgraph of it
(`--subgraph registry|benchmarks`). The embedded database is started unless MONGODB_URI is set.
(The web process is `kernelindex web`.)"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading

from cli.common import fail
from server.settings import Settings
from store.embedded import EmbeddedServer, _port_taken, clear_address, home, recover_stale_address, write_address

UPSTREAM_KEEP_ALIVE_S = 75  # longer than the gateway keeps an idle socket (5 s)


def register(sub) -> None:
    serve = sub.add_parser("serve", help="run the federated stack: subgraphs + Hive Gateway (embedded database unless MONGODB_URI is set)")
    serve.add_argument("--host", default="127.0.0.1", help="where the gateway (or the one part asked for) listens")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--replicas", type=int, default=1, help="processes per subgraph (the stack)")
    serve.add_argument("--subgraph", choices=("registry", "benchmarks"), help="run only this subgraph")
    serve.add_argument("--reuse-port", action="store_true", help="share --port with other replicas of the subgraph (SO_REUSEPORT)")
    serve.add_argument("--fd", type=int, default=None, help=argparse.SUPPRESS)  # a listening socket the stack bound for us
    serve.add_argument("--db-port", type=int, default=None, help="port of the embedded database (default: a free one)")
    serve.add_argument("--db-timeout", type=float, default=30.0, help="seconds to wait for the embedded database")
    serve.add_argument("--no-data", action="store_true", help="do not load the bundled data on start")
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.subgraph:
        return _serve_subgraph(args, settings)
    from gateway.stack import Stack, StackError, run_stack

    stack = Stack(
        host=args.host,
        port=args.port,
        replicas=args.replicas,
        db_port=args.db_port,
        db_timeout=args.db_timeout,
        load_data=not args.no_data,
        settings=settings,
    )
    try:
        return run_stack(stack)
    except StackError as error:
        return fail(str(error))


def _serve_subgraph(args: argparse.Namespace, settings: Settings) -> int:
    import socket

    import uvicorn

    from gateway.stack import listening_socket
    from server.app import create_app
    from server.bootstrap import BUNDLED_DATA, bootstrap

    if args.fd is None and not args.reuse_port and _port_taken(args.host, args.port):
        return fail(f"port {args.port} on {args.host} is already in use; choose another with --port")
    server = None
    # uvicorn stops gracefully on SIGINT/SIGTERM and then re-raises the signal; these handlers
    # turn that (or a signal during start-up) into an orderly return, so the database is stopped.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_stop)
    if settings.mongodb_uri:
        uri = settings.mongodb_uri
    else:
        if note := recover_stale_address():
            print(note, file=sys.stderr)
        server = EmbeddedServer(home() / "db", port=args.db_port, log_path=home() / "secantusd.log", startup_timeout_s=args.db_timeout)
        uri = server.start()
        write_address(server)
        print(f"embedded database on {uri} (data in {home() / 'db'})", file=sys.stderr)
    try:
        if not args.no_data:
            asyncio.run(bootstrap(uri, settings, BUNDLED_DATA))
        # No permessage-deflate: it costs about half of a subscription delivery's CPU.
        config = uvicorn.Config(
            create_app(uri, settings, subgraph=args.subgraph),
            log_level="warning",
            ws_per_message_deflate=False,
            ws_max_size=settings.max_body_bytes,  # a WebSocket message is bounded like an HTTP body
            # Hive Gateway (Node's agent) drops an idle upstream socket after 5 s; uvicorn's own 5 s
            # made the two race, and a request sent on a socket the subgraph had just closed failed
            # with "socket hang up". The subgraph waits longer, so the gateway always closes first.
            timeout_keep_alive=UPSTREAM_KEEP_ALIVE_S,
        )
        web = uvicorn.Server(config)
        died: list[int] = []
        if server is not None:
            threading.Thread(target=_watch_child, args=(server, web, died), daemon=True).start()
        try:
            sock = socket.socket(fileno=args.fd) if args.fd is not None else listening_socket(args.host, args.port, args.reuse_port)
        except OSError as error:
            return fail(f"cannot listen on {args.host}:{args.port}: {error.strerror}")
        print(f"KernelIndex {args.subgraph} subgraph on http://{args.host}:{args.port}/graphql", file=sys.stderr)
        try:
            web.run(sockets=[sock])
        except _Stop:
            pass
        if died:
            return fail(f"the embedded database exited unexpectedly (code {died[0]}); see {home() / 'secantusd.log'}")
        return 0
    except _Stop:
        return 0
    finally:
        if server is not None:
            server.stop()
            clear_address()


class _Stop(Exception):
    """A stop signal arrived."""


def _raise_stop(signum, frame) -> None:
    raise _Stop


def _watch_child(server: EmbeddedServer, web, died: list[int]) -> None:
    while not web.should_exit:
        code = server.process.poll()
        if code is not None:
            died.append(code)
            web.should_exit = True
            return
        threading.Event().wait(0.5)
