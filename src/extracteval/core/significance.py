"""The one rule every run kind and task reads a difference's interval by.

Wholly above or below zero → "significantly different"; one bound exactly zero (and the other
not) → "borderline" (the evidence stops at the edge); containing zero → "not significantly
different". Kept apart from the resampling (`core.bootstrap`) so that the views that only word a
verdict — descriptions, tables — need no numerical library to import.
"""

from __future__ import annotations

__all__ = ["SIGNIFICANT", "BORDERLINE", "NOT_SIGNIFICANT", "significance"]

SIGNIFICANT = "significantly different"
BORDERLINE = "borderline"
NOT_SIGNIFICANT = "not significantly different"


def significance(low: float | None, high: float | None) -> str | None:
    """The verdict of a difference whose interval is [`low`, `high`]; None without an interval."""
    if low is None or high is None:
        return None
    low, high = float(low), float(high)
    if low > 0.0 or high < 0.0:
        return SIGNIFICANT
    if (low == 0.0) != (high == 0.0):
        return BORDERLINE
    return NOT_SIGNIFICANT
