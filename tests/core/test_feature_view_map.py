"""One map from a view's counts to its metrics (`core.feature_views.view_count_metrics`), read by
the `labels` and `entities` results, their intervals and their genai scorers: the three readings
give the same numbers on the same counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.feature_views import LabelLayout, ledger_from_codes, view_count_metrics, view_metrics
from extracteval.core.record_counts import RecordCountTable, column, label_count_columns

LABELS = ("a", "b", "c")
# a record: its rows, each (status, one (truth, predicted) label pair per feature); a `missing` row has
# no prediction, an `extra` row no truth (every feature of a view has the same rows)
_row = st.tuples(st.sampled_from(("both", "both", "missing", "extra")), st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)),
                                                                              min_size=3, max_size=3))
_records = st.lists(st.lists(_row, min_size=0, max_size=2), min_size=1, max_size=12)


def _cells(records: list, i: int) -> list[tuple[str, str, str]]:
    return [(status, *pairs[i]) for r in records for status, pairs in r]


def _ledgers(records: list, features: list[str]) -> dict:
    """One feature ledger per feature from the records' rows."""
    code = {lab: j for j, lab in enumerate(LABELS)}
    out = {}
    for i, f in enumerate(features):
        cells = _cells(records, i)
        both = [(code[t], code[p]) for s, t, p in cells if s == "both"]
        out[f] = ledger_from_codes(np.array([t for t, _ in both], dtype=np.int64), np.array([p for _, p in both], dtype=np.int64), LABELS,
                                   missing_truth=np.array([code[t] for s, t, _ in cells if s == "missing"], dtype=np.int64),
                                   extra_pred=np.array([code[p] for s, _, p in cells if s == "extra"], dtype=np.int64))
    return out


def _table(records: list, features: list[str]) -> RecordCountTable:
    """The per-record counts the intervals resample: (feature, label, tp|fp|fn) and (feature, rows);
    a record without rows is listed with zero counts."""
    ids, names, values = [], [], []

    def add(rid: int, name: str, value: int = 1) -> None:
        ids.append(rid), names.append(name), values.append(value)

    for rid, r in enumerate(records):
        add(rid, column(features[0], "rows"), 0)
        for status, pairs in r:
            for f, (t, p) in zip(features, pairs):
                add(rid, column(f, "rows"))
                if status == "both" and t == p:
                    add(rid, column(f, t, "tp"))
                    continue
                if status != "extra":
                    add(rid, column(f, t, "fn"))
                if status != "missing":
                    add(rid, column(f, p, "fp"))
    return RecordCountTable.from_long(ids, names, np.array(values, dtype=np.int64))


@settings(max_examples=200, deadline=None)
@given(records=_records, n_features=st.integers(1, 3), zd=st.sampled_from((0.0, 1.0, float("nan"))), positive=st.sampled_from((None, "a", "z")))
def test_the_result_and_the_intervals_read_one_map(records: list, n_features: int, zd: float, positive: str | None) -> None:
    """The result's totals (from ledgers) = the intervals' metric on the full sample (from per-record counts),
    undefined (NaN, under zero_division "nan") where the result's is."""
    features = [f"f{i}" for i in range(n_features)]
    pos = {features[0]: positive}
    ledgers = _ledgers(records, features)
    result = view_metrics("strict", ledgers, correct_rows=0, rows=0, positive_labels=pos, zero_division=zd)
    table = _table(records, features)
    labels, feats, counts = label_count_columns(table.columns)
    layout = LabelLayout.of(labels, feats, pos)
    summed = table.counts.sum(axis=0)
    got = view_count_metrics(counts(summed), layout, which=("macro/f1", "macro/precision", "macro/recall", "macro/specificity", "micro_accuracy"),
                             zero_division=zd)
    for k in ("f1", "precision", "recall", "specificity"):
        assert float(got[f"macro/{k}"]) == pytest.approx(result.totals[k], abs=1e-12, nan_ok=True), k
    assert float(got["micro_accuracy"]) == pytest.approx(result.totals["micro_accuracy"], abs=1e-12, nan_ok=True)
    # resamples (a stack) give, resample by resample, what each resample's counts give alone
    rng = np.random.default_rng(0)
    stack = np.stack([table.counts[rng.integers(0, len(table.counts), len(table.counts))].sum(axis=0) for _ in range(20)])
    which = ("macro/f1", "macro/precision", "weighted/recall", "micro_accuracy")
    many = view_count_metrics(counts(stack), layout, which=which, zero_division=zd)
    for i in range(len(stack)):
        one = view_count_metrics(counts(stack[i]), layout, which=which, zero_division=zd)
        for k in which:
            assert float(many[k][i]) == pytest.approx(float(one[k]), abs=1e-12, nan_ok=True), k


def test_a_feature_without_rows_has_the_zero_division_accuracy_in_every_reading() -> None:
    """Entities: on records without any entity the features have no rows; the result, the intervals
    and the genai rows all give `zero_division` (the intervals gave 0.0)."""
    layout = LabelLayout.of([], ["amount", "description"])
    counts = {"tp": np.zeros(0), "fp": np.zeros(0), "fn": np.zeros(0), "rows": np.zeros(2)}
    assert float(view_count_metrics(counts, layout, which=("micro_accuracy",), zero_division=1.0)["micro_accuracy"]) == 1.0
    empty = ledger_from_codes(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), ["x"])
    assert view_metrics("strict", {"amount": empty, "description": empty}, correct_rows=0, rows=0, zero_division=1.0).totals["micro_accuracy"] == 1.0
    pooled = {"tp": [0.0], "fp": [0.0], "fn": [0.0], "rows": [0.0]}
    assert float(view_count_metrics(pooled, LabelLayout.pooled(), which=("micro_accuracy",), zero_division=1.0)["micro_accuracy"]) == 1.0
