"""`zero_division="nan"` against scikit-learn's `zero_division=np.nan`: per-label precision, recall and
F1, the macro, weighted, micro and samples averages and accuracy, on random inputs with absent and
declared classes, positive labels, rows present on one side only and empty features. Values are
equal to 1e-12, an undefined value (NaN) equal only to NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer

from extracteval.errors import InputError
from extracteval.tasks.labels.semantics import MISSING, LabelsConfig, ModelLabels, feature_ledger, score_labels, view_metrics
from tests.tasks.labels.test_multilabel import CONFIG, _ours, _random_case

NAN = float("nan")
POOL = ["cat", "dog", "bird", None, "fish"]
AGREED: dict[str, int] = {}  # average → Hypothesis cases compared (single-label and multi-label)
CHANGED: dict[str, int] = {}  # average → of those, the cases where np.nan gives other values than zero_division=0 (the rule at work)


def same(got: float, want: float) -> bool:
    """Equal to 1e-12; NaN equals only NaN."""
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return abs(got - want) <= 1e-12


def _agreed(avg: str, got: tuple, want: tuple, zero: tuple, what: object = "") -> None:
    """One case of one average: our values `got` equal scikit-learn's under np.nan (`want`);
    `zero` (scikit-learn's under zero_division=0) tells whether the NaN rule changed anything."""
    for g, w in zip(got, want):
        assert same(float(g), float(w)), (avg, got, want, what)
    AGREED[avg] = AGREED.get(avg, 0) + 1
    CHANGED[avg] = CHANGED.get(avg, 0) + (not all(same(float(w), float(z)) for w, z in zip(want, zero)))


def _name(v: object) -> str:
    return MISSING if v is None else str(v)


def _sk_prf(yt: list, yp: list, labels: list, average: str | None, zd: float = np.nan) -> tuple:
    return precision_recall_fscore_support(yt, yp, labels=labels, average=average, zero_division=zd)[:3]


def _sk_both(yt: list, yp: list, labels: list, average: str | None) -> tuple[tuple, tuple]:
    """scikit-learn's (precision, recall, F1) under zero_division=np.nan and under 0."""
    return _sk_prf(yt, yp, labels, average), _sk_prf(yt, yp, labels, average, 0.0)


labels_ = st.sampled_from(POOL)


@st.composite
def single_label_cases(draw: st.DrawFn) -> dict:
    """Aligned pairs (mostly right), missing and extra rows, maybe declared classes (one may occur
    nowhere), maybe a positive label (maybe one that occurs nowhere)."""
    t = draw(st.lists(labels_, max_size=25))
    p = [x if draw(st.booleans()) else draw(labels_) for x in t]
    miss, extra = draw(st.lists(labels_, max_size=4)), draw(st.lists(labels_, max_size=4))
    declared = draw(st.none() | st.lists(st.sampled_from(["cat", "dog", "bird", "fish", "newt", MISSING]), min_size=1, max_size=4, unique=True))
    positive = None if declared is not None else draw(st.none() | st.sampled_from(["cat", "dog", "newt", MISSING]))
    return {"t": t, "p": p, "miss": miss, "extra": extra, "declared": declared, "positive": positive}


@settings(max_examples=400, deadline=None)
@given(single_label_cases())
def test_single_label_feature_equals_sklearn_nan(case):
    t, p, miss, extra = case["t"], case["p"], case["miss"], case["extra"]
    led = feature_ledger(t, p, missing_truth=miss, extra_pred=extra)
    rows = len(t) + len(miss) + len(extra)
    classes = {"f": case["declared"]} if case["declared"] else None
    v = view_metrics("strict", {"f": led}, correct_rows=led.correct, rows=rows, zero_division=NAN, classes=classes,
                     positive_labels={"f": case["positive"]}, sets=[])
    fm = v.features["f"]
    # unaligned rows as sentinels that are not labels: a missing prediction, a truth that is not there
    yt = [_name(x) for x in t] + [_name(x) for x in miss] + ["\x00no-truth"] * len(extra)
    yp = [_name(x) for x in p] + ["\x00no-pred"] * len(miss) + [_name(x) for x in extra]
    observed = sorted({x for x in yt + yp if not x.startswith("\x00")})
    if not rows:  # an empty feature: nothing is defined
        assert all(math.isnan(x) for x in (fm.precision, fm.recall, fm.f1, fm.micro_accuracy, v.row_accuracy, *fm.weighted.values()))
        assert all(math.isnan(x) for x in (*fm.samples.values(), *v.totals.values()))
        return
    averaged = case["declared"] or observed
    (P, R, F), (P0, R0, F0) = _sk_both(yt, yp, observed, None)
    for i, lab in enumerate(observed):
        _agreed("per-label", [fm.labels[lab][k] for k in ("precision", "recall", "f1")], (P[i], R[i], F[i]), (P0[i], R0[i], F0[i]), lab)
    ours = (fm.precision, fm.recall, fm.f1)
    if case["positive"] is not None:  # the positive label's one-vs-rest values (scikit-learn's labels=[pos])
        want, zero = _sk_both(yt, yp, [case["positive"]], None)
        _agreed("binary", ours, [w[0] for w in want], [z[0] for z in zero])
    else:
        _agreed("macro", ours, *_sk_both(yt, yp, averaged, "macro"))
    _agreed("weighted", [fm.weighted[k] for k in ("precision", "recall", "f1")], *_sk_both(yt, yp, averaged, "weighted"))
    # the samples average over one-element sets (an unaligned row: the empty set on its missing side)
    t_sets = [set() if x.startswith("\x00") else {x} for x in yt]
    p_sets = [set() if x.startswith("\x00") else {x} for x in yp]
    mlb = MultiLabelBinarizer().fit(t_sets + p_sets)
    pad = lambda y: np.hstack([y, np.zeros((len(y), 1), dtype=y.dtype)])  # noqa: E731 - an all-zero column changes no row's values
    yt_i, yp_i = pad(mlb.transform(t_sets)), pad(mlb.transform(p_sets))
    _agreed("samples", [fm.samples[k] for k in ("precision", "recall", "f1")],
            *(precision_recall_fscore_support(yt_i, yp_i, average="samples", zero_division=zd)[:3] for zd in (np.nan, 0.0)))
    _agreed("accuracy", [fm.micro_accuracy], [accuracy_score(yt, yp)], [accuracy_score(yt, yp)])
    assert same(v.totals["f1"], fm.f1) and same(v.samples["f1"], fm.samples["f1"])  # one feature: the view's totals are its values


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([False, False, False, True]))
def test_multi_label_feature_equals_sklearn_nan(seed, silent):
    tf, pf, al_t, al_p, st_t, st_p = _random_case(seed)
    if silent:  # a model that predicts no label at all (its rows stay): precision undefined everywhere, micro too
        pf = pf.assign(tags=None)
        al_p, st_p = [set() for _ in al_p], [set() for _ in st_p]
    cfg = LabelsConfig(**CONFIG, zero_division="nan")
    if not any(st_t):
        with pytest.raises(InputError, match="every ground-truth record"):
            score_labels(tf, [ModelLabels(name="m", values=pf)], config=cfg)
        return
    m = score_labels(tf, [ModelLabels(name="m", values=pf)], config=cfg).models["m"]
    for view, t_sets, p_sets in (("aligned", al_t, al_p), ("strict", st_t, st_p)):
        got = _ours(getattr(m, view).features["tags"])
        if not set().union(*t_sets, *p_sets):  # no label at all: every average undefined
            assert all(math.isnan(got[f"{a}/{k}"]) for a in ("macro", "weighted", "micro") for k in ("precision", "recall", "f1"))
            continue
        mlb = MultiLabelBinarizer().fit(t_sets + p_sets)
        yt, yp = mlb.transform(t_sets), mlb.transform(p_sets)
        # an all-zero column keeps one label column an indicator matrix; it is no label: the averages over labels name the real ones
        pad = lambda y: np.hstack([y, np.zeros((len(y), 1), dtype=y.dtype)])  # noqa: E731
        for avg in ("macro", "weighted", "micro", "samples"):
            kw = {} if avg == "samples" else {"labels": list(range(yt.shape[1]))}
            want, zero = (precision_recall_fscore_support(pad(yt), pad(yp), average=avg, zero_division=zd, **kw)[:3] for zd in (np.nan, 0.0))
            _agreed(f"multi-label {avg}", [got[f"{avg}/{k}"] for k in ("precision", "recall", "f1")], want, zero, view)
        (P, R, F, _), (P0, R0, F0, _) = (precision_recall_fscore_support(pad(yt), pad(yp), average=None, zero_division=zd, labels=list(range(yt.shape[1])))
                                         for zd in (np.nan, 0.0))
        for i, lab in enumerate(mlb.classes_):
            _agreed("multi-label per-label", got["per_label"][lab][:3], (P[i], R[i], F[i]), (P0[i], R0[i], F0[i]), (view, lab))

def test_agreement_was_checked_for_every_average():
    # runs after the Hypothesis cases above (file order): every average compared many times, undefined values among them
    for avg in ("per-label", "macro", "weighted", "samples", "binary", "accuracy", "multi-label macro", "multi-label weighted",
                "multi-label micro", "multi-label samples", "multi-label per-label"):
        assert AGREED.get(avg, 0) >= 30, (avg, AGREED)
    for avg in ("per-label", "macro", "weighted", "samples", "binary", "multi-label macro", "multi-label weighted", "multi-label samples",
                "multi-label micro", "multi-label per-label"):
        assert CHANGED.get(avg, 0) >= 5, (avg, CHANGED)
    print("\ncases compared:", dict(sorted(AGREED.items())), "\nof which np.nan changed the values:", dict(sorted(CHANGED.items())))


# ---- fixed cases: each rule once, by hand


def test_an_undefined_ratio_is_left_out_of_the_averages_not_counted_as_zero():
    # `newt` is predicted once and never true: its recall is undefined and left out; `cat` is never predicted: its precision
    led = feature_ledger(["cat", "dog", "dog"], ["dog", "dog", "newt"])
    fm = view_metrics("aligned", {"f": led}, correct_rows=1, rows=3, zero_division=NAN).features["f"]
    assert math.isnan(fm.labels["cat"]["precision"]) and math.isnan(fm.labels["newt"]["recall"])
    assert fm.precision == pytest.approx((0.5 + 0.0) / 2)  # dog 1/2, newt 0/1; cat left out
    assert fm.recall == pytest.approx((0.0 + 0.5) / 2)  # cat 0/1, dog 1/2; newt left out
    zero = view_metrics("aligned", {"f": led}, correct_rows=1, rows=3, zero_division=0.0).features["f"]
    assert zero.precision == pytest.approx(0.5 / 3)  # zero_division 0: cat's precision counts as 0


def test_a_declared_class_that_occurs_nowhere_is_undefined_and_left_out():
    led = feature_ledger(["cat", "dog"], ["cat", "dog"])
    fm = view_metrics("aligned", {"f": led}, correct_rows=2, rows=2, zero_division=NAN, classes={"f": ["cat", "dog", "newt"]}).features["f"]
    assert all(math.isnan(fm.labels["newt"][k]) for k in ("precision", "recall", "f1"))
    assert (fm.precision, fm.recall, fm.f1) == (1.0, 1.0, 1.0)  # as scikit-learn's labels=[…] with np.nan; 0 would give 2/3


def test_a_view_total_leaves_undefined_features_out():
    perfect = feature_ledger(["a", "b"], ["a", "b"])
    unanswered = feature_ledger([], [], missing_truth=["x", "y"])  # no prediction at all: every precision undefined
    v = view_metrics("strict", {"f": perfect, "g": unanswered}, correct_rows=0, rows=2, zero_division=NAN)
    assert math.isnan(v.features["g"].precision) and v.features["g"].recall == 0.0
    assert v.totals["precision"] == 1.0 and v.totals["recall"] == 0.5


def test_row_accuracy_of_a_view_without_rows_is_undefined_under_nan_only():
    empty = feature_ledger([], [])
    assert math.isnan(view_metrics("strict", {"f": empty}, correct_rows=0, rows=0, zero_division=NAN).row_accuracy)
    assert view_metrics("strict", {"f": empty}, correct_rows=0, rows=0, zero_division=1.0).row_accuracy == 0.0  # as before


@pytest.mark.parametrize("given", ["nan", "NaN", " nan ", NAN, np.float64("nan")])
def test_the_option_reads_nan_in_any_form_and_writes_it_as_text(given):
    cfg = LabelsConfig(zero_division=given)
    assert math.isnan(cfg.zero_division) and cfg.to_dict()["zero_division"] == "nan"
    assert LabelsConfig(**{"zero_division": cfg.to_dict()["zero_division"]}).to_dict() == cfg.to_dict()  # round trip


@pytest.mark.parametrize("bad", ["none", "inf", float("inf"), -0.1, 1.5, True, [0.5]])
def test_other_values_are_refused_by_name(bad):
    with pytest.raises(InputError, match=r'Expected `zero_division` to be a number in \[0, 1\] or "nan"'):
        LabelsConfig(zero_division=bad)

