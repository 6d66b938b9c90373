"""The Node interface and the lookup of any node by its global ID."""

from __future__ import annotations

import strawberry


@strawberry.interface(description="An object with a global, opaque ID (also its federation key).")
class Node:
    id: strawberry.ID
