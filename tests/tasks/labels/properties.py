"""The `labels` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extracteval.tasks.labels.semantics import MISSING, ModelLabels, score_labels

from tests.contract.properties import Truth, Pred, PropertyCase, _NORM, _renormalised, _ids, _frame

# ---------------------------------------------------------------------------------------------
# labels: truth/pred = id → {feature: label}; predictions may miss truth ids and add others

LABELS = ["cat", "dog", "bird", "7", "7.0", None]
FEATURES = ["colour", "size"]


@st.composite
def _labels_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 12))
    label = st.sampled_from(LABELS)
    row = st.fixed_dictionaries({f: label for f in FEATURES})
    ids = _ids(n)
    truth = dict(zip(ids, draw(st.lists(row, min_size=n, max_size=n))))
    pred = {i: {f: (truth[i][f] if draw(st.booleans()) else draw(label)) for f in FEATURES} for i in ids if draw(st.integers(0, 5))}
    for j in range(draw(st.integers(0, 2))):
        pred[f"x{j}"] = draw(row)  # a prediction for a record the truth does not have
    return truth, pred


def _score_labels(truth: Truth, pred: Pred) -> Any:
    return score_labels(_frame(truth, FEATURES), [ModelLabels(name="m", values=_frame(pred, FEATURES))]).models["m"]


def _labels_views(m: Any) -> dict[str, Any]:
    return {"aligned": m.aligned, "strict": m.strict}


def _labels_bounded(m: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for vn, v in _labels_views(m).items():
        out |= {f"{vn}.row_accuracy": v.row_accuracy} | {f"{vn}.totals.{k}": x for k, x in v.totals.items()}
        for f, fm in v.features.items():
            out |= {f"{vn}.{f}.{k}": getattr(fm, k) for k in ("precision", "recall", "f1", "specificity", "micro_accuracy")}
            for lab, d in fm.labels.items():
                out |= {f"{vn}.{f}.{lab}.{k}": d[k] for k in ("precision", "recall", "f1", "specificity")}
    return out


def _labels_prf(m: Any) -> dict[str, tuple[float, float, float]]:
    # per label only: a feature's P, R and F1 are macro averages, and a mean of F1s is not the F1
    # of the mean P and R
    return {f"{vn}.{f}.{lab}": (d["precision"], d["recall"], d["f1"])
            for vn, v in _labels_views(m).items() for f, fm in v.features.items() for lab, d in fm.labels.items()}


def _labels_perfect(m: Any, truth: Truth) -> dict[str, float]:
    out: dict[str, float] = {}
    for vn, v in _labels_views(m).items():
        out |= {f"{vn}.row_accuracy": v.row_accuracy} | {f"{vn}.totals.{k}": v.totals[k] for k in ("precision", "recall", "f1", "micro_accuracy")}
        for f, fm in v.features.items():
            for lab, d in fm.labels.items():
                out |= {f"{vn}.{f}.{lab}.{k}": d[k] for k in ("precision", "recall", "f1")}
                if d["tn"] + d["fp"]:  # specificity is undefined for a label on every row
                    out[f"{vn}.{f}.{lab}.specificity"] = d["specificity"]
    return out


def _labels_recall(m: Any) -> dict[str, tuple[float, int]]:
    # Recall of a label: rows whose truth is that label and that were predicted with it / rows
    # whose truth is that label, in the strict view (rows without a prediction count). An empty
    # prediction (no row, or every value missing) finds no label; "<MISSING>" is left out, as a
    # prediction of nothing is right about a truth of nothing.
    fms = m.strict.features
    return {f"strict.{f}.{lab}.recall": (d["recall"], d["support"]) for f, fm in fms.items() for lab, d in fm.labels.items() if lab != MISSING}


def _labels_found(m: Any) -> int:
    return sum(d["tp"] for fm in m.strict.features.values() for lab, d in fm.labels.items() if lab != MISSING)


def _labels_scorable(truth: Truth) -> bool:
    # a feature missing in every truth record is refused (nothing to score)
    return bool(truth) and all(any(_NORM.key(r[f]) is not None for r in truth.values()) for f in FEATURES)


PROPERTIES = PropertyCase(
    name="labels",
    records=_labels_records(),
    score=_score_labels,
    ledger=lambda m: {"ledgers": {v: dict(fs) for v, fs in m.ledgers.items()},
                      "rows": {"aligned": m.aligned_rows, "missing": m.missing_rows, "extra": m.extra_rows}},
    bounded=_labels_bounded,
    prf=_labels_prf,
    perfect=lambda t: {i: dict(row) for i, row in t.items()},
    perfect_metrics=_labels_perfect,
    empties=(lambda t: {}, lambda t: {i: {f: None for f in FEATURES} for i in t}),
    recall=_labels_recall,
    found=_labels_found,
    canonical=lambda m: m.to_dict(),
    scorable=_labels_scorable,
    normalise=lambda p: {i: {f: _renormalised(v) for f, v in row.items()} for i, row in p.items()},
)


