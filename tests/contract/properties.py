"""What the properties every task must have (tests/contract/test_properties.py) need of a task:
its `PropertyCase` (`PROPERTIES` in tests/tasks/<task>/properties.py), and the helpers the rows use."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from extracteval.core.normalize import Normalizer, key_text

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

Truth = dict[str, Any]
Pred = dict[str, Any]


@dataclass(frozen=True)
class PropertyCase:
    """One task as the common properties see it. `score(truth, pred)` returns the result of the
    single model `m`; the accessors read that result."""

    name: str
    records: st.SearchStrategy[tuple[Truth, Pred]]
    score: Callable[[Truth, Pred], Any]
    ledger: Callable[[Any], Any]  # mergeable counts: Counts-like objects, or dicts of them
    bounded: Callable[[Any], dict[str, float]]  # every ratio the task reports
    prf: Callable[[Any], dict[str, tuple[float, float, float]]]  # (P, R, F1) of the same counts
    perfect: Callable[[Truth], Pred]
    perfect_metrics: Callable[[Any, Truth], dict[str, float]]  # must all be 1.0
    empties: tuple[Callable[[Truth], Pred], ...]
    recall: Callable[[Any], dict[str, tuple[float, int]]]  # recall-like metric → (value, support)
    found: Callable[[Any], int]  # things found right (true positives): 0 for an empty prediction
    canonical: Callable[[Any], Any]  # the whole output, for order independence
    shuffle_item: Callable[[Any, random.Random], Any] = lambda item, rnd: item
    scorable: Callable[[Truth], bool] = bool  # inputs the task accepts (else an InputError)
    normalise: Callable[[Pred], Pred] | None = None


# ---------------------------------------------------------------------------------------------
# helpers


def _add(a: Any, b: Any) -> Any:
    """Ledger merge: dicts by key (a key on one side only is taken as it is), leaves with `+`."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return {k: _add(a[k], b[k]) if k in a and k in b else (a[k] if k in a else b[k]) for k in a.keys() | b.keys()}
    return a + b


def _plain(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if hasattr(x, "to_dict"):
        return x.to_dict()
    return x


def _shuffled(items: list, rnd: random.Random) -> list:
    return rnd.sample(items, len(items))


_NORM = Normalizer()


def _renormalised(v: Any) -> Any:
    """A value replaced by the text of its canonical key: the same key if normalisation is
    idempotent (None stays None)."""
    k = _NORM.key(v)
    return None if k is None else key_text(k)


def _ids(n: int) -> list[str]:
    return [f"r{i:02d}" for i in range(n)]


def _frame(d: Mapping[str, Mapping[str, Any]], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame([[d[i].get(c) for c in columns] for i in d], index=list(d), columns=columns, dtype=object)
