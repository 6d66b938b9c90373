"""The federated stack that `kernelindex serve` (and `make serve`) starts and supervises:

    embedded database (unless MONGODB_URI)  ->  registry subgraph x N, benchmarks subgraph x N
    (127.0.0.1 only)  ->  Hive Gateway on HOST:PORT (/graphql, composed at start from the
    subgraphs' SDL)  ->  every other path forwarded to the web process (pages).

Replicas of a subgraph share one loopback port (SO_REUSEPORT): the kernel spreads the gateway's
connections over them, so the supergraph names one URL per subgraph.
Ctrl-C / SIGTERM stops every process; a child that exits on its own stops the stack with one
`error:` line. Children run in their own session (a terminal's Ctrl-C reaches only this process,
which stops them in order) and die with this process if it is killed.
"""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from server.settings import Settings
from store.client import STORAGE_PATH_ENV
from store.embedded import (
    EmbeddedServer,
    clear_address,
    clear_stack,
    home,
    recover_stale_address,
    running_stack_api,
    write_address,
    write_stack,
)
from web import node_packages
from web.graphiql import ASSETS_PROJECT

REPO_ROOT = Path(__file__).resolve().parent.parent  # a checkout, or site-packages of a wheel install
GATEWAY_DIR = Path(__file__).resolve().parent  # Hive Gateway: its config, composer, npm manifests
HIVE_GATEWAY = GATEWAY_DIR / "node_modules" / ".bin" / "hive-gateway"  # a checkout's, after `make setup`
GATEWAY_FILES = ("gateway.config.mjs", "compose.mjs")  # the JavaScript that imports the npm packages
SUBGRAPHS = ("registry", "benchmarks")
LOOPBACK = "127.0.0.1"
# The line `serve` prints once every process answers (scripts and tests wait for it).
READY = "KernelIndex is ready"


class StackError(Exception):
    """The stack could not start, or a part of it stopped; one line for the user."""


class Stop(Exception):
    """A stop signal arrived."""


def _raise_stop(signum, frame) -> None:
    raise Stop


def _die_with_parent() -> None:
    # Linux: the child gets SIGTERM when the stack process dies, even by SIGKILL.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Child:
    name: str
    process: subprocess.Popen

    def stop(self, timeout_s: float) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Stack:
    host: str = "127.0.0.1"
    port: int = 8000
    replicas: int = 1
    db_port: int | None = None
    db_timeout: float = 30.0
    load_data: bool = True
    start_timeout: float = 120.0
    settings: Settings = field(default_factory=Settings)
    children: list[Child] = field(default_factory=list)
    database: EmbeddedServer | None = None
    subgraph_urls: dict[str, str] = field(default_factory=dict)  # name -> internal URL
    web_port: int = 0
    # What the start-up waits ask with: one client (httpx.get builds a client and an SSL context
    # per call, 36 ms of CPU each, taken from the parts starting beside it).
    _probe: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=5, trust_env=False), repr=False)
    # A child may be spawned from GatewayAhead's thread: never after stop() began.
    spawn_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    stopping: bool = False

    # ------------------------------------------------------------ start

    def start(self) -> None:
        if self.replicas < 1:
            raise StackError("--replicas must be 1 or more")
        # The gateway's port is held (bound, not listening) while the other parts start, so that
        # no port picked for them (the database's, the subgraphs', the web process's) is the
        # gateway's; Hive Gateway binds it itself, so it is let go just before it starts.
        try:
            held = bound_socket(self.host, self.port)
        except OSError:
            raise StackError(f"port {self.port} on {self.host} is already in use; choose another with --port") from None
        with held:
            # The npm packages first (a checkout's, or installed once into the user cache): a
            # missing node fails here, before the database starts.
            gateway = gateway_packages()
            web_packages()
            self._start_parts(gateway, held)
        try:
            self._wait_http("the web process", f"http://{LOOPBACK}:{self.web_port}/static/site.css")
            self._wait_http("Hive Gateway", f"http://{self.internal_host}:{self.port}/readiness")
        finally:
            self._probe.close()

    def _start_gateway_on(
        self, composition: str, gateway: node_packages.Tree, supergraph: Path, env: dict[str, str], held: socket.socket | None
    ) -> None:
        """Hive Gateway on `composition` (a supergraph) with today's subgraph URLs. `held`: its port,
        kept bound until every other port is taken, released here for Hive Gateway to bind."""
        write_supergraph(supergraph, with_urls(composition, self.subgraph_urls))
        if held is not None:
            held.close()
        self._spawn_gateway(gateway, supergraph, env)

    def _spawn_gateway(self, gateway: node_packages.Tree, supergraph: Path, env: dict[str, str]) -> None:
        self._spawn(
            "Hive Gateway",
            [
                str(gateway.bin("hive-gateway")),
                "supergraph",
                str(supergraph),
                "--config-path",
                str(gateway.files / "gateway.config.mjs"),
                "--host",
                self.host,
                "--port",
                str(self.port),
            ],
            {
                **env,
                **self.settings.gateway_env(),
                "KERNELINDEX_WEB_URL": f"http://{LOOPBACK}:{self.web_port}",
                # /exports/ (bulk exports, server/exports.py) is the registry subgraph's.
                "KERNELINDEX_EXPORTS_URL": self.subgraph_urls["registry"].removesuffix("/graphql"),
                # /readiness asks each subgraph's /healthz (which pings the database).
                "KERNELINDEX_HEALTH_URLS": ",".join(u.removesuffix("/graphql") + "/healthz" for u in self.subgraph_urls.values()),
                # Hive Router's Rust query planner (@graphql-hive/router-runtime): the dossier 8 %
                # faster through the gateway than with the JavaScript planner, every plugin kept
                # (bench/gateway_overhead.py). HIVE_ROUTER_RUNTIME=0 in the caller's environment
                # runs the JavaScript planner instead.
                "HIVE_ROUTER_RUNTIME": env.get("HIVE_ROUTER_RUNTIME", "1"),
            },
        )

    @property
    def internal_host(self) -> str:
        """Where the gateway is reached from this host (a wildcard host on loopback)."""
        return LOOPBACK if self.host in ("0.0.0.0", "::", "") else self.host

    @property
    def graphql_url(self) -> str:
        return f"http://{self.internal_host}:{self.port}/graphql"

    @property
    def web_url(self) -> str:
        return f"http://{self.internal_host}:{self.port}/"

    def _start_parts(self, gateway: node_packages.Tree, held: socket.socket) -> None:
        """Every process. The subgraphs' and the web process's ports are bound first, so their URLs
        are known before they answer. A restart (this home's last composition is cached,
        `last_composition`) starts them and Hive Gateway, on that composition with today's URLs,
        before the bundled data is checked, so their start-ups overlap it and each other; if the
        subgraphs' SDLs turn out to differ (new code), the gateway is started again on the new
        composition. A first start imports the data before the subgraphs start (their event
        streams would carry every event of the import) and meanwhile composes and starts Hive
        Gateway (GatewayAhead). Hive Gateway needs no database: on a restart it starts first,
        beside the database (its start is the longest, ~4.5 s on 2 cores)."""
        # A second serve on this home is refused before anything of the home is touched (the
        # supergraph file is the running gateway's): on the embedded database by its address file
        # (recover_stale_address), on MONGODB_URI by the stack file.
        if self.settings.mongodb_uri and (running := running_stack_api()):
            raise StackError(f"another kernelindex serve ({running}) is using {home()}; stop it first, or set KERNELINDEX_HOME")
        if not self.settings.mongodb_uri and (note := recover_stale_address()):
            print(note, file=sys.stderr)
        # The home, resolved once (absolute), is every child's: they run in the package's directory.
        env = {**os.environ, "KERNELINDEX_HOME": str(home())}
        if not sys.stderr.isatty():
            # A log file or a pipe gets no colour codes (Hive Gateway's logger honours NO_COLOR).
            env.setdefault("NO_COLOR", "1")
        cache = home() / "supergraphs"
        supergraph = home() / "supergraph.graphql"
        supergraph.parent.mkdir(parents=True, exist_ok=True)
        sockets = self._bind_children()
        guess = last_composition(cache)
        if guess is not None:
            say("starting Hive Gateway on the last composition ...")
            self._start_gateway_on(guess[1], gateway, supergraph, env, held)
        # A first start composes, and starts Hive Gateway, while the data loads (the import leaves
        # a core idle most of its time): from the subgraphs' SDLs built in a child process, since
        # the subgraphs start after the import; the check below still compares what they serve.
        ahead = None
        if guess is None and self.load_data:
            ahead = GatewayAhead(self, gateway, cache, supergraph, dict(env), held)
        env["MONGODB_URI"] = self._start_database()
        if guess is not None:
            say("starting the registry and benchmarks subgraphs and the web process ...")
            self._spawn_children(sockets, env)
        if self.load_data:
            from server.bootstrap import BUNDLED_DATA, bootstrap

            asyncio.run(bootstrap(env["MONGODB_URI"], self.settings, BUNDLED_DATA, say=say))
        if ahead is not None and (guess := ahead.started()) is not None:
            say("starting the registry and benchmarks subgraphs and the web process ...")
            self._spawn_children(sockets, env)
        elif guess is None:
            say("starting the registry and benchmarks subgraphs and composing the supergraph ...")
            self._spawn_children(sockets, env)
        urls = self.subgraph_urls
        sdls = {name: self._wait_for_sdl(name, url) for name, url in urls.items()}
        services = [(name, urls[name], sdls[name]) for name in SUBGRAPHS]
        key, text = cached_composition(services, gateway, cache)
        if guess is not None and key == guess[0]:
            return
        if guess is not None:
            say("the subgraphs' schema changed: Hive Gateway starts again on the new composition")
            self._stop_child("Hive Gateway")
        else:
            say("starting the web process and Hive Gateway ...")
        self._start_gateway_on(text, gateway, supergraph, env, None if guess is not None else held)

    def _bind_children(self) -> dict[str, list[socket.socket]]:
        """Listening sockets of every subgraph replica and of the web process, bound here and
        handed down, so no other process can take a port before a child listens on it."""
        sockets: dict[str, list[socket.socket]] = {}
        for name in SUBGRAPHS:
            # One socket per replica on one port (SO_REUSEPORT): the kernel spreads connections.
            first = listening_socket(LOOPBACK, 0, reuse_port=self.replicas > 1)
            port = first.getsockname()[1]
            self.subgraph_urls[name] = f"http://{LOOPBACK}:{port}/graphql"
            sockets[name] = [first] + [listening_socket(LOOPBACK, port, reuse_port=True) for _ in range(self.replicas - 1)]
        sockets["web"] = [listening_socket(LOOPBACK, 0, reuse_port=False)]
        self.web_port = sockets["web"][0].getsockname()[1]
        return sockets

    def _spawn_children(self, sockets: dict[str, list[socket.socket]], env: dict[str, str]) -> None:
        port = {name: int(url.rsplit(":", 1)[1].split("/")[0]) for name, url in self.subgraph_urls.items()}
        for name in SUBGRAPHS:
            for replica, sock in enumerate(sockets[name], start=1):
                label = f"{name} subgraph" + (f" (replica {replica})" if self.replicas > 1 else "")
                args = ["serve", "--subgraph", name, "--host", LOOPBACK, "--port", str(port[name]), "--no-data", "--fd", str(sock.fileno())]
                self._spawn(label, [sys.executable, "-m", "cli", *args], env, pass_fds=(sock.fileno(),))
                sock.close()
        # The web process needs only the gateway's URL, and no request reaches it before the
        # gateway is up: spawned with the subgraphs, its start overlaps theirs.
        web_socket = sockets["web"][0]
        graphql_url = f"http://{self.internal_host}:{self.port}/graphql"
        web_args = ["web", "--graphql", graphql_url, "--host", LOOPBACK, "--port", str(self.web_port), "--fd", str(web_socket.fileno())]
        self._spawn("web process", [sys.executable, "-m", "cli", *web_args], env, pass_fds=(web_socket.fileno(),))
        web_socket.close()

    def _stop_child(self, name: str) -> None:
        for child in [c for c in self.children if c.name == name]:
            child.stop(timeout_s=15)
            self.children.remove(child)

    def _start_database(self) -> str:
        if self.settings.mongodb_uri:
            return self.settings.mongodb_uri
        self.database = EmbeddedServer(
            home() / "db", port=self.db_port, log_path=home() / "secantusd.log", startup_timeout_s=self.db_timeout
        )
        # A write the disk refuses is told by its cause (store.client.unavailable), here and in
        # the children, which inherit it.
        os.environ[STORAGE_PATH_ENV] = str(home() / "db")
        say(f"starting the embedded database (data in {home() / 'db'}) ...")
        uri = self.database.start()
        write_address(self.database)
        say(f"embedded database on {uri}")
        return uri

    def _spawn(self, name: str, argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...] = ()) -> None:
        with self.spawn_lock:
            if self.stopping:
                raise Stop
            process = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, start_new_session=True, preexec_fn=_die_with_parent, pass_fds=pass_fds)
            self.children.append(Child(name, process))

    def _wait(self, what: str, ready) -> object:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            self.check()
            try:
                result = ready()
                if result is not None:
                    return result
            except httpx.HTTPError:
                pass
            time.sleep(0.05)  # a refused connection costs little; each wait here delays the ready line
        raise StackError(f"{what} did not start within {self.start_timeout:g} s")

    def _wait_for_sdl(self, name: str, url: str) -> str:
        def ready():
            body = self._probe.post(url, json={"query": "{ _service { sdl } }"}).json()
            return body["data"]["_service"]["sdl"]

        return self._wait(f"the {name} subgraph", ready)

    def _wait_http(self, what: str, url: str) -> None:
        self._wait(what, lambda: True if self._probe.get(url).status_code == 200 else None)

    # ------------------------------------------------------------ run and stop

    def check(self) -> None:
        """StackError naming the first part that has exited."""
        if self.database is not None and self.database.process.poll() is not None:
            raise StackError(
                f"the embedded database exited unexpectedly (code {self.database.process.returncode}); see {home() / 'secantusd.log'}"
            )
        for child in self.children:
            code = child.process.poll()
            if code is not None:
                raise StackError(f"the {child.name} exited unexpectedly (code {code})")

    def supervise(self) -> None:
        """Until a part exits (StackError) or a stop signal (Stop)."""
        while True:
            self.check()
            time.sleep(0.3)

    def stop(self) -> None:
        with self.spawn_lock:
            self.stopping = True
        # The gateway first (no new requests), then the web process, then the subgraphs.
        for child in reversed(self.children):
            if child.process.poll() is None:
                child.process.terminate()
        for child in reversed(self.children):
            child.stop(timeout_s=15)
        clear_stack()
        if self.database is not None:
            self.database.stop()
            clear_address()


def say(line: str) -> None:
    """One line of the stack's progress on stderr (flushed: a log or a pipe sees it at once), in
    one write: GatewayAhead's thread says its line while the import says its own."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def bound_socket(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a past run's TIME_WAIT is no obstacle
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def listening_socket(host: str, port: int, reuse_port: bool) -> socket.socket:
    sock = bound_socket(host, port, reuse_port)
    sock.listen(2048)
    return sock


def gateway_packages() -> node_packages.Tree:
    """Hive Gateway and the composers (gateway/package-lock.json), with the files that import them."""
    try:
        return node_packages.ensure("gateway", GATEWAY_DIR, "Hive Gateway and the federation composers", files=GATEWAY_FILES, say=say)
    except node_packages.NodePackagesError as error:
        raise StackError(str(error)) from None


def web_packages() -> node_packages.Tree:
    """GraphiQL and React (web/assets/package-lock.json), which the web process serves at /graphiql."""
    try:
        return node_packages.ensure("web-assets", ASSETS_PROJECT, "GraphiQL's assets (graphiql, react)", say=say)
    except node_packages.NodePackagesError as error:
        raise StackError(str(error)) from None


def _placeholder_url(name: str) -> str:
    return f"http://{name}.subgraph.invalid/graphql"


class GatewayAhead:
    """A first start's supergraph and Hive Gateway, made while the bundled data loads: the
    subgraphs' composition by `kernelindex supergraph --cache` (their SDLs built in that child
    process, niced: it shares the machine with the import), then Hive Gateway on it, from a thread
    (the import holds the main one). `started()` is the composition the gateway runs, or None
    when it could not be made (the stack then composes as the subgraphs answer)."""

    def __init__(self, stack: Stack, gateway: node_packages.Tree, cache: Path, supergraph: Path, env: dict[str, str], held: socket.socket):
        self.stack, self.gateway, self.cache, self.supergraph, self.env, self.held = stack, gateway, cache, supergraph, env, held
        self.composition: tuple[str, str] | None = None
        self.decided = threading.Event()
        self.composer = subprocess.Popen(
            [sys.executable, "-m", "cli", "supergraph", "--cache", str(cache)],
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_niced_child,
        )
        self.thread = threading.Thread(target=self._run, name="gateway-ahead", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            if self.composer.wait(timeout=self.stack.start_timeout) != 0 or (composition := last_composition(self.cache)) is None:
                return
            say("starting Hive Gateway on the composition made while the data loads ...")
            self.stack._start_gateway_on(composition[1], self.gateway, self.supergraph, self.env, self.held)
        except subprocess.TimeoutExpired:
            self.composer.kill()
        except (Stop, StackError, OSError):
            pass  # stopping; or the main thread composes as the subgraphs answer, and says why it fails
        else:
            self.composition = composition
        finally:
            self.decided.set()
        if self.composition is not None:
            # The kernel sends a child its parent-death signal (_die_with_parent) when the THREAD
            # that spawned it ends: this one lives as long as the process (a daemon), so Hive
            # Gateway does too.
            threading.Event().wait()

    def started(self) -> tuple[str, str] | None:
        self.decided.wait()
        return self.composition


def _niced_child() -> None:
    _die_with_parent()
    os.nice(10)


LAST = "last"  # HOME/supergraphs/last: the key of the composition the last start used


def cached_composition(services: list[tuple[str, str, str]], gateway: node_packages.Tree, cache: Path) -> tuple[str, str]:
    """(key, supergraph with placeholder URLs) of (name, url, sdl) subgraphs, composed by
    `compose_supergraph` once and remembered in `cache` by what it depends on: the subgraphs'
    SDLs and the composer's files and lock. A restart's subgraphs listen on new ports but have the
    same SDLs, so each restart writes its URLs in (`with_urls`; the node composer took ~1.3 s of a
    7.5 s restart). The key is kept as the home's last composition (`last_composition`)."""
    placeholders = [(name, _placeholder_url(name), sdl) for name, _, sdl in services]
    # the composer's script and the npm packages installed (npm's own record of the installed tree)
    composer = [hashlib.sha256(f.read_bytes()).hexdigest() for f in (gateway.files / "compose.mjs", gateway.modules / ".package-lock.json")]
    key = hashlib.sha256(json.dumps({"composer": composer, "services": placeholders}).encode()).hexdigest()[:32]
    path = cache / f"{key}.graphql"
    try:
        text = path.read_text()
    except OSError:
        text = compose_supergraph(placeholders, gateway)
        cache.mkdir(parents=True, exist_ok=True)
        write_supergraph(path, text)  # whole or absent: a crash never leaves half a supergraph to reuse
    write_supergraph(cache / LAST, key)
    return key, text


def last_composition(cache: Path) -> tuple[str, str] | None:
    """(key, supergraph with placeholder URLs) of the composition this home's last start used,
    if it is still cached."""
    try:
        key = (cache / LAST).read_text().strip()
        return key, (cache / f"{key}.graphql").read_text()
    except OSError:
        return None


def with_urls(text: str, urls: dict[str, str]) -> str:
    """A cached composition with each subgraph's placeholder URL replaced by its URL."""
    for name, url in urls.items():
        marker = f'url: "{_placeholder_url(name)}"'
        if text.count(marker) != 1:
            raise StackError(f"composition: the supergraph does not name the {name} subgraph's URL once")
        text = text.replace(marker, f'url: "{url}"')
    return text


def cached_supergraph(services: list[tuple[str, str, str]], gateway: node_packages.Tree, cache: Path) -> str:
    """The supergraph of (name, url, sdl) subgraphs with their URLs (`cached_composition`)."""
    return with_urls(cached_composition(services, gateway, cache)[1], {name: url for name, url, _ in services})


def write_supergraph(path: Path, text: str) -> None:
    """Written whole or not at all (a temporary file renamed): Hive Gateway watches the file."""
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(text)
    partial.replace(path)


def compose_supergraph(services: list[tuple[str, str, str]], gateway: node_packages.Tree | None = None) -> str:
    """The supergraph SDL of (name, url, sdl) subgraphs, composed by the Guild's composer."""
    payload = json.dumps([{"name": n, "url": u, "sdl": s} for n, u, s in services])
    gateway = gateway or gateway_packages()
    try:
        done = subprocess.run(
            ["node", str(gateway.files / "compose.mjs"), "guild"], input=payload, capture_output=True, text=True, timeout=120
        )
    except FileNotFoundError:
        raise StackError("node is not installed (Node >= 20 is needed to compose the supergraph)") from None
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise StackError(f"composition failed: {(done.stderr or done.stdout).strip().splitlines()[-1:] or ['no output']}") from None
    if done.returncode != 0 or not report.get("supergraphSdl"):
        raise StackError("composition failed: " + "; ".join(report["guild"]["errors"] + report["apollo"]["errors"]))
    return report["supergraphSdl"]


def run_stack(stack: Stack) -> int:
    """Start, print where, supervise; 0 after a stop signal. StackError propagates (after stopping
    everything) for the caller to print as one `error:` line."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _raise_stop)
    try:
        stack.start()
        write_stack(stack.graphql_url, stack.web_url)
        say(f"{READY} (registry + benchmarks subgraphs x{stack.replicas}, Hive Gateway):")
        say(f"  web pages  {stack.web_url}")
        say(f"  GraphQL    {stack.graphql_url}  (GraphiQL: {stack.web_url}graphiql)")
        stack.supervise()
    except Stop:
        return 0
    finally:
        # Signals during the orderly stop are ignored: it finishes either way.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        stack.stop()
    return 0
