"""The `labels` task: scikit-learn as the oracle, seed-003 pitfalls fixed, properties, both views."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.labels.semantics import (
    MISSING,
    LabelEncoder,
    LabelsConfig,
    ModelLabels,
    feature_ledger,
    feature_metrics,
    view_metrics,
    score_labels,
)
from extracteval.errors import InputError

sk = pytest.importorskip("sklearn.metrics")

LABELS = ["cat", "dog", "bird", None, "fish"]


def _sk_name(v):
    return MISSING if v is None else v


def _random_pairs(seed: int, n: int | None = None):
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(1, 60))
    k = int(rng.integers(1, len(LABELS) + 1))
    pool = LABELS[:k]
    t = [pool[i] for i in rng.integers(0, k, n)]
    # mostly right, sometimes wrong: every kind of one-vs-rest count occurs
    p = [x if rng.random() < 0.6 else pool[int(rng.integers(0, k))] for x in t]
    return t, p


# ---------------------------------------------------------------------------------------------
# scikit-learn oracle


@pytest.mark.parametrize("seed", range(60))
def test_per_label_and_macro_equal_sklearn(seed):
    t, p = _random_pairs(seed)
    m = feature_metrics(feature_ledger(t, p))
    yt, yp = [_sk_name(x) for x in t], [_sk_name(x) for x in p]
    observed = sorted(set(yt) | set(yp))
    assert sorted(m.labels) == observed
    P, R, F, S = sk.precision_recall_fscore_support(yt, yp, labels=observed, average=None, zero_division=0)
    for i, lab in enumerate(observed):
        assert m.labels[lab]["precision"] == pytest.approx(P[i], abs=1e-12)
        assert m.labels[lab]["recall"] == pytest.approx(R[i], abs=1e-12)
        assert m.labels[lab]["f1"] == pytest.approx(F[i], abs=1e-12)
        assert m.labels[lab]["support"] == S[i]
    mp, mr, mf, _ = sk.precision_recall_fscore_support(yt, yp, average="macro", zero_division=0)
    assert (m.precision, m.recall, m.f1) == pytest.approx((mp, mr, mf), abs=1e-12)
    mcm = sk.multilabel_confusion_matrix(yt, yp, labels=observed)
    for i, lab in enumerate(observed):
        tn, fp = mcm[i, 0, 0], mcm[i, 0, 1]
        expected = tn / (tn + fp) if tn + fp else 0.0
        assert m.labels[lab]["specificity"] == pytest.approx(expected, abs=1e-12)
        assert (m.labels[lab]["tp"], m.labels[lab]["fp"], m.labels[lab]["fn"], m.labels[lab]["tn"]) == (
            mcm[i, 1, 1], mcm[i, 0, 1], mcm[i, 1, 0], mcm[i, 0, 0])
    assert m.specificity == pytest.approx(np.mean([m.labels[k]["specificity"] for k in observed]))
    assert m.micro_accuracy == pytest.approx(sk.accuracy_score(yt, yp))


@pytest.mark.parametrize("seed", range(30))
def test_strict_view_equals_sklearn_with_unaligned_rows_as_sentinels(seed):
    """A missing prediction is a sentinel prediction, an extra one a sentinel truth; sentinels are
    not labels, so they add FN / FP to the real labels and nothing else."""
    t, p = _random_pairs(seed)
    rng = np.random.default_rng(1000 + seed)
    miss = [LABELS[i] for i in rng.integers(0, len(LABELS), int(rng.integers(0, 5)))]
    extra = [LABELS[i] for i in rng.integers(0, len(LABELS), int(rng.integers(0, 5)))]
    m = feature_metrics(feature_ledger(t, p, missing_truth=miss, extra_pred=extra))
    yt = [_sk_name(x) for x in t] + [_sk_name(x) for x in miss] + ["\x00no-truth"] * len(extra)
    yp = [_sk_name(x) for x in p] + ["\x00no-pred"] * len(miss) + [_sk_name(x) for x in extra]
    observed = sorted({x for x in yt + yp if not x.startswith("\x00")})
    P, R, F, _ = sk.precision_recall_fscore_support(yt, yp, labels=observed, average=None, zero_division=0)
    for i, lab in enumerate(observed):
        assert (m.labels[lab]["precision"], m.labels[lab]["recall"], m.labels[lab]["f1"]) == pytest.approx((P[i], R[i], F[i]))
    mp, mr, mf, _ = sk.precision_recall_fscore_support(yt, yp, labels=observed, average="macro", zero_division=0)
    assert (m.precision, m.recall, m.f1) == pytest.approx((mp, mr, mf))
    assert m.micro_accuracy == pytest.approx(sk.accuracy_score(yt, yp))


def _strict_case(seed: int, rng_seed: int, *, most: int):
    """A strict-view ledger of random pairs with up to `most` missing and extra rows, the same rows as
    scikit-learn sees them (unaligned rows as sentinels that are not labels), and the random source."""
    t, p = _random_pairs(seed)
    rng = np.random.default_rng(rng_seed)
    miss = [LABELS[i] for i in rng.integers(0, len(LABELS), int(rng.integers(0, most + 1)))]
    extra = [LABELS[i] for i in rng.integers(0, len(LABELS), int(rng.integers(0, most + 1)))]
    led = feature_ledger(t, p, missing_truth=miss, extra_pred=extra)
    yt = [_sk_name(x) for x in t] + [_sk_name(x) for x in miss] + ["\x00no-truth"] * len(extra)
    yp = [_sk_name(x) for x in p] + ["\x00no-pred"] * len(miss) + [_sk_name(x) for x in extra]
    return led, yt, yp, rng


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("zd", [0.0, 1.0])
def test_weighted_average_equals_sklearn(seed, zd):
    """`weighted`: per-label P/R/F1 averaged with the labels' supports as weights, as scikit-learn's
    `average="weighted"` (unaligned rows as sentinels that are not labels, the positive-label mode
    not changing it); the view's is the mean over features of each feature's."""
    led, yt, yp, _ = _strict_case(seed, 2000 + seed, most=4)
    observed = sorted({x for x in yt + yp if not x.startswith("\x00")})
    want = sk.precision_recall_fscore_support(yt, yp, labels=observed, average="weighted", zero_division=zd)[:3]
    for pos in (None, observed[0]):
        m = feature_metrics(led, positive_label=pos, zero_division=zd)
        assert (m.weighted["precision"], m.weighted["recall"], m.weighted["f1"]) == pytest.approx(want, abs=1e-12)
    other = feature_ledger(*_random_pairs(seed + 500))
    v = view_metrics("strict", {"a": led, "b": other}, correct_rows=0, rows=1, zero_division=zd)
    assert v.weighted["f1"] == pytest.approx((v.features["a"].weighted["f1"] + v.features["b"].weighted["f1"]) / 2, abs=1e-12)
    assert v.to_dict()["totals"]["weighted"] == v.weighted and v.features["a"].to_dict()["weighted"] == m.weighted


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("zd", [0.0, 1.0])
def test_declared_classes_equal_sklearn_labels(seed, zd):
    """Declared classes: the macro and weighted averages over exactly those (a declared class that
    occurs nowhere with zero_division ratios and no support; an undeclared label's rows still errors
    of the declared ones), as scikit-learn's `labels=`."""
    led, yt, yp, rng = _strict_case(seed, 3000 + seed, most=3)
    pool = ["cat", "dog", "bird", "fish", "newt", MISSING]
    declared = sorted({pool[i] for i in rng.integers(0, len(pool), int(rng.integers(1, 5)))})
    v = view_metrics("strict", {"f": led}, correct_rows=0, rows=1, zero_division=zd, classes={"f": declared}).features["f"]
    for avg, got in (("macro", (v.precision, v.recall, v.f1)), ("weighted", tuple(v.weighted[k] for k in ("precision", "recall", "f1")))):
        want = sk.precision_recall_fscore_support(yt, yp, labels=declared, average=avg, zero_division=zd)[:3]
        assert got == pytest.approx(want, abs=1e-12), (avg, declared)
    assert set(declared) <= set(v.labels) and all(v.labels[c]["support"] == 0 for c in declared if c not in led.per_label)
    assert ("labels_outside_declared_classes" in v.flags) == bool(set(led.per_label) - set(declared) - {MISSING})
    assert v.micro_accuracy == feature_metrics(led, zero_division=zd).micro_accuracy  # accuracy does not depend on them


@pytest.mark.parametrize("seed", range(20))
def test_positive_label_equals_sklearn_binary(seed):
    t, p = _random_pairs(seed, n=40)
    yt, yp = [_sk_name(x) for x in t], [_sk_name(x) for x in p]
    pos = yt[0]
    m = feature_metrics(feature_ledger(t, p), positive_label=pos)
    bt = [x == pos for x in yt]
    bp = [x == pos for x in yp]
    P, R, F, _ = sk.precision_recall_fscore_support(bt, bp, average="binary", pos_label=True, zero_division=0)
    assert m.mode == "binary"
    assert (m.precision, m.recall, m.f1) == pytest.approx((P, R, F))
    assert m.micro_accuracy == pytest.approx(sk.accuracy_score(yt, yp))  # still over all labels


# ---------------------------------------------------------------------------------------------
# the seed-003 pitfalls


def test_missing_is_its_own_class_not_the_string_none():
    led = feature_ledger(["none", None, "", "N/A", "a"], [None, None, None, None, "a"])
    assert set(led.per_label) == {MISSING, "a"}  # null tokens and empties are all <MISSING>
    assert "none" not in led.per_label
    assert led.correct == 5
    # a real label called "<missing>" (text is casefolded) never merges with the missing class
    led = feature_ledger(["<MISSING>", None], [None, None], type="category")
    assert set(led.per_label) == {"<missing>", MISSING}
    assert led.correct == 1


def test_two_different_unparsable_numbers_or_dates_are_not_equal():
    for typ, bad_a, bad_b in (("number", "twelve", "about 12"), ("date", "someday", "next week")):
        led = feature_ledger([bad_a, bad_a], [bad_b, bad_a], type=typ)
        assert led.correct == 1
        enc = LabelEncoder(typ)
        assert enc.key(bad_a) != enc.key(bad_b)
        assert enc.key(bad_a) != enc.key(None)  # unparsable is not missing either
        assert enc.key(bad_a) in enc.unparsable


def test_typed_features_use_the_normaliser():
    assert feature_ledger(["1,000", "$5"], [1000.0, "5.00"], type="number").correct == 2
    assert feature_ledger(["2024-01-05"], ["January 5, 2024"], type="date").correct == 1
    assert feature_ledger(["2024-01-05"], ["January 5, 2024"], type="category").correct == 0
    assert feature_ledger(["  Hello   World "], ["hello world"], type="category").correct == 1


# ---------------------------------------------------------------------------------------------
# score_labels: views, rows, ranking, errors


def _frame(rows: dict[str, dict]) -> pd.DataFrame:
    return pd.DataFrame.from_dict(rows, orient="index").astype(object)


TRUTH = _frame({
    "1": {"colour": "red", "size": "S", "price": "10"},
    "2": {"colour": "blue", "size": "M", "price": "20"},
    "3": {"colour": "red", "size": "L", "price": None},
    "4": {"colour": "green", "size": "M", "price": "1,000"},
})


def test_both_views_and_unaligned_rows_are_counted():
    pred = _frame({
        "1": {"colour": "red", "size": "S", "price": "10.0"},
        "2": {"colour": "red", "size": "M", "price": "20"},
        "4": {"colour": "green", "size": "M", "price": 1000},
        "9": {"colour": "red", "size": "S", "price": "3"},
    })
    r = score_labels(TRUTH, [ModelLabels(name="m", values=pred)], config=LabelsConfig(types={"price": "number"}))
    m = r.models["m"]
    assert (m.aligned_rows, m.missing_rows, m.extra_rows) == (3, 1, 1)
    assert m.aligned.rows == 3 and m.strict.rows == 5
    assert m.aligned.row_accuracy == pytest.approx(2 / 3)
    assert m.strict.row_accuracy == pytest.approx(2 / 5)
    assert m.aligned.features["price"].micro_accuracy == 1.0
    assert m.strict.features["price"].micro_accuracy == pytest.approx(3 / 5)
    # the missing row's truth label is an FN, the extra row's prediction an FP
    strict_colour = m.strict.features["colour"].labels
    assert strict_colour["red"]["fn"] == 1 and strict_colour["red"]["fp"] == 2
    assert m.aligned.features["colour"].labels["red"]["fn"] == 0
    totals = m.aligned.totals
    for k in ("precision", "recall", "f1", "specificity", "micro_accuracy"):
        assert totals[k] == pytest.approx(np.mean([getattr(f, k) for f in m.aligned.features.values()]))
    assert any("no prediction" in w for w in r.warnings) and any("no ground truth" in w for w in r.warnings)
    doc = json.loads(json.dumps(r.to_dict()))
    assert set(doc["models"]["m"]) >= {"aligned", "strict", "alignment"}
    assert doc["models"]["m"]["strict"]["description"].startswith("every row")


def test_perfect_prediction_scores_one_everywhere():
    r = score_labels(TRUTH, [ModelLabels(name="m", values=TRUTH.copy())])
    for view in (r.models["m"].aligned, r.models["m"].strict):
        assert view.row_accuracy == 1.0
        for k, v in view.totals.items():
            assert v == 1.0, k


def test_positive_label_switches_feature_to_binary():
    r = score_labels(TRUTH, [ModelLabels(name="m", values=TRUTH.copy())], config=LabelsConfig(positive_labels={"colour": "RED"}))
    f = r.models["m"].aligned.features["colour"]
    assert f.mode == "binary" and f.positive_label == "red"
    assert r.models["m"].aligned.features["size"].mode == "macro"


def test_ranking_uses_strict_view_and_shuffling_changes_nothing():
    good = TRUTH.copy()
    few = TRUTH.loc[["1"]].copy()  # perfect on its one aligned row, but 3 rows missing
    bad = TRUTH.copy()
    bad["colour"] = "red"
    preds = [ModelLabels(name="few", values=few), ModelLabels(name="good", values=good), ModelLabels(name="bad", values=bad)]
    r = score_labels(TRUTH, preds)
    assert r.ranking[0] == "good"
    assert r.models["few"].aligned.totals["f1"] == 1.0
    assert r.models["few"].strict.row_accuracy == 0.25  # the 3 missing rows are errors, not dropped
    assert r.models["few"].strict.totals["f1"] < 0.6
    rng = np.random.default_rng(0)
    shuffled = [ModelLabels(name=p.name, values=p.values.sample(frac=1, random_state=1)[list(rng.permutation(p.values.columns))]) for p in reversed(preds)]
    r2 = score_labels(TRUTH.sample(frac=1, random_state=2), shuffled)
    assert r2.to_dict() == r.to_dict()


def test_bad_inputs():
    with pytest.raises(InputError, match="'ghost'.*not columns"):
        score_labels(TRUTH, [ModelLabels(name="m", values=TRUTH)], features=["ghost"])
    empty = TRUTH.copy()
    empty["notes"] = None
    with pytest.raises(InputError, match="'notes' is missing .* in every ground-truth record"):
        score_labels(empty, [ModelLabels(name="m", values=TRUTH)])
    with pytest.raises(InputError, match="expected one of auto, category"):
        LabelsConfig(types={"price": "money"})
    with pytest.raises(InputError, match="given twice"):
        score_labels(TRUTH, [ModelLabels(name="m", values=TRUTH), ModelLabels(name="m", values=TRUTH)])
    dup = pd.concat([TRUTH, TRUTH.iloc[:1]])
    with pytest.raises(InputError, match="unique"):
        score_labels(dup, [ModelLabels(name="m", values=TRUTH)])


# ---------------------------------------------------------------------------------------------
# properties

values = st.sampled_from(["a", "b", "c", None, "7", "7.0"])
pairs = st.lists(st.tuples(values, values), max_size=40)


@settings(max_examples=60, deadline=None)
@given(pairs, pairs, st.lists(values, max_size=5), st.lists(values, max_size=5))
def test_ledger_merge_equals_scoring_the_union(a, b, miss, extra):
    whole = feature_ledger([x for x, _ in a + b], [y for _, y in a + b], missing_truth=miss, extra_pred=extra)
    la = feature_ledger([x for x, _ in a], [y for _, y in a], missing_truth=miss)
    lb = feature_ledger([x for x, _ in b], [y for _, y in b], extra_pred=extra)
    merged = la + lb
    assert merged.rows == whole.rows and merged.correct == whole.correct
    assert {k: v.to_dict() for k, v in merged.per_label.items()} == {k: v.to_dict() for k, v in whole.per_label.items()}


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_metrics_in_range_and_f1_formula(ab):
    m = feature_metrics(feature_ledger([x for x, _ in ab], [y for _, y in ab]))
    for k in ("precision", "recall", "f1", "specificity", "micro_accuracy"):
        assert 0.0 <= getattr(m, k) <= 1.0
    for v in m.labels.values():
        p, r = v["precision"], v["recall"]
        if p + r > 0:
            assert v["f1"] == pytest.approx(2 * p * r / (p + r))
    # "7" and "7.0" are the same number
    if ab:
        same = feature_ledger([x for x, _ in ab], [x for x, _ in ab])
        assert feature_metrics(same).f1 == 1.0 and feature_metrics(same).micro_accuracy == 1.0


def test_positive_label_not_observed_and_zero_division():
    led = feature_ledger(["a", "b"], ["a", "a"])
    m = feature_metrics(led, positive_label="zzz")
    assert m.mode == "binary" and "positive_label_not_observed" in m.flags
    assert (m.precision, m.recall, m.f1, m.specificity) == (0.0, 0.0, 0.0, 1.0)
    # a label only predicted has undefined recall: zero_division decides, as in scikit-learn
    m1 = feature_metrics(feature_ledger(["a"], ["b"]), zero_division=1.0)
    assert m1.labels["b"]["recall"] == 1.0 and m1.labels["b"]["precision"] == 0.0
    m0 = feature_metrics(feature_ledger([], []))
    assert m0.micro_accuracy == 0.0 and "no_rows" in m0.flags and m0.labels == {}


@pytest.mark.parametrize("values", [[True, 1], [1, True], [10**20, 1e20], [1e20, 10**20]])
def test_labels_of_equal_values_of_different_types_do_not_depend_on_row_order(values):
    # True == 1 in Python: a plain factorize gave both rows the label of whichever came first
    codes, table = LabelEncoder("auto").encode([np.asarray(values, dtype=object)])
    assert sorted(table[c] for c in codes[0]) == sorted(LabelEncoder("auto").key(v) for v in values)
    keys = [LabelEncoder("auto").key(v) for v in values]
    assert (codes[0][0] == codes[0][1]) == (keys[0] == keys[1])  # 10**20 and 1e20 are one number; True is not 1


def test_shown_ids_are_the_smallest_whatever_the_row_order():
    ids = [f"r{i:05d}" for i in range(12_000)]
    truth = pd.DataFrame({"c": ["x"] * len(ids)}, index=ids[::-1])  # descending: the smallest ids come last
    r = score_labels(truth, [ModelLabels(name="m", values=truth.iloc[:1])])
    assert "'r00000', 'r00001', 'r00002', 'r00003', 'r00004' …" in r.warnings[0]
