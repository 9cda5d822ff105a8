"""BFCL's vocabulary: the parameter types of a function description, a check's verdict, a decoded result, text
normalisation and the categories of entry ids."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any



# BFCL type names → the Python type a decoded value must have
_PY_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}


_SEQUENCE_TYPES = frozenset({"array", "tuple"})


_NORMALIZE_DROP = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The checker's verdict on one entry (or one call): valid, else an error type and message.

    `error_type` uses BFCL's names (`value_error:string`, `type_error:nested`,
    `simple_function_checker:missing_optional`, …) so verdicts can be compared with its score files.
    """

    valid: bool
    error_type: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "error_type": self.error_type, "error": self.error}


_OK = Verdict(valid=True)


def _fail(error_type: str, error: str) -> Verdict:
    return Verdict(valid=False, error_type=error_type, error=error)


@dataclass(frozen=True, kw_only=True)
class Decoded:
    """A decoded model result: `calls` as `[{name: {args}}]`, or the decoding failure."""

    calls: list[dict[str, Any]] | None
    failure: Verdict | None = None
    raw_kind: str = field(default="")


def normalize_text(s: str) -> str:
    """BFCL's string normalisation: drop spaces and `,./-_*^`, lowercase, `'` → `"`.

    >>> normalize_text("April 1, 2024") == normalize_text("april 1 2024")
    True
    """
    return _NORMALIZE_DROP.sub("", s).lower().replace("'", '"')


def category_of(entry_id: str) -> str:
    """`parallel_multiple_12` → `parallel_multiple`; `live_simple_3-1-0` → `live_simple`."""
    return entry_id.rsplit("_", 1)[0] if "_" in entry_id else entry_id


def entry_sort_key(entry_id: str) -> tuple[str, int, str]:
    """Natural order of BFCL ids: by category, then by the numeric index (`simple_2` < `simple_10`)."""
    cat, _, idx = entry_id.rpartition("_")
    head = idx.split("-", 1)[0]
    return (cat, int(head), entry_id) if head.isdigit() else (entry_id, -1, entry_id)
