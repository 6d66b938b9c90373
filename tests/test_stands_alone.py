"""The repository stands alone: no tracked file reads or links a folder beside the checkout.

.ci/run proves it the slow way (the whole suite in a clone under a fresh temporary directory);
this test catches the mistake in seconds, while the change is being written."""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

OUTSIDE = re.compile(
    "|".join(
        [
            r"\.\./" + "shared",  # a relative link out of the tree
            "/work/" + "shared",  # the development machine's absolute path
            r"""parents?\[?\d*\]?\s*/\s*["']""" + "shared",  # a Path's parent(s[n]) joined with that name
            r"\b" + "shared" + r"/(seed|data|DESIGN|hooks)\b",  # the sibling folder's contents by name
        ]
    )
)


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / name for name in listed.decode().split("\0") if name]


def test_no_tracked_file_reaches_outside_the_repository():
    offenders = []
    for path in tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary files, or deleted in the working tree
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:120]}")
    assert offenders == [], "references outside the repository:\n" + "\n".join(offenders)


def test_the_pattern_catches_what_it_is_for():
    # The examples are assembled from pieces so that this file itself names no outside path.
    sibling = "sha" + "red"
    for line in [
        f'SEED = Path(__file__).resolve().parents[3] / "{sibling}" / "seed"',
        f"Design: `../{sibling}/DESIGN.md`",
        f'SHARED = REPO.parent / "{sibling}"',
        f"from {sibling}/data/sol-execbench/x.json",
    ]:
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("MAX_SHARED_BACKLOG = 1000; a shared listener")
