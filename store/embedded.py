"""The embedded default database: SecantusDB as a child process, spoken to only over the wire.

SecantusDB is GPL-2.0, so it is never imported into our process: we start its `secantusd-py`
command, wait until it answers `ping`, and stop it with SIGTERM (then wait) so WiredTiger closes
its files cleanly. A running `serve` records the server's address in `HOME/db.json` (and the
stack's URLs in `HOME/stack.json`), so other CLI commands use the same server; when none runs they
say how to start one (one `error:` line), never open the files behind a stack's back.

Durability: on disk the server fsyncs its journal on every commit (`--sync-on-commit`), so a
write it acknowledged survives `kill -9`. The child gets SIGTERM from the kernel when its parent
dies (PR_SET_PDEATHSIG), even by `kill -9`; an address file left by a killed `serve` is recovered
on the next start (`recover_stale_address`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

HOST = "127.0.0.1"


class EmbeddedDatabaseError(RuntimeError):
    """One clear line for the user: why the embedded database is not available."""


def home() -> Path:
    """Where the embedded server keeps its data, log and address files: KERNELINDEX_HOME, else the
    user's data directory (`~/.local/share/kernelindex` on Linux). Always absolute, so every
    command finds the same home from any directory; `serve` passes it to each child."""
    given = os.environ.get("KERNELINDEX_HOME")
    if given:
        return Path(given).expanduser().resolve()
    from platformdirs import user_data_path

    return user_data_path("kernelindex", appauthor=False).resolve()


def uri_for(port: int, host: str = HOST) -> str:
    return f"mongodb://{host}:{port}/?directConnection=true"


def free_port(host: str = HOST) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _port_taken(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _executable() -> str:
    beside = Path(sys.executable).parent / "secantusd-py"
    if beside.exists():
        return str(beside)
    found = shutil.which("secantusd-py")
    if not found:
        raise EmbeddedDatabaseError("secantusd-py not found: install the project (pip install -e .) or set MONGODB_URI")
    return found


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent(parent: int):
    """A preexec_fn: the kernel sends the child SIGTERM when the thread that started it exits
    (every launcher here starts it from the main thread, so: when our process dies)."""
    if _LIBC is None:
        return None

    def arrange() -> None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return arrange


def ping(uri: str, timeout_s: float = 1.0) -> bool:
    client = MongoClient(uri, serverSelectionTimeoutMS=int(timeout_s * 1000), connectTimeoutMS=int(timeout_s * 1000))
    try:
        client.admin.command("ping")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


class EmbeddedServer:
    """A SecantusDB child process. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        storage: Path | str,
        *,
        port: int | None = None,
        host: str = HOST,
        startup_timeout_s: float = 30.0,
        log_path: Path | None = None,
        failpoints: bool = False,
        cache_size: str | None = None,
    ):
        self.storage = str(storage)
        # Test suites inject faults with `configureFailPoint`; never on a served database, where
        # any client that reaches the port could arm one.
        self.failpoints = failpoints
        # WiredTiger's cache (SecantusDB's default is 1G). An in-memory store keeps everything in
        # it, its capped oplog included, so a long test session needs more than a served database.
        self.cache_size = cache_size
        self.host = host
        self.port = port
        self.startup_timeout_s = startup_timeout_s
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        assert self.port is not None
        return uri_for(self.port, self.host)

    def start(self) -> str:
        if self.port is None:
            self.port = free_port(self.host)
        elif _port_taken(self.host, self.port):
            raise EmbeddedDatabaseError(f"port {self.port} on {self.host} is already in use; choose another with --db-port")
        if self.storage != ":memory:":
            Path(self.storage).mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        command = [_executable(), "--host", self.host, "--port", str(self.port), "--storage-path", self.storage, "--log-level", "WARNING"]
        if self.storage != ":memory:":
            command.append("--sync-on-commit")
        if self.failpoints:
            command.append("--enable-test-commands")
        if self.cache_size:
            command += ["--cache-size", self.cache_size]
        self.process = subprocess.Popen(
            command,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            # Its own process group: a Ctrl-C in the terminal reaches us, and we stop it in order.
            start_new_session=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise EmbeddedDatabaseError(
                    f"the embedded database (secantusd-py) exited with code {code} while starting"
                    + (f"; see {self.log_path}" if self.log_path else "")
                )
            # Never wait past the deadline inside one ping.
            remaining = deadline - time.monotonic()
            if ping(self.uri, timeout_s=max(0.02, min(0.5, remaining))) and time.monotonic() <= deadline:
                return self.uri
            time.sleep(0.1)
        self.stop()
        raise EmbeddedDatabaseError(f"the embedded database did not answer ping within {self.startup_timeout_s:g} s")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 20.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# ---------------------------------------------------------------- the address file of `serve`


def address_file() -> Path:
    return home() / "db.json"


def write_address(server: EmbeddedServer) -> None:
    address_file().parent.mkdir(parents=True, exist_ok=True)
    address_file().write_text(json.dumps({"uri": server.uri, "pid": server.process.pid, "owner": os.getpid()}))


def clear_address() -> None:
    address_file().unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_database(pid: int) -> bool:
    """Whether `pid` is still a secantusd-py process (not an unrelated one that reused the pid)."""
    try:
        return b"secantusd" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return _alive(pid) and sys.platform != "linux"


def recover_stale_address(wait_s: float = 20.0) -> str | None:
    """Before `serve` starts its database: deal with the address file of an earlier `serve`.

    Another live `serve` → EmbeddedDatabaseError. A `serve` that was killed → stop the database
    child it left (if it still runs), remove the file and return one line saying so; else None.
    """
    try:
        info = json.loads(address_file().read_text())
        owner, child = int(info["owner"]), int(info["pid"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        clear_address()
        return f"removed an unreadable {address_file()}"
    if owner != os.getpid() and _alive(owner) and _is_database(child):
        raise EmbeddedDatabaseError(f"another kernelindex serve (pid {owner}) is using the database in {home()}; stop it first")
    stopped = ""
    if _is_database(child):
        # Its parent is gone: it is exiting on SIGTERM already (PR_SET_PDEATHSIG) or, started by
        # an older version, orphaned. Either way it holds the files until it exits.
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while _is_database(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _is_database(child):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            while _is_database(child):
                time.sleep(0.05)
        stopped = f"; stopped its database child (pid {child})"
    clear_address()
    return f"recovered from a stopped serve (pid {owner}): removed the stale {address_file()}{stopped}"


def no_server_message() -> str:
    return (
        f"no KernelIndex database is running for {home()}: start one with `kernelindex serve` "
        "(or `make serve` in the repository) and run this again, or set MONGODB_URI"
    )


# ---------------------------------------------------------------- the stack file of `serve`


def stack_file() -> Path:
    return home() / "stack.json"


def write_stack(graphql_url: str, web_url: str) -> None:
    stack_file().parent.mkdir(parents=True, exist_ok=True)
    stack_file().write_text(json.dumps({"graphql": graphql_url, "web": web_url, "owner": os.getpid()}))


def clear_stack() -> None:
    with contextlib.suppress(OSError, ValueError):
        if json.loads(stack_file().read_text()).get("owner") == os.getpid():
            stack_file().unlink()


def running_stack_api() -> str | None:
    """The GraphQL URL of a `serve` stack running on this home (its owner process alive), if any."""
    try:
        info = json.loads(stack_file().read_text())
        owner, url = int(info["owner"]), str(info["graphql"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if _alive(owner) else None


def running_server_uri() -> str | None:
    """The URI of an embedded server that a running `serve` started, if it still answers."""
    try:
        info = json.loads(address_file().read_text())
    except (OSError, ValueError):
        return None
    uri = info.get("uri")
    return uri if uri and ping(uri) else None
