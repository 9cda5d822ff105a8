"""`core.slices`: values and bins, Holm's correction, the bootstrap p-value, the cluster rows,
and slice metrics as sums of per-record counts (Hypothesis)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.bootstrap import bootstrap_counts, cluster_sums
from extracteval.core.ranking import RankingSpec
from extracteval.core.slices import ALL, CROSS, MISSING, SliceOptions, bootstrap_p_value, holm, slice_report, slice_values

SPEC = RankingSpec(task="t", primary="f1", label="F1", tie_breaks=("precision",))


def _f1(s: np.ndarray) -> np.ndarray:
    tp, fp, fn = (np.asarray(s[..., k], dtype=np.float64) for k in range(3))
    den = 2 * tp + fp + fn
    return np.divide(2 * tp, den, out=np.zeros(np.shape(den)), where=den != 0)


def _precision(s: np.ndarray) -> np.ndarray:
    tp, fp = (np.asarray(s[..., k], dtype=np.float64) for k in range(2))
    return np.divide(tp, tp + fp, out=np.zeros(np.shape(tp)), where=(tp + fp) != 0)


METRICS = {"f1": _f1, "precision": _precision}


def _holm_by_definition(p: list[float]) -> list[float]:
    """Holm's adjusted p-value of each hypothesis: the largest, over the hypotheses ranked at or
    before it, of (m − rank + 1) · p, capped at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for pos, i in enumerate(order):
        out[i] = min(1.0, max((m - k) * p[order[k]] for k in range(pos + 1)))
    return out


@given(st.lists(st.floats(0, 1), min_size=0, max_size=12))
def test_holm_matches_its_definition(p: list[float]) -> None:
    assert holm(p) == pytest.approx(_holm_by_definition(p), abs=1e-12)


def test_holm_known_values() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]


def test_bootstrap_p_value_counts_the_observed_sample() -> None:
    assert bootstrap_p_value(np.ones(999)) == pytest.approx(2 / 1000)
    assert bootstrap_p_value(np.r_[np.ones(500), -np.ones(499)]) == 1.0
    assert bootstrap_p_value(np.zeros(0)) == 1.0


def test_cluster_sums_keep_the_metric_and_move_clusters_together() -> None:
    rows = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [1, 1, 0]])
    c = cluster_sums(rows, ["a", "b", "a", "c"])
    assert c.tolist() == [[2, 0, 1], [0, 1, 0], [1, 1, 0]]
    assert _f1(c.sum(axis=0)) == _f1(rows.sum(axis=0))
    with pytest.raises(ValueError):
        cluster_sums(rows, ["a"])


def test_values_bins_and_crossings() -> None:
    meta = pd.DataFrame({"n": [1, 2, 3, 4, 5, 6, 7, 8, None], "kind": ["x", "y", "x", "y", "x", "y", "x", "y", "x"], "few": [1, 1, 2, 2, 1, 1, 2, 2, 1]})
    values, order = slice_values(meta, ("n",), SliceOptions(bins=2))
    assert order == ["[1, 4.5]", "(4.5, 8]", MISSING] and values[0] == "[1, 4.5]" and values[-1] == MISSING
    values, order = slice_values(meta, ("n",), SliceOptions(edges={"n": (0.0, 3.0, 10.0)}))
    assert order == ["[0, 3]", "(3, 10]", MISSING]
    _, order = slice_values(meta, ("few",), SliceOptions(bins=4))  # two distinct numbers: taken as they are
    assert order == ["1", "2"]
    values, order = slice_values(meta, ("kind", "few"), SliceOptions())
    assert order == [f"x{CROSS}1", f"x{CROSS}2", f"y{CROSS}1", f"y{CROSS}2"] and values[0] == f"x{CROSS}1"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40), st.integers(2, 4), st.sampled_from([None, "c"]))
def test_slice_metrics_are_the_metrics_of_its_records(seed: int, n: int, n_models: int, cluster: str | None) -> None:
    """Every slice's values are the metrics of its records' summed counts; its interval is the
    bootstrap of its records (or clusters) alone; the slice of all records is the whole sample."""
    rng = np.random.default_rng(seed)
    arrays = {f"m{k}": rng.integers(0, 3, size=(n, 3)) for k in range(n_models)}
    meta = pd.DataFrame({"g": rng.choice(["a", "b", "c"], size=n), "c": rng.integers(0, 5, size=n).astype(str)})
    opts = SliceOptions(by=(("g",),), min_size=1, cluster_by=cluster, resamples=50, seed=seed % 7)
    report = slice_report(arrays, meta, METRICS, SPEC, opts)
    groups = meta["g"].to_numpy()
    for row in report.rows:
        idx = np.arange(n) if row["slice"] == ALL else np.flatnonzero(groups == row["value"])
        summed = arrays[row["model"]][idx].sum(axis=0)
        assert row["metrics/f1"] == float(_f1(summed)) and row["estimate"] == row["metrics/f1"]
        assert row["metrics/precision"] == float(_precision(summed))
        assert row["records"] == len(idx)
        rows = {m: a[idx] for m, a in arrays.items()}
        if cluster:
            rows = {m: cluster_sums(r, ["v" + c for c in meta["c"].to_numpy()[idx]], natural=True) for m, r in rows.items()}
        if len(next(iter(rows.values()))) < 2:  # one record or one cluster: nothing to resample, no interval
            assert (row["low"], row["high"]) == (None, None) and (row["slice"] == ALL or not row["ranked"])
            continue
        per, _ = bootstrap_counts(rows, _f1, resamples=50, seed=seed % 7)
        assert (row["low"], row["high"]) == (per[row["model"]].low, per[row["model"]].high)
    # ranks inside a slice follow the slice's values; the gaps are between adjacent ranks
    for (s, v), rows in itertools.groupby(report.rows, key=lambda r: (r["slice"], r["value"])):
        ranked = list(rows)  # a slice's rows come in its ranking order (unranked slices too)
        if s == ALL:  # all records keep the evaluation's own ranking: the order the models were given in
            assert [r["model"] for r in ranked] == list(arrays)
            continue
        assert all(a["metrics/f1"] >= b["metrics/f1"] - 1e-9 for a, b in zip(ranked, ranked[1:]))
    for g in report.gaps:
        assert 0.0 <= g["p_value"] <= g["p_holm"] <= 1.0


def test_small_slices_are_reported_not_ranked_and_weakest_is_ordered() -> None:
    rng = np.random.default_rng(3)
    n = 200
    good = rng.integers(0, 2, size=(n, 3))
    good[:, 0] += 2
    bad = good.copy()
    meta = pd.DataFrame({"g": ["big"] * 150 + ["hard"] * 40 + ["tiny"] * 10})
    bad[150:190, 0] = 0  # the model loses every tp on the `hard` slice
    report = slice_report({"a": good, "b": bad}, meta, METRICS, SPEC, SliceOptions(by=(("g",),), min_size=20, resamples=200))
    tiny = [r for r in report.rows if r["value"] == "tiny"]
    assert tiny and all(not r["ranked"] and r["rank"] is None for r in tiny)
    hard = {r["model"]: r for r in report.rows if r["value"] == "hard"}
    assert hard["a"]["winner"] and not hard["b"]["winner"]
    weakest = report.weakest["b"]
    assert weakest[0]["value"] == "hard" and weakest[0]["supported_drop"] > 0
    gap = next(g for g in report.gaps if g["value"] == "hard")
    assert gap["significant"] and gap["p_holm"] <= 3 * gap["p_value"] + 1e-12


def _report(arrays, meta, present=None, **kw):
    return slice_report(arrays, meta, METRICS, SPEC, SliceOptions(resamples=100, **kw), present=present)


def test_exact_ties_inside_a_slice_keep_the_evaluations_order() -> None:
    rows = np.array([[1, 0, 0]] * 30 + [[0, 1, 1]] * 30)
    zeta, alpha = rows.copy(), rows.copy()
    alpha[30:] = [1, 0, 0]  # alpha is better overall; on the first half the two tie
    meta = pd.DataFrame({"g": ["easy"] * 30 + ["hard"] * 30})
    report = _report({"alpha": alpha, "zeta": zeta}, meta, by=(("g",),))
    easy = [r for r in report.rows if r["value"] == "easy"]
    assert [r["model"] for r in easy] == ["alpha", "zeta"] and not easy[0]["ranking_differs"]
    tied = _report({"zeta": zeta, "alpha": zeta.copy()}, meta, by=(("g",),))
    assert [r["model"] for r in tied.rows if r["value"] == "easy"] == ["zeta", "alpha"]


def test_one_cluster_gives_no_interval_and_no_rank_and_all_records_are_always_ranked() -> None:
    rng = np.random.default_rng(1)
    arrays = {"a": rng.integers(0, 3, size=(40, 3)), "b": rng.integers(0, 3, size=(40, 3))}
    meta = pd.DataFrame({"vendor": ["v1"] * 25 + ["v2"] * 15})
    report = _report(arrays, meta, by=(("vendor",),), cluster_by="vendor", min_size=5)
    v1 = [r for r in report.rows if r["value"] == "v1"]
    assert all(r["low"] is None and r["high"] is None and not r["ranked"] for r in v1)
    assert not [g for g in report.gaps if g["slice"] == "vendor"]
    big = _report(arrays, meta, by=(("vendor",),), min_size=1000)  # no slice is big enough; all records still are ranked
    everything = [r for r in big.rows if r["slice"] == ALL]
    assert all(r["ranked"] for r in everything) and [g for g in big.gaps if g["slice"] == ALL]


def test_records_without_a_cluster_value_are_clusters_of_their_own() -> None:
    rng = np.random.default_rng(2)
    arrays = {"a": rng.integers(0, 3, size=(30, 3)), "b": rng.integers(0, 3, size=(30, 3))}
    meta = pd.DataFrame({"c": ["x"] * 10 + [None] * 10 + [""] * 5 + ["(missing)"] * 5})
    report = _report(arrays, meta, cluster_by="c")
    assert report.rows[0]["clusters"] == 1 + 15 + 1
    assert any("15 record(s) without a value" in n for n in report.notes)


def test_number_labels_stay_distinct_and_text_is_kept() -> None:
    meta = pd.DataFrame({"t": [1_700_000_000 + k for k in range(40)], "code": ["007", "7", "7.0", "x"] * 10,
                         "inf": [float("inf"), 1.0, 2.0, 3.0] * 10})
    values, order = slice_values(meta, ("t",), SliceOptions(bins=4))
    assert len(order) == 4 and len(set(order)) == 4 and sorted(set(values)) == sorted(order)
    assert [values.count(o) for o in order] == [10, 10, 10, 10]
    _, order = slice_values(meta, ("code",), SliceOptions(bins=10))
    assert set(order) == {"007", "7", "7.0", "x"}
    _, order = slice_values(meta, ("inf",), SliceOptions(bins=2))  # not all finite: taken as text
    assert "inf" in order


def test_crossed_values_holding_the_cross_sign() -> None:
    meta = pd.DataFrame({"a": ["p × q", "p", "p × q", "p"], "b": ["r", "r × s", "r", "r × s"]})
    values, order = slice_values(meta, ("a", "b"), SliceOptions())
    assert order == ["p × r × s", "p × q × r"] and values[0] == "p × q × r"


def test_a_note_when_holm_leaves_no_lead_a_chance() -> None:
    rng = np.random.default_rng(4)
    arrays = {"a": np.c_[rng.integers(1, 3, size=(600, 1)), np.zeros((600, 2), dtype=int)], "b": rng.integers(0, 3, size=(600, 3))}
    meta = pd.DataFrame({"g": [f"s{k % 30}" for k in range(600)]})
    report = slice_report(arrays, meta, METRICS, SPEC, SliceOptions(by=(("g",),), resamples=999))
    assert any("no lead can be significant" in n and "--resamples 1200" in n for n in report.notes)


def test_many_slice_values_are_grouped_once() -> None:
    n = 50_000
    rng = np.random.default_rng(5)
    arrays = {"a": rng.integers(0, 3, size=(n, 3)), "b": rng.integers(0, 3, size=(n, 3))}
    meta = pd.DataFrame({"g": [f"v{k % 2000}" for k in range(n)]})
    report = slice_report(arrays, meta, METRICS, SPEC, SliceOptions(by=(("g",),), resamples=20))
    assert len({r["value"] for r in report.rows}) == 2001  # 2,000 values and all records


def _naive_column(raw: list, bins: int) -> tuple[list[str | None], list[str]]:
    """Each record's slice value read one record at a time: its text (stripped; None without
    one); numbers — every present value finite, not a bool, more distinct than `bins` — by
    quantile bin. The labels: texts in natural order (first seen first among ties)."""
    from extracteval.core.id_order import natural_key

    text = [None if v is None or (isinstance(v, float) and v != v) else (str(v).strip() or None) for v in raw]
    nums = []
    for v, t in zip(raw, text):
        try:
            nums.append(float(pd.to_numeric(v)) if t is not None else None)
        except (TypeError, ValueError):
            nums.append(float("nan"))
    present = [n for n in nums if n is not None]
    numeric = bool(present) and all(np.isfinite(present)) and not any(isinstance(v, bool) for v, t in zip(raw, text) if t is not None)
    if numeric and len(set(present)) > bins:
        return None, []  # binned: compared by the bins' own test
    return text, sorted(dict.fromkeys(t for t in text if t is not None), key=natural_key)


_VALUES = st.one_of(st.sampled_from(["a", " a", "b ", "r1", "r01", "r10", "", "  ", "x²", "1", "2.5", "-0.0"]), st.none(),
                    st.integers(-3, 3), st.sampled_from([1.0, 0.0, -0.0, 2.5, float("nan"), True, False]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, max_size=40), st.integers(1, 4))
def test_a_columns_values_are_read_per_distinct_value_as_per_record(raw: list, bins: int) -> None:
    """Reading each distinct value once gives each record the slice value a record-by-record
    reading gives (`1`, `1.0` and `True` stay apart; `a` and ` a` are one value)."""
    from extracteval.core.slices import _column_codes

    text, labels = _naive_column(raw, bins)
    if text is None:
        return
    codes, got = _column_codes(np.asarray(raw, dtype=object), "c", bins, None)
    assert got == labels
    assert [None if c < 0 else got[c] for c in codes.tolist()] == text


def test_a_model_without_records_in_a_slice_is_undefined_there_not_zero() -> None:
    """Records only one model has rows for (its extra predictions) form a slice where the other
    model has no value: n/a (NaN), no rank, no interval, no lead, a note — and the present
    models' numbers are those of the slice without it."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, size=(60, 3))
    b = rng.integers(0, 3, size=(60, 3))
    b[50:] = 0  # b has no rows for the last ten records
    meta = pd.DataFrame({"g": ["x"] * 25 + ["y"] * 25 + ["extra"] * 10})
    present = {"b": np.arange(60) < 50}
    report = _report({"a": a, "b": b}, meta, by=(("g",),), min_size=5, present=present)
    extra = {r["model"]: r for r in report.rows if r["value"] == "extra"}
    assert np.isnan(extra["b"]["estimate"]) and extra["b"]["rank"] is None and not extra["b"]["ranked"] and extra["b"]["low"] is None
    assert extra["a"]["ranked"] and extra["a"]["rank"] == 1 and extra["a"]["winner"] and extra["a"]["low"] is not None
    assert not [g for g in report.gaps if g["value"] == "extra"]
    assert any("no record of 'b'" in n for n in report.notes_of(["b"])) and report.notes_of(["a"]) == report.notes
    alone = _report({"a": a[50:]}, pd.DataFrame({"g": ["extra"] * 10}), by=(("g",),), min_size=5)
    mine = next(r for r in alone.rows if r["value"] == "extra")
    assert (extra["a"]["estimate"], extra["a"]["low"], extra["a"]["high"]) == (mine["estimate"], mine["low"], mine["high"])
    x = {r["model"]: r for r in report.rows if r["value"] == "x"}
    assert x["b"]["ranked"] and not np.isnan(x["b"]["estimate"])  # b has the records of x: ranked as ever
    assert all(w["value"] != "extra" for w in report.weakest["b"])


def test_bin_labels_name_their_edges_exactly() -> None:
    """Six significant digits where they read back as the edge, more where it needs them: a label
    read back gives the edges the records were cut at."""
    from extracteval.core.slices import _edge_labels

    edges = [0.1234567, 0.2875, 2.0000001, 4.0, 1234567.0, 0.1 + 0.2, 3.5, -1e-9]
    labels = _edge_labels(edges)
    assert labels[1] == "0.2875" and labels[3] == "4" and labels[6] == "3.5"
    assert [float(t) for t in labels] == edges
