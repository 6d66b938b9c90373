"""Where the export and its `latest.json` pointer are: a file, a directory or a URL.

- a `catalog-*.jsonl.zst` file or URL: the export; `latest.json` is looked for beside it and
  checked when it names this file;
- a `latest.json` file or URL, or a directory holding one: the export it names, beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POINTER = "latest.json"


@dataclass(frozen=True)
class Location:
    """`export`: a path or an http(s) URL; `pointer`: the latest.json beside it (may not exist);
    `named_by_pointer`: the export was chosen by the pointer (so the pointer must exist)."""

    export: str
    pointer: str
    named_by_pointer: bool = False

    @property
    def is_url(self) -> bool:
        return self.export.startswith(("http://", "https://"))

    @property
    def file_name(self) -> str:
        return Path(urlsplit(self.export).path).name if self.is_url else Path(self.export).name


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def beside(target: str, name: str) -> str:
    """The path or URL of `name` in the same folder as `target`."""
    if is_url(target):
        parts = urlsplit(target)
        folder = parts.path.rsplit("/", 1)[0]
        return urlunsplit((parts.scheme, parts.netloc, f"{folder}/{name}", "", ""))
    return str(Path(target).parent / name)


def locate(target: str) -> Location:
    if not is_url(target) and Path(target).is_dir():
        return Location(export="", pointer=str(Path(target) / POINTER), named_by_pointer=True)
    name = Path(urlsplit(target).path).name if is_url(target) else Path(target).name
    if name == POINTER:
        return Location(export="", pointer=target, named_by_pointer=True)
    return Location(export=target, pointer=beside(target, POINTER))
