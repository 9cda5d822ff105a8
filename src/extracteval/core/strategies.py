"""Comparison strategies: how a predicted value is judged equal to the truth."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from extracteval.errors import InputError

__all__ = ["Strategy", "get_strategy", "parse_strategy_map"]


class Strategy(str, Enum):
    """EXACT: canonical equality after normalisation. FUZZY: rapidfuzz similarity ≥
    `fuzzy_threshold`. SEMANTIC: similarity backend ≥ `semantic_threshold`. IGNORE: left out."""

    EXACT = "EXACT"
    FUZZY = "FUZZY"
    SEMANTIC = "SEMANTIC"
    IGNORE = "IGNORE"

    def __str__(self) -> str:
        return self.value


def get_strategy(name: str | Strategy, *, where: str = "strategy") -> Strategy:
    """Look a strategy up by name, case-insensitively.

    Raises:
        InputError: naming the valid strategies and the value received.
    """
    if isinstance(name, Strategy):
        return name
    if isinstance(name, str):
        try:
            return Strategy[name.strip().upper()]
        except KeyError:
            pass
    valid = ", ".join(s.value for s in Strategy)
    raise InputError(f"{where}: expected one of {valid}, but got {name!r}.")


def parse_strategy_map(mapping: Mapping[str, Any], *, source: str = "strategies") -> dict[str, Strategy]:
    """Validate a `{"field": "FUZZY", …}` mapping (from a JSON or YAML file)."""
    if not isinstance(mapping, Mapping):
        raise InputError(
            f"{source}: expected a mapping of field name to strategy, e.g. {{\"party\": \"FUZZY\"}}, "
            f"but found {type(mapping).__name__}."
        )
    return {str(k): get_strategy(v, where=f"{source}: field {k!r}") for k, v in mapping.items()}
