"""Checking many digests fast: a candidate canonical form first, RFC 8785 when it disagrees.

`rfc8785.dumps` is pure Python: on the 2-core machine it canonicalizes the 2026-08-16 catalog's
33,897 manifests in about 5 s. The C JSON encoder with sorted keys and no whitespace writes the
same bytes as RFC 8785 except where Python spells a number differently from ECMAScript (a float
below 1e-4, or an integral float from 1e16 to 1e21, in exponent form; -0.0) or where UTF-16 key
order differs from code-point order (keys above U+FFFF). Those numbers are respelled; anything
else that differs can only make the candidate's digest disagree with the expected one, and then
the object is canonicalized again by RFC 8785 (registry/digest.py), which decides. So a match is
always a real match (SHA-256), and a mismatch is always RFC 8785's verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from decimal import Decimal
from typing import Any

from registry.digest import digest_of

# A number token in the encoder's output: after `:` `,` or `[`, before `,` `]` or `}`, in exponent form.
_EXPONENT_NUMBER = re.compile(r"(?<=[:,\[])(-?\d+(?:\.\d+)?)e([-+])(\d+)(?=[,\]}])")


def _ecmascript(match: re.Match[str]) -> str:
    mantissa, sign, exponent = match.group(1), match.group(2), int(match.group(3))
    if sign == "-" and exponent <= 6:  # 1e-6 <= |x| < 1e-4: ECMAScript writes it out
        return format(Decimal(f"{mantissa}e-{exponent}"), "f")
    if sign == "+" and exponent < 21:  # an integral float below 1e21: all digits
        return format(Decimal(f"{mantissa}e{exponent}"), "f")
    return f"{mantissa}e{sign}{exponent}"


def candidate_canonical(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if "e" in text:
        text = _EXPONENT_NUMBER.sub(_ecmascript, text)
    return text.encode()


def matches_digest(value: Any, expected: str) -> bool:
    """Whether `value`'s RFC 8785 digest is `expected` (fast when the candidate form is right)."""
    try:
        if "sha256:" + hashlib.sha256(candidate_canonical(value)).hexdigest() == expected:
            return True
    except (TypeError, ValueError):
        pass  # not plain JSON for the C encoder (e.g. NaN): RFC 8785 says what it is
    try:
        return digest_of(value) == expected
    except Exception:  # noqa: BLE001 — a value RFC 8785 cannot canonicalize matches no digest
        return False


def identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a manifest's digest covers: {apiVersion, kind, spec} (registry/digest.py)."""
    return {"apiVersion": manifest.get("apiVersion"), "kind": manifest.get("kind"), "spec": manifest.get("spec")}
