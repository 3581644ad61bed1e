"""Hostile output schemas (issue 22, finding 5), shared by the tests and bench/attacks.py."""

from __future__ import annotations

from typing import Any


def anyof_bomb(levels: int = 27) -> dict[str, Any]:
    """Each definition ``anyOf`` two references to the next: 2^(levels-1) branches for a value that
    matches none (an object, say), in a schema of a few kilobytes."""
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(levels - 1)}
    defs[f"d{levels - 1}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}
