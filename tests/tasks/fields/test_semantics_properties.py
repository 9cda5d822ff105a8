"""Properties of the fields scorer: ledger merge, bounds, F1 identity, order independence,
and scikit-learn as an oracle for the micro counts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.core.counts import Counts, ratios
from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields

VALUES = ["A", "B", "C", "Not Present", "", "2024-01-01", "January 1, 2024", "1,000", "1000", None]
NOCI = FieldsConfig(bootstrap=0)


@st.composite
def datasets(draw, min_records=1, max_records=25):
    n = draw(st.integers(min_records, max_records))
    n_fields = draw(st.integers(1, 4))
    n_models = draw(st.integers(1, 3))
    fields = [f"f{i}" for i in range(n_fields)]
    ids = [f"r{i:03d}" for i in range(n)]
    cell = st.sampled_from(VALUES)
    truth = pd.DataFrame({f: draw(st.lists(cell, min_size=n, max_size=n)) for f in fields}, index=ids)
    models = []
    for m in range(n_models):
        vals = pd.DataFrame({f: draw(st.lists(cell, min_size=n, max_size=n)) for f in fields}, index=ids)
        status = pd.Series(draw(st.lists(st.sampled_from(["ok", "ok", "ok", "pending", "error"]), min_size=n, max_size=n)), index=ids)
        models.append(ModelPredictions(name=f"m{m}", values=vals, status=status))
    return truth, models


def field_counts(result, model, field) -> Counts:
    return result.models[model].fields[field].counts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets(min_records=2), st.data())
def test_counts_of_union_equal_sum_of_counts(ds, data):
    truth, models = ds
    ids = list(truth.index)
    cut = data.draw(st.integers(1, len(ids) - 1))
    a_ids, b_ids = ids[:cut], ids[cut:]

    def part(sel):
        return truth.loc[sel], [ModelPredictions(name=m.name, values=m.values.loc[sel], status=m.status.loc[sel]) for m in models]

    whole = score_fields(truth, models, config=NOCI)
    ra = score_fields(*part(a_ids), config=NOCI)
    rb = score_fields(*part(b_ids), config=NOCI)
    for m in models:
        for f in truth.columns:
            assert field_counts(whole, m.name, f) == field_counts(ra, m.name, f) + field_counts(rb, m.name, f)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
def test_metrics_bounded_and_f1_identity(ds):
    truth, models = ds
    r = score_fields(truth, models, config=NOCI)
    for m in r.models.values():
        for v in (*m.overall.values(), *m.micro.values()):
            assert 0.0 <= v <= 1.0
        for f in m.fields.values():
            for v in (f.precision, f.recall, f.f1, f.accuracy, f.exact_match_rate):
                assert 0.0 <= v <= 1.0
            if f.precision + f.recall > 0:
                assert f.f1 == pytest.approx(2 * f.precision * f.recall / (f.precision + f.recall), abs=1e-12)
    assert all(c.passed for c in r.checks if c.kind == "consistency"), [c for c in r.checks if not c.passed]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets(), st.randoms(use_true_random=False))
def test_shuffling_records_and_models_changes_nothing(ds, rnd):
    truth, models = ds
    base = score_fields(truth, models, config=FieldsConfig(bootstrap=50))
    perm = list(truth.index)
    rnd.shuffle(perm)
    shuffled_models = [ModelPredictions(name=m.name, values=m.values.loc[perm[::-1]], status=m.status.loc[perm]) for m in models]
    rnd.shuffle(shuffled_models)
    again = score_fields(truth.loc[perm], shuffled_models, config=FieldsConfig(bootstrap=50))
    assert json.dumps(base.to_dict(), sort_keys=True) == json.dumps(again.to_dict(), sort_keys=True)


@settings(max_examples=30, deadline=None)
@given(datasets())
def test_perfect_prediction_scores_one(ds):
    truth, _ = ds
    r = score_fields(truth, [ModelPredictions(name="oracle", values=truth.copy())], config=NOCI)
    m = r.models["oracle"]
    assert all(f.f1 == 1.0 and f.precision == 1.0 and f.recall == 1.0 and f.accuracy == 1.0 for f in m.fields.values())
    assert m.overall["f1"] == 1.0


@settings(max_examples=30, deadline=None)
@given(datasets())
def test_empty_prediction_has_recall_zero_where_truth_has_values(ds):
    truth, _ = ds
    empty = pd.DataFrame({c: [None] * len(truth) for c in truth.columns}, index=truth.index)
    r = score_fields(truth, [ModelPredictions(name="empty", values=empty)], config=NOCI)
    for f in r.models["empty"].fields.values():
        assert f.counts.tp == 0 and f.counts.fp == 0
        if f.counts.fn > 0:
            assert f.recall == 0.0


def test_micro_counts_agree_with_scikit_learn():
    """Binary view of each cell: 'model extracted the right value' vs 'truth has a value'. A wrong
    value is a false positive of one class and a false negative of another, so the multilabel
    confusion matrix over (value present & correct) reproduces tp/fp/fn."""
    from sklearn.metrics import precision_recall_fscore_support

    rng = np.random.default_rng(3)
    n = 400
    pool = np.array(["alpha", "beta", "gamma", "delta", "Not Present"], dtype=object)
    truth = pd.DataFrame({"f": rng.choice(pool, n), "g": rng.choice(pool, n)}, index=[f"r{i}" for i in range(n)])
    pred = pd.DataFrame({"f": rng.choice(pool, n), "g": rng.choice(pool, n)}, index=truth.index)
    r = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=NOCI)
    # Oracle: multiclass labels with "Not Present" as the negative class; micro averaging over the
    # positive classes gives tp = correct values, fp = predicted values that are wrong, fn = truth
    # values not extracted — seed 000's rule (a wrong value is one FP and one FN).
    y_true = np.concatenate([truth["f"], truth["g"]]).astype(str)
    y_pred = np.concatenate([pred["f"], pred["g"]]).astype(str)
    labels = ["alpha", "beta", "gamma", "delta"]
    p, rec, f1, _ = precision_recall_fscore_support(y_true, y_pred, labels=labels, average="micro", zero_division=0)
    m = r.models["m"]
    assert m.micro["precision"] == pytest.approx(p)
    assert m.micro["recall"] == pytest.approx(rec)
    assert m.micro["f1"] == pytest.approx(f1)
    tp = int(((y_true == y_pred) & (y_true != "Not Present")).sum())
    assert m.totals.tp == tp


def test_ratios_vectorised_matches_scalar_and_zero_division():
    tp, fp, fn, tn = np.array([0, 0, 3, 0]), np.array([0, 2, 1, 0]), np.array([0, 0, 0, 4]), np.array([5, 0, 0, 0])
    r = ratios(tp, fp, fn, tn)
    assert list(r["f1"]) == [1.0, 0.0, pytest.approx(6 / 7), 0.0]  # all-TN → 1.0
    r1 = ratios(0, 0, 0, 0, zero_division=1.0)
    assert float(r1["precision"]) == 1.0
    with pytest.raises(ValueError, match="zero_division"):
        ratios(1, 1, 1, 1, zero_division=2)


def test_counts_add_and_sum():
    a = Counts(tp=1, fp=2, fn=3, tn=4, excluded=5, cells=6, exact=7)
    assert sum([a, a, a]) == Counts(tp=3, fp=6, fn=9, tn=12, excluded=15, cells=18, exact=21)
