"""`core.counts.item_metrics`, the reduction behind the fields and spans tasks' one map from counts
to metrics: macro = mean over the items with any count, micro = ratios of the summed counts, the
F1-only path equal to the full one, and the value of a set with no counted item."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from extracteval.core.counts import item_metrics, ratios
from extracteval.tasks.fields.metrics import fields_metrics
from extracteval.tasks.spans.metrics import spans_metrics

COUNTS = arrays(np.int64, st.tuples(st.integers(1, 3), st.integers(1, 20), st.just(4)), elements=st.integers(0, 4))


@settings(max_examples=60, deadline=None)
@given(counts=COUNTS, zd=st.sampled_from([0.0, 1.0]))
def test_macro_is_the_mean_over_counted_items_and_micro_the_ratio_of_sums(counts: np.ndarray, zd: float) -> None:
    got = item_metrics(counts, zero_division=zd)
    for row, c in enumerate(counts):
        valid = c.sum(axis=1) > 0
        r = ratios(*(c[:, k] for k in range(4)), zero_division=zd)
        s = c.sum(axis=0)
        m = ratios(*s, zero_division=zd)
        one = item_metrics(c, zero_division=zd)  # one set of items, as a result reduces it
        for kind in ("f1", "precision", "recall", "accuracy"):
            want = float(np.mean(r[kind][valid])) if valid.any() else 0.0
            assert float(one[f"macro/{kind}"]) == want  # bit for bit what the results computed before the map
            assert got[f"macro/{kind}"][row] == pytest.approx(want, abs=1e-12)  # over resamples: the same up to the last bit
            assert got[f"micro/{kind}"][row] == float(m[kind]) == float(one[f"micro/{kind}"])
    assert np.array_equal(item_metrics(counts, which=("macro/f1",), zero_division=zd)["macro/f1"], got["macro/f1"])


def test_a_set_without_any_counted_item() -> None:
    none = np.zeros((2, 3, 4), dtype=np.int64)
    assert item_metrics(none, which=("macro/f1", "macro/recall"), empty=0.5)["macro/f1"].tolist() == [0.5, 0.5]
    assert item_metrics(none, which=("macro/recall",), empty=0.5)["macro/recall"].tolist() == [0.5, 0.5]
    # fields: no counted field scores 0 overall, whatever zero_division; spans: no tag is zero_division
    got = fields_metrics(none, which=("overall/precision", "overall/f1"), zero_division=1.0)
    assert {k: v.tolist() for k, v in got.items()} == {"overall/precision": [0.0, 0.0], "overall/f1": [0.0, 0.0]}
    z = np.zeros((2, 3))
    assert spans_metrics(z, z, z, which=("macro/f1",), zero_division=1.0)["macro/f1"].tolist() == [1.0, 1.0]


def test_the_maps_take_a_resampled_stack() -> None:
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5, size=(50, 7, 4))
    whole = fields_metrics(counts, zero_division=0.0)
    one = [fields_metrics(c, zero_division=0.0) for c in counts]
    for k, v in whole.items():
        assert v.shape == (50,) and np.allclose(v, np.array([o[k] for o in one]), rtol=0, atol=1e-12)


def test_one_set_is_the_mean_of_its_counted_items_bit_for_bit() -> None:
    """Thirty items of which some have no count, 200 times: a result's macro is exactly `np.mean` over the counted
    items' ratios (summing the zeros of the others in would move the last bit of some)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        c = rng.integers(0, 50, size=(30, 4))
        c[rng.random(30) < 0.3] = 0
        r = ratios(*(c[:, k] for k in range(4)))
        valid = c.sum(axis=1) > 0
        got = item_metrics(c, which=("macro/f1", "macro/precision"))
        assert float(got["macro/f1"]) == float(np.mean(r["f1"][valid]))
        assert float(got["macro/precision"]) == float(np.mean(r["precision"][valid]))


@settings(max_examples=60, deadline=None)
@given(counts=COUNTS, zd=st.sampled_from([0.0, 1.0]))
def test_weighted_is_the_support_weighted_mean_over_counted_items(counts: np.ndarray, zd: float) -> None:
    """scikit-learn's and seqeval's "weighted avg": each counted item's ratio weighted by its support
    (tp + fn); with no support at all, the plain mean of the counted items; a stack = each set alone."""
    keys = tuple(f"weighted/{k}" for k in ("f1", "precision", "recall"))
    got = item_metrics(counts, which=keys, zero_division=zd)
    for row, c in enumerate(counts):
        valid = c.sum(axis=1) > 0
        support = (c[:, 0] + c[:, 2])[valid]
        r = ratios(*(c[:, k] for k in range(4)), zero_division=zd)
        one = item_metrics(c, which=keys, zero_division=zd)
        for k in keys:
            v = r[k.split("/")[1]][valid]
            want = float(np.average(v, weights=support)) if support.sum() else float(np.mean(v)) if valid.any() else 0.0
            assert float(one[k]) == pytest.approx(want, abs=1e-12)
            assert float(got[k][row]) == pytest.approx(want, abs=1e-12)
