"""Every command line in the READMEs' code blocks works as written.

Commands are read from the fenced code blocks of every README.md each time the tests are
collected, so a command added to a README is tested without touching this file. Each command
line is one of:

- long-running (LONG_RUNNING: it serves, or runs for minutes): only its help runs (`-h`, or
  `make -n` for a make target), and every `--flag` the line names must appear in that help;
- a synopsis (it has placeholders: `[...]`, `FILE...`, `<...>`, `KEY_ID`, `a|b`): the same check;
- anything else is run for real: the runnable lines of a block run in order in one bash (so
  `VAR=$(...)` carries to later lines), in a temporary directory, against a fresh
  `kernelindex serve` (its own embedded database, the bundled data loaded; the README's
  http://127.0.0.1:8000 is replaced by its address), and must exit 0. That server is started as
  a new user would start it: from an empty directory, with no KERNELINDEX_* nor MONGODB_URI set
  (a HOME of its own), and the commands find it from another empty directory. A block that
  contains a command named in EXPECTED_OUTPUT must also print that text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.stack import READY
from store.embedded import free_port
from tests.command import KERNELINDEX

REPO = Path(__file__).resolve().parents[1]
# Every README.md in the tree (a new one is picked up too). kernels/BENCHMARKS.md is not among
# them: it is a lab notebook, with commands as they were run at the time.
READMES = sorted(
    str(path.relative_to(REPO))
    for path in REPO.rglob("README.md")
    if not {"node_modules", ".venv", ".git"} & set(path.relative_to(REPO).parts)
)

LONG_RUNNING = (
    "make serve",
    "make test",
    "make kernels",  # installs torch: `make -n` (the test venv has it already)
    "make bench-api",
    "make bench-import",
    "make bench-subscriptions",
    "kernelindex serve",
    "kernelindex bench",
    # The bundled catalog: 7,857 runs (tests/loaders/test_catalog_import.py imports it for real).
    "kernelindex import kernelindex-catalog",
    "python bench/",
)
EXPECTED_OUTPUT = {"kernelindex jobs show": "(KernelIndex Verified, passed)"}

PROGRAMS = ("kernelindex", "make", "openssl", "python", "curl")
PLACEHOLDER = re.compile(r"\[|\]|\.\.\.|<[^>]*>|\w\|\w|(?<![$\w])[A-Z][A-Z0-9_]+(?![\w=])")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Command:
    readme: str
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.readme}:{self.line}"

    @property
    def checked_by_help(self) -> bool:
        return self.text.startswith(LONG_RUNNING) or bool(PLACEHOLDER.search(self.text))


@dataclass(frozen=True)
class Block:
    readme: str
    line: int
    commands: tuple[Command, ...]

    @property
    def id(self) -> str:
        return f"{self.readme}:{self.line}"


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#(\s.*)?$", "", line).strip()


def _is_command(line: str) -> bool:
    body = re.sub(r"^[A-Z_][A-Z0-9_]*=\$\(", "", line)  # VAR=$(command ...)
    return body.split(" ", 1)[0] in PROGRAMS


def blocks() -> list[Block]:
    found = []
    for readme in READMES:
        lines = (REPO / readme).read_text(encoding="utf-8").splitlines()
        inside, start, commands, pending = False, 0, [], None
        for number, raw in enumerate(lines, 1):
            stripped = raw.strip()
            if stripped.startswith("```"):
                if inside and commands:
                    found.append(Block(readme, start, tuple(commands)))
                inside, start, commands, pending = not inside, number, [], None
                continue
            if not inside:
                continue
            text = _strip_comment(stripped)
            if pending is not None:  # a continuation of the previous line
                pending = (pending[0], pending[1] + " " + text.rstrip("\\").strip())
                if not text.endswith("\\"):
                    commands.append(Command(readme, pending[0], pending[1]))
                    pending = None
                continue
            if not _is_command(text):
                continue
            if text.endswith("\\"):
                pending = (number, text.rstrip("\\").strip())
            else:
                commands.append(Command(readme, number, text))
    return found


ALL_BLOCKS = blocks()
HELP_CHECKED = [c for b in ALL_BLOCKS for c in b.commands if c.checked_by_help]
RUNNABLE = [b for b in ALL_BLOCKS if any(not c.checked_by_help for c in b.commands)]


def test_the_readmes_have_commands_of_both_kinds():
    # A parser that found nothing would make every test below vacuous.
    assert len(HELP_CHECKED) >= 10 and len(RUNNABLE) >= 2
    assert any("kernelindex runner" in c.text and "--once" in c.text for b in RUNNABLE for c in b.commands)


def _help_command(command: Command) -> tuple[list[str], Path]:
    words = command.text.split()
    if words[0] == "make":
        return ["make", "-n", words[1]], REPO
    if words[0] == "python":
        return [sys.executable, words[1], "-h"], REPO
    verbs = []
    for word in words[1:]:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", word):
            break
        verbs.append(word)
    return [KERNELINDEX, *verbs, "-h"], REPO


@pytest.mark.parametrize("command", HELP_CHECKED, ids=[c.id for c in HELP_CHECKED])
def test_long_running_and_synopsis_lines_match_their_help(command: Command):
    argv, cwd = _help_command(command)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{command.id}: `{' '.join(argv)}` failed:\n{done.stderr[-2000:]}"
    if argv[:2] != ["make", "-n"]:
        unknown = [flag for flag in FLAG.findall(command.text) if flag not in done.stdout]
        assert unknown == [], f"{command.id}: {command.text}\nflags not in `{' '.join(argv)}`: {unknown}"


def _reader_env(user_home: Path) -> dict[str, str]:
    """What a new user has: the venv's commands on PATH (what `. .venv/bin/activate` does), a
    home directory of their own, and none of our variables (no KERNELINDEX_*, no MONGODB_URI)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_") and k not in ("MONGODB_URI", "XDG_DATA_HOME")}
    return {**env, "HOME": str(user_home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`kernelindex serve` as the README starts it, from an empty directory, on its embedded
    database under the user's data directory (nothing set: the defaults), on a free port (as
    `make serve ARGS="--port P"`); the commands then run from another empty directory and find
    the stack through that home, as a reader's would."""
    user_home = tmp_path_factory.mktemp("user")
    env = _reader_env(user_home)
    port = free_port()
    log_path = tmp_path_factory.mktemp("log") / "serve.log"
    log = open(log_path, "w")
    started_in = tmp_path_factory.mktemp("serve-cwd")
    proc = subprocess.Popen([KERNELINDEX, "serve", "--port", str(port)], cwd=started_in, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "serve did not answer in 300 s"
            # Ready when it says so, as a reader waits: Hive Gateway answers /healthz while the
            # bundled data still loads (it starts beside the import), before the stack file the
            # commands find the stack by is written.
            if READY in log_path.read_text():
                break
            time.sleep(0.5)
        yield env, tmp_path_factory.mktemp("reader"), f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    # Nothing was written where serve was started; the data is under the user's data directory.
    assert list(started_in.iterdir()) == []
    assert (user_home / ".local" / "share" / "kernelindex" / "db").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_runnable_blocks_run_as_written(block: Block, served):
    env, workdir, served_at = served
    script = "\n".join(c.text for c in block.commands if not c.checked_by_help)
    # A URL the README writes out (its local gateway, :8000) is this test's server's.
    script = script.replace("http://127.0.0.1:8000", served_at).replace("http://localhost:8000", served_at)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{block.id} failed:\n{script}\n--- stderr:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert list(workdir.glob(".kernelindex*")) == [], "a command left a database in the reader's directory"
    for command, expected in EXPECTED_OUTPUT.items():
        if command in script:
            assert expected in done.stdout, f"{block.id}: expected {expected!r} in:\n{done.stdout[-2000:]}"
