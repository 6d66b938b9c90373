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
    total size). Iterative, so a hostile depth cannot exhaust the stack."""
    size = 0
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise LimitError(path, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            if len(value) > MAX_STRING_CHARS:
                raise LimitError(path, f"a string of {len(value):,} characters; at most {MAX_STRING_CHARS:,}")
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise LimitError(path, "a lone surrogate is not text (not encodable as UTF-8)") from None
            size += len(value) + 2
        elif isinstance(value, bool) or value is None:
            size += 4
        elif isinstance(value, int):
            if not INT64[0] <= value <= INT64[1]:
                raise LimitError(path, "an integer outside the 64-bit range")
            size += 8
        elif isinstance(value, float):
            size += 8
        elif isinstance(value, dict):
            for key, item in value.items():
                key_text = str(key)
                if len(key_text) > MAX_STRING_CHARS:
                    raise LimitError(path, f"a key of {len(key_text):,} characters")
                size += len(key_text) + 4
                stack.append((f"{path}.{key_text[:64]}" if path else key_text[:64], item, depth + 1))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                size += 1
                stack.append((f"{path}[{index}]", item, depth + 1))
        if size > MAX_MANIFEST_BYTES:
            raise LimitError(path or "manifest", f"larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB")
