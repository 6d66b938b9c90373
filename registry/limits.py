"""Size limits on manifests: what one manifest may hold, checked before any model sees it.

A manifest is a record, not a payload: without limits a 10 MB title or a 1 MB external id is
stored and then served on every list query. The limits are far above anything a real source
sends (the largest string in the bundled data is 25 KB, the deepest nesting 9).
"""

from __future__ import annotations

from typing import Any

MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # of strings and numbers, roughly its JSON size
MAX_DEPTH = 32
MAX_STRING_CHARS = 65_536
MAX_TITLE_CHARS = 500
MAX_EXTERNAL_ID_CHARS = 256
MAX_LABELS = 64  # labels, and annotations, each
MAX_LABEL_CHARS = 256
INT64 = (-(2**63), 2**63 - 1)  # what BSON stores


class LimitError(ValueError):
    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def check_limits(data: Any) -> None:
    """Raise LimitError naming the first value over a limit (depth, string length, integer range,
    total size). Iterative, so a hostile depth cannot exhaust the stack. Each stacked value keeps
    a link to its parent's (parent link, key or index), spelled out as a path only for an error:
    building the path of every value cost more than all the checks."""
    size = 0
    stack: list[tuple[Any, int, tuple | None]] = [(data, 0, None)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth, where = pop()
        if depth > MAX_DEPTH:
            raise LimitError(_path(where), f"nested deeper than {MAX_DEPTH} levels")
        kind = type(value)  # exact types first: they are all JSON and YAML give
        if kind is str:
            if len(value) > MAX_STRING_CHARS:
                raise LimitError(_path(where), f"a string of {len(value):,} characters; at most {MAX_STRING_CHARS:,}")
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise LimitError(_path(where), "a lone surrogate is not text (not encodable as UTF-8)") from None
            size += len(value) + 2
        elif kind is dict:
            depth += 1
            for key, item in value.items():
                if type(key) is not str:
                    key = str(key)
                if len(key) > MAX_STRING_CHARS:
                    raise LimitError(_path(where), f"a key of {len(key):,} characters")
                size += len(key) + 4
                push((item, depth, (where, key)))
        elif kind is list:
            depth += 1
            size += len(value)
            for index, item in enumerate(value):
                push((item, depth, (where, index)))
        elif value is None or kind is bool:
            size += 4
        elif kind is int:
            if not INT64[0] <= value <= INT64[1]:
                raise LimitError(_path(where), "an integer outside the 64-bit range")
            size += 8
        elif kind is float:
            size += 8
        else:
            plain = _plain(value)
            if plain is not None:
                push((plain, depth, where))  # checked as the plain value it stands for
                continue
        if size > MAX_MANIFEST_BYTES:
            raise LimitError(_path(where) or "manifest", f"larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB")


def _plain(value: Any) -> Any:
    """A subclass of a JSON type as that type (a str or int enum, an OrderedDict); None otherwise."""
    if isinstance(value, str):
        return value[:]  # str() of a str enum is its name; a slice is the text
    for plain in (bool, int, float, dict, list):
        if isinstance(value, plain):
            return plain(value)
    return None


def _path(where: tuple | None) -> str:
    """`spec.cases[3].axes.n` from the chain of (parent, key or index) links."""
    keys = []
    while where is not None:
        where, key = where
        keys.append(key)
    path = ""
    for key in reversed(keys):
        if isinstance(key, int):
            path += f"[{key}]"
        else:
            path = f"{path}.{key[:64]}" if path else key[:64]
    return path
