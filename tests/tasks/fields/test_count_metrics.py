"""The `fields` task's metrics of summed per-record counts (what slices, `leaderboard` and
`compare` compute): asked one after another of one summed vector, or of a batch of resamples,
each is exactly `fields_metrics(..., which=(metric,))`."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.record_counts import column, item_count_columns
from extracteval.tasks.fields.metrics import METRICS, CountMetrics, fields_metrics


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), st.sampled_from([0.0, 0.5, 1.0]), st.data())
def test_each_metric_of_a_summed_vector_is_its_own_computation(n_fields: int, zd: float, data: st.DataObject) -> None:
    cols = tuple(column(f"f{i}", k) for i in range(n_fields) for k in ("tp", "fp", "fn", "tn"))
    counts = item_count_columns(cols)[1]
    cm = CountMetrics.of(cols, zd)
    vectors = data.draw(st.lists(st.lists(st.integers(0, 3), min_size=len(cols), max_size=len(cols)), min_size=1, max_size=4))
    for v in vectors:  # metrics asked in any order, vectors changing in between
        row = np.asarray(v, dtype=np.int64)
        for m in data.draw(st.permutations(METRICS)):
            want = fields_metrics(counts(row), which=(m,), zero_division=zd)[m]
            assert np.array_equal(np.asarray(cm.metric(m)(row)), np.asarray(want))
    batch = np.asarray(vectors, dtype=np.int64)
    for m in METRICS:
        assert np.array_equal(cm.metric(m)(batch), fields_metrics(counts(batch), which=(m,), zero_division=zd)[m])
