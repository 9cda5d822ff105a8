"""Label sets: the cells of a multi-label feature (`--multi-label FEATURE[=SEP]`) as (row, item) pairs.

A list cell (a JSON list in CSV/JSONL/Parquet, a list or array in a DataFrame) is the set of its
items; a text cell is split on the feature's separator (a text cell holding a JSON list is that
list); a missing cell is the empty set. Each item is then keyed by the feature's `LabelEncoder`
exactly as a single label is, so a null item is no label and duplicates collapse.

Work is per *distinct* cell (factorised) and per exploded item, not per row in Python.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.feature_views import _MISSING_KEY, LabelEncoder, _factorize

__all__ = ["DEFAULT_SEPARATOR", "cell_items", "encode_sets"]

DEFAULT_SEPARATOR = ";"

_LISTS = (list, tuple, np.ndarray)


def _text_items(value: Any, sep: str) -> list[Any]:
    """The items of one distinct non-list cell."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        return [value]
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            got = json.loads(text)
        except ValueError:
            got = None
        if isinstance(got, list):
            return [_item(x) for x in got]
    return [x.strip() for x in text.split(sep)]


def _item(value: Any) -> Any:
    """An item as keyed: text stripped, a nested list or object as its text."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return json.dumps(value.tolist() if isinstance(value, np.ndarray) else value, ensure_ascii=False, sort_keys=True, default=str)
    return value


def cell_items(cells: np.ndarray, sep: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, item) of every item of every cell; empty items and missing cells give none."""
    cells = np.asarray(cells, dtype=object)
    n = len(cells)
    is_list = np.fromiter((isinstance(v, _LISTS) for v in cells), dtype=bool, count=n)
    rows_parts, item_parts = [], []
    listed = np.flatnonzero(is_list)
    if len(listed):
        ex = pd.Series(list(cells[listed]), index=listed, dtype=object).explode()
        vals = ex.to_numpy(dtype=object)
        keep = ~pd.isna(vals)
        rows_parts.append(ex.index.to_numpy(dtype=np.int64)[keep])
        item_parts.append(_items(vals[keep]))
    scalar = np.flatnonzero(~is_list)
    if len(scalar):
        codes, uniques = _factorize(cells[scalar])  # missing cells: code -1, no items
        per = [_text_items(u, sep) for u in uniques]
        sizes = np.array([len(x) for x in per] + [0], dtype=np.int64)
        n_items = sizes[codes]
        rows_parts.append(np.repeat(scalar, n_items))
        flat = np.empty(int(sizes.sum()), dtype=object)
        flat[:] = [x for xs in per for x in xs]
        starts = np.concatenate([[0], np.cumsum(sizes[:-1])])
        # each row's items: its distinct cell's run in `flat`
        at = np.repeat(starts[codes] - np.concatenate([[0], np.cumsum(n_items)[:-1]]), n_items) + np.arange(int(n_items.sum()))
        item_parts.append(flat[at])
    if not rows_parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    rows, items = np.concatenate(rows_parts), np.concatenate(item_parts)
    blank = pd.Series(items, dtype=object).eq("").to_numpy(dtype=bool)
    return rows[~blank], items[~blank]


def _items(values: np.ndarray) -> np.ndarray:
    """List items as keyed (`_item`), once per distinct item (one by one only when some item is itself a list)."""
    try:
        codes, uniques = _factorize(values)
    except TypeError:
        return np.fromiter((_item(v) for v in values), dtype=object, count=len(values))
    cleaned = np.empty(len(uniques) + 1, dtype=object)
    cleaned[:-1] = [_item(u) for u in uniques]
    return cleaned[codes]


def encode_sets(columns: Sequence[np.ndarray], sep: str, enc: LabelEncoder) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """Per column its (row, label code) pairs into one shared sorted key table (null items dropped)."""
    pairs = [cell_items(c, sep) for c in columns]
    codes, table = enc.encode([items for _, items in pairs])
    if _MISSING_KEY not in table:
        return [(rows, c) for (rows, _), c in zip(pairs, codes)], table
    missing = table.index(_MISSING_KEY)  # null items are no labels: dropped, the table renumbered
    out = []
    for (rows, _), c in zip(pairs, codes):
        keep = c != missing
        out.append((rows[keep], np.where(c > missing, c - 1, c)[keep]))
    return out, table[:missing] + table[missing + 1:]
