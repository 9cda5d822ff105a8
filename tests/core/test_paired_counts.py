"""`paired_counts` lines several models' per-record tables up on their record ids: checked
against a record-by-record reference, whether every model scored the same records (one
permutation of them) or not (zero rows where a model lacks a record)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.id_order import natural_key
from extracteval.core.record_counts import RecordCountTable, paired_counts

_IDS = st.sampled_from(["r1", "r2", "r10", "r01", "doc-3", "7", "07", "x", "a b", "r9"])
_COLS = st.sampled_from(["tp", "fp", "fn"])


def _reference(tables: dict[str, RecordCountTable]) -> tuple[list[str], tuple[str, ...], dict[str, list[list[int]]]]:
    ids = list(dict.fromkeys(str(i) for t in tables.values() for i in t.record_ids))
    rec = sorted(ids, key=natural_key)
    cols = tuple(dict.fromkeys(c for t in tables.values() for c in t.columns))
    out = {}
    for m, t in tables.items():
        rows = {str(i): dict(zip(t.columns, r)) for i, r in zip(t.record_ids, t.counts.tolist())}
        out[m] = [[rows.get(i, {}).get(c, 0) for c in cols] for i in rec]
    return rec, cols, out


@settings(max_examples=300, deadline=None)
@given(st.lists(_IDS, min_size=1, max_size=8, unique=True), st.integers(1, 3), st.booleans(), st.data())
def test_paired_counts_agree_with_a_record_by_record_reference(ids: list[str], n_models: int, same: bool, data: st.DataObject) -> None:
    tables = {}
    for k in range(n_models):
        mine = ids if same else data.draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
        cols = data.draw(st.lists(_COLS, min_size=1, max_size=3, unique=True))
        counts = np.asarray(data.draw(st.lists(st.lists(st.integers(0, 5), min_size=len(cols), max_size=len(cols)),
                                                min_size=len(mine), max_size=len(mine))), dtype=np.int64).reshape(len(mine), len(cols))
        tables[f"m{k}"] = RecordCountTable(record_ids=np.asarray(mine, dtype=object), columns=tuple(cols), counts=counts)
    rec, cols, arrays = paired_counts(tables)
    want_rec, want_cols, want = _reference(tables)
    assert (rec, cols) == (want_rec, want_cols)
    assert {m: a.tolist() for m, a in arrays.items()} == want
