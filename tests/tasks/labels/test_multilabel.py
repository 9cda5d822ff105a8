"""Multi-label features (`--multi-label FEATURE[=SEP]`): label sets scored against scikit-learn's
indicator layout (MultiLabelBinarizer fitted on the union of truth and predicted labels)."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, hamming_loss, precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer

from extracteval.errors import InputError
from extracteval.tasks.labels.semantics import LabelsConfig, LabelsLedger, ModelLabels, labels_ledger, labels_result, score_labels

POOL = ["red", "Red", " BLUE", "blue", "green", "x", "Y", "y "]  # a category feature: `Red` is `red`, `y ` is `y`


def _norm(label: str) -> str:
    return label.strip().casefold()


def _cell(rng: random.Random, labels: list[str]) -> object:
    """A set of labels written as a list, a `;` text cell (duplicates, spaces) or a missing cell."""
    if not labels and rng.random() < 0.5:
        return rng.choice([None, float("nan"), ""])
    form = rng.random()
    if form < 0.35:
        return list(labels)
    if form < 0.5:
        return json.dumps(labels)
    items = labels + ([labels[0]] if labels and rng.random() < 0.3 else [])
    return "; ".join(items) if rng.random() < 0.5 else ";".join(items)


def _random_case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, list[set], list[set], list[set], list[set]]:
    """Truth and predictions of one multi-label feature, and the (truth, predicted) sets of the aligned and strict rows."""
    rng = random.Random(seed)
    n = rng.randint(1, 25)
    pool = POOL[: rng.randint(2, len(POOL))]

    def draw() -> list[str]:
        return rng.sample(pool, rng.randint(0, min(3, len(pool))))

    truth = {f"r{i}": draw() for i in range(n)}
    pred = {}
    for i, t in truth.items():
        if rng.random() < 0.15:
            continue  # no prediction: the empty predicted set in the strict view
        pred[i] = list(t) if rng.random() < 0.3 else draw()
    for j in range(rng.randint(0, 3)):
        pred[f"extra{j}"] = draw()  # no truth: the empty truth set in the strict view
    tf = pd.DataFrame({"tags": [_cell(rng, v) for v in truth.values()]}, index=list(truth), dtype=object)
    pf = pd.DataFrame({"tags": [_cell(rng, v) for v in pred.values()]}, index=list(pred), dtype=object)
    as_set = lambda labels: {_norm(x) for x in labels}  # noqa: E731
    al_t = [as_set(truth[i]) for i in truth if i in pred]
    al_p = [as_set(pred[i]) for i in truth if i in pred]
    st_t = al_t + [as_set(truth[i]) for i in truth if i not in pred] + [set() for i in pred if i not in truth]
    st_p = al_p + [set() for i in truth if i not in pred] + [as_set(pred[i]) for i in pred if i not in truth]
    return tf, pf, al_t, al_p, st_t, st_p


def _sklearn(t_sets: list[set], p_sets: list[set], zd: float) -> dict[str, float]:
    mlb = MultiLabelBinarizer().fit(t_sets + p_sets)
    yt, yp = mlb.transform(t_sets), mlb.transform(p_sets)
    # one label column reads as a binary target: the label's values through labels=[1], the samples average and subset
    # accuracy over the indicator with an all-zero column beside it (which changes neither)
    one = yt.shape[1] == 1
    pad = lambda y: np.hstack([y, np.zeros_like(y)]) if one else y  # noqa: E731
    kw = {"labels": [1]} if one else {}
    yt1, yp1 = (y.ravel() if one else y for y in (yt, yp))
    out = {}
    for avg in ("macro", "weighted", "micro", "samples"):
        p, r, f, _ = precision_recall_fscore_support(pad(yt), pad(yp), average=avg, zero_division=zd) if avg == "samples" else \
            precision_recall_fscore_support(yt1, yp1, average=avg, zero_division=zd, **kw)
        out.update({f"{avg}/precision": p, f"{avg}/recall": r, f"{avg}/f1": f})
    out["subset_accuracy"] = accuracy_score(pad(yt), pad(yp))
    out["hamming_loss"] = hamming_loss(yt, yp)
    p, r, f, s = precision_recall_fscore_support(yt1, yp1, average=None, zero_division=zd, **kw)
    out["per_label"] = {lab: (p[i], r[i], f[i], s[i]) for i, lab in enumerate(mlb.classes_)}
    return out


def _ours(fm: object) -> dict[str, float]:
    d = fm.to_dict()
    out = {f"macro/{k}": d[k] for k in ("precision", "recall", "f1")}
    for avg in ("weighted", "micro", "samples"):
        out.update({f"{avg}/{k}": d[avg][k] for k in ("precision", "recall", "f1")})
    out["subset_accuracy"] = d["subset_accuracy"]
    out["hamming_loss"] = d["hamming_loss"]
    out["per_label"] = {lab: (v["precision"], v["recall"], v["f1"], v["support"]) for lab, v in d["labels"].items()}
    return out


CONFIG = {"multi_label": {"tags": None}, "types": {"tags": "category"}}
SEEDS = range(300)
AGREED: dict[str, int] = {}


@pytest.mark.parametrize("zd", [0.0, 1.0])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_average_subset_accuracy_and_hamming_loss_equal_sklearn(seed, zd):
    tf, pf, al_t, al_p, st_t, st_p = _random_case(seed)
    if not any(al_t + st_t):
        with pytest.raises(InputError, match="every ground-truth record"):
            score_labels(tf, [ModelLabels(name="m", values=pf)], config=LabelsConfig(**CONFIG, zero_division=zd))
        return
    m = score_labels(tf, [ModelLabels(name="m", values=pf)], config=LabelsConfig(**CONFIG, zero_division=zd)).models["m"]
    # a missing or extra row is never right whole (scikit-learn would count one whose present side is empty)
    right_aligned = sum(a == b for a, b in zip(al_t, al_p))
    for view, t_sets, p_sets in (("aligned", al_t, al_p), ("strict", st_t, st_p)):
        subset = right_aligned / len(t_sets) if t_sets else zd
        if not set().union(*t_sets, *p_sets):  # no label at all (scikit-learn takes no indicator without columns)
            fm = getattr(m, view).features["tags"]
            assert fm.hamming_loss == 0.0 and fm.micro_accuracy == subset
            continue
        want, got = _sklearn(t_sets, p_sets, zd), _ours(getattr(m, view).features["tags"])
        if view == "aligned":
            assert want["subset_accuracy"] == pytest.approx(subset, abs=1e-12)
        want["subset_accuracy"] = subset
        assert set(got["per_label"]) == set(want["per_label"])
        for lab, values in want["per_label"].items():
            assert np.allclose(got["per_label"][lab], values), (view, lab)
        for k, v in want.items():
            if k != "per_label":
                assert got[k] == pytest.approx(v, abs=1e-12), (view, k, got[k], v)
                AGREED[k] = AGREED.get(k, 0) + 1
        fm = getattr(m, view).features["tags"]
        assert fm.mode == "multi_label" and fm.micro_accuracy == fm.to_dict()["subset_accuracy"]


def test_agreement_was_checked_for_every_metric():
    # runs after the parametrised cases above (file order): each metric agreed on hundreds of random cases
    assert set(AGREED) >= {"macro/f1", "micro/f1", "weighted/f1", "samples/f1", "subset_accuracy", "hamming_loss"}
    assert min(AGREED.values()) >= 500, AGREED


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([0.0, 1.0]))
def test_hypothesis_samples_and_micro_equal_sklearn(seed, zd):
    tf, pf, al_t, al_p, st_t, st_p = _random_case(seed)
    if not any(st_t):
        return
    m = score_labels(tf, [ModelLabels(name="m", values=pf)], config=LabelsConfig(**CONFIG, zero_division=zd)).models["m"]
    want, got = _sklearn(st_t, st_p, zd), _ours(m.strict.features["tags"])
    want["subset_accuracy"] = sum(a == b for a, b in zip(al_t, al_p)) / len(st_t)  # a missing or extra row is never right whole
    for k in ("samples/precision", "samples/recall", "samples/f1", "micro/f1", "macro/f1", "subset_accuracy", "hamming_loss"):
        assert got[k] == pytest.approx(want[k], abs=1e-12), k


@pytest.mark.parametrize("seed", range(40))
def test_ledgers_of_any_split_add_up_to_the_whole(seed):
    tf, pf, *_ = _random_case(seed)
    cfg = LabelsConfig(**CONFIG)
    feats = ["tags"]
    whole = labels_ledger(tf.set_axis(tf.index.astype(str)), [ModelLabels(name="m", values=pf)], config=cfg, features=feats)
    cut = random.Random(seed).randint(0, len(tf))
    parts = []
    for part, ids in enumerate((tf.index[:cut], tf.index[cut:])):
        extra = pf.index.difference(tf.index) if part else pf.index[:0]  # rows without truth come with the last part
        parts.append(labels_ledger(tf.loc[ids], [ModelLabels(name="m", values=pf.loc[pf.index.intersection(ids).union(extra, sort=False)])],
                                   config=cfg, features=feats))
    merged: LabelsLedger = parts[0] + parts[1]
    assert merged.models["m"].strict["tags"] == whole.models["m"].strict["tags"]
    assert merged.models["m"].aligned["tags"] == whole.models["m"].aligned["tags"]
    if any(tf["tags"].map(lambda v: bool(v) and v == v)):
        try:
            a = labels_result(merged, config=cfg, features=feats).to_dict()
            b = labels_result(whole, config=cfg, features=feats).to_dict()
        except InputError:
            return
        assert a["models"] == b["models"]


def test_single_label_feature_samples_are_those_of_one_element_sets():
    t = pd.DataFrame({"c": ["a", "b", "a", "b"]}, index=["1", "2", "3", "4"])
    p = pd.DataFrame({"c": ["a", "a", "b", "z"]}, index=["1", "2", "3", "9"])
    m = score_labels(t, [ModelLabels(name="m", values=p)], config=LabelsConfig(zero_division=1.0)).models["m"]
    yt = [{"a"}, {"b"}, {"a"}, {"b"}, set()]
    yp = [{"a"}, {"a"}, {"b"}, set(), {"z"}]
    mlb = MultiLabelBinarizer().fit(yt + yp)
    want = precision_recall_fscore_support(mlb.transform(yt), mlb.transform(yp), average="samples", zero_division=1.0)[:3]
    got = m.strict.features["c"].samples
    assert (got["precision"], got["recall"], got["f1"]) == pytest.approx(want)
    assert m.strict.samples == got  # one feature: the view's samples totals are its own
    assert "micro" not in m.strict.features["c"].to_dict() and m.strict.features["c"].mode == "macro"


def test_separator_items_null_items_and_duplicates():
    t = pd.DataFrame({"tags": ["a | B |a", ["b", "c", None], "n/a", None]}, index=["1", "2", "3", "4"])
    p = pd.DataFrame({"tags": ["b|a", '["C", "b", "b"]', "", "a"]}, index=["1", "2", "3", "4"])
    m = score_labels(t, [ModelLabels(name="m", values=p)], config=LabelsConfig(multi_label={"tags": "|"})).models["m"]
    fm = m.strict.features["tags"]
    assert fm.correct == 3 and fm.micro_accuracy == 0.75  # {a,b}, {b,c}, {} (n/a is null under auto) right; {} vs {a} wrong
    assert set(fm.labels) == {"a", "b", "c"} and fm.labels["a"]["fp"] == 1


@pytest.mark.parametrize("bad", [{"tags": ""}, {"tags": "  "}, {"tags": 3}, {"tags": "a[b"}])
def test_bad_separator_is_refused(bad):
    with pytest.raises(InputError, match="separator"):
        LabelsConfig(multi_label=bad)


def test_unknown_or_conflicting_multi_label_feature_is_refused():
    t = pd.DataFrame({"tags": ["a"]}, index=["1"])
    with pytest.raises(InputError, match="multi_label given for features \\['nope'\\]"):
        score_labels(t, [ModelLabels(name="m", values=t)], config=LabelsConfig(multi_label={"nope": None}))
    with pytest.raises(InputError, match="multi-label"):
        LabelsConfig(multi_label={"tags": None}, positive_labels={"tags": "a"})
