"""Undefined values (NaN: a ratio whose denominator is 0 under `zero_division="nan"`, offered by the
labels and entities tasks) wherever a number goes: JSON documents (strict JSON, `null`), reports
(`n/a`), rankings (after every number), bootstrap intervals (undefined resamples left out; fewer
than half defined: an undefined interval) and the run's `zero_division` parameter read back."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from extracteval.core.bootstrap import Interval, percentile_intervals, bootstrap_counts
from extracteval.core.counts import checked_zero_division, ratios, zero_division_text
from extracteval.core.ranking import RankingSpec, Score, field_winners, rank_by_metrics
from extracteval.core.run_ranking import RunSummary
from extracteval.core.strict_json import defined_or_none, dumps, from_json_number
from extracteval.errors import InputError
from extracteval.mlflow.intervals import zero_division_param
from extracteval.mlflow.tracking_leaderboard import rank_runs
from extracteval.report.html import _cell
from extracteval.report.terminal import comparison_line, percent, signed_points

NAN = float("nan")


# ---- JSON


def test_documents_are_strict_json_with_null_for_undefined_numbers():
    doc = {"f1": NAN, "np": np.float64("nan"), "inf": float("inf"), "arr": np.array([0.5, np.nan]), "t": (NAN, 1), "ok": 0.25,
           "nested": [{"x": np.float32("nan")}], "n": 3, "b": True, "s": "nan"}
    text = dumps(doc, default=str)
    got = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written"))
    assert got == {"f1": None, "np": None, "inf": None, "arr": [0.5, None], "t": [None, 1], "ok": 0.25, "nested": [{"x": None}], "n": 3, "b": True,
                   "s": "nan"}
    json.dumps(defined_or_none(doc, str), allow_nan=False)  # what the brief of every writer is: never fails


def test_a_document_without_undefined_numbers_is_written_as_json_dumps_writes_it():
    doc = {"a": [1.0, 0.1 + 0.2, 1e-300], "b": {"c": "é"}, "d": None}
    for kw in ({}, {"indent": 2, "ensure_ascii": False}, {"sort_keys": True, "separators": (",", ":")}):
        assert dumps(doc, **kw) == json.dumps(doc, **kw)


def test_null_reads_back_as_nan():
    assert math.isnan(from_json_number(None)) and from_json_number(0.5) == 0.5


def test_zero_division_option():
    assert math.isnan(checked_zero_division("NaN", allow_nan=True)) and zero_division_text(NAN) == "nan" and zero_division_text(0.5) == 0.5
    assert checked_zero_division(1) == 1  # a number stays as given (its documents unchanged)
    with pytest.raises(InputError, match=r'"nan" is offered for the labels and entities tasks only\), but got nan'):
        checked_zero_division(NAN)
    with pytest.raises(InputError, match="but got 'nan'"):
        checked_zero_division("nan")
    r = ratios(0, 0, 0, 0, zero_division=NAN)
    assert all(math.isnan(float(r[k])) for k in ("precision", "recall", "f1", "accuracy"))
    assert float(ratios(0, 0, 0, 3, zero_division=NAN)["f1"]) == 1.0  # the all-true-negatives rule still holds


# ---- reports


def test_reports_show_undefined_as_n_a():
    assert percent(NAN) == "n/a" and percent(None) == "-" and percent(0.5) == "50.0%"
    assert signed_points(NAN) == "n/a" and signed_points(0.015) == "+1.5"
    assert _cell(NAN, "f1") == ("n/a", True) and _cell(None, "f1") == ("", False) and _cell(NAN, "rows") == ("", False)
    line = comparison_line({"higher": "a", "lower": "b", "difference": {"estimate": NAN, "low": NAN, "high": NAN, "confidence": 0.95},
                            "verdict": "not significantly different"})
    assert "nan" not in line and "n/a" in line


# ---- rankings

SPEC = RankingSpec(task="labels", primary="labels/macro/f1", label="F1", tie_breaks=("labels/macro/precision", "labels/macro/recall"))


def _m(f1: float, p: float = 0.5, r: float = 0.5) -> dict[str, float]:
    return {"labels/macro/f1": f1, "labels/macro/precision": p, "labels/macro/recall": r}


@pytest.mark.parametrize("order", [("a", "b", "c", "d"), ("d", "c", "b", "a"), ("c", "a", "d", "b")])
def test_an_undefined_primary_metric_ranks_below_every_number(order):
    metrics = {"a": _m(NAN), "b": _m(0.0), "c": _m(0.7), "d": _m(NAN, p=0.9)}
    ranked = [r.model for r in rank_by_metrics(SPEC, {k: metrics[k] for k in order})]
    # undefined after 0.0; two undefined primaries tie and the tie-breaks decide (d's precision is higher)
    assert ranked == ["c", "b", "d", "a"]


def test_an_undefined_tie_break_ranks_below_a_number():
    ranked = [r.model for r in rank_by_metrics(SPEC, {"a": _m(0.5, p=NAN), "b": _m(0.5, p=0.1)})]
    assert ranked == ["b", "a"]


def test_a_field_whose_best_f1_is_undefined_has_no_winner():
    s = lambda f1: Score(f1=f1, precision=f1, recall=f1)  # noqa: E731
    w = field_winners({"x": {"a": s(NAN), "b": s(NAN)}, "y": {"a": s(NAN), "b": s(0.4)}})
    assert w["x"].kind == "none" and w["x"].winners == ()
    assert w["y"].kind == "sole" and w["y"].winners == ("b",)


def test_the_cross_run_leaderboard_ranks_an_undefined_run_last():
    runs = [RunSummary(run_id=f"id-{n}", model=n, task="labels", truth_digest="T", config_digest="C", metrics=_m(v), run_name=n)
            for n, v in (("nan", NAN), ("low", 0.1), ("high", 0.9))]
    entries = rank_runs(runs).groups[0].entries
    assert [e.model for e in entries] == ["high", "low", "nan"] and math.isnan(entries[-1].score)


# ---- intervals


def test_undefined_resamples_are_left_out_of_the_percentiles():
    rng = np.random.default_rng(0)
    samples = rng.random((1000, 2))
    held = samples.copy()
    samples[::4, 0] = NAN  # a quarter undefined
    per, diffs = percentile_intervals(["a", "b"], np.array([0.5, 0.4]), samples, [("a", "b")], 50, 0.95, 1000)
    defined = samples[~np.isnan(samples[:, 0]), 0]
    assert (per["a"].low, per["a"].high) == pytest.approx(tuple(np.percentile(defined, [2.5, 97.5])), abs=1e-12)
    both = ~np.isnan(samples[:, 0])  # a pair's difference: the resamples where both are defined
    assert (diffs[("a", "b")].low, diffs[("a", "b")].high) == pytest.approx(tuple(np.percentile(samples[both, 0] - samples[both, 1], [2.5, 97.5])), abs=1e-12)
    assert (per["b"].low, per["b"].high) == pytest.approx(tuple(np.percentile(held[:, 1], [2.5, 97.5])), abs=1e-12)  # a defined column as before
    assert per["a"].estimate == 0.5  # the point estimate is the result's value


def test_fewer_than_half_defined_resamples_give_an_undefined_interval():
    samples = np.linspace(0, 1, 100).reshape(100, 1)
    samples[:51, 0] = NAN
    per, _ = percentile_intervals(["a"], np.array([0.3]), samples, [], 10, 0.95, 100)
    assert math.isnan(per["a"].low) and math.isnan(per["a"].high) and per["a"].estimate == 0.3
    samples[50, 0] = 0.5  # exactly half defined: an interval
    per, _ = percentile_intervals(["a"], np.array([0.3]), samples, [], 10, 0.95, 100)
    assert not math.isnan(per["a"].low)


def test_an_undefined_interval_is_never_significant():
    iv = Interval(estimate=0.2, low=NAN, high=NAN, confidence=0.95, resamples=1000)
    assert not iv.significant and iv.contains_zero and iv.verdict == "not significantly different"


def test_bootstrap_of_a_metric_undefined_on_some_resamples():
    # precision tp / (tp + fp): undefined on a resample that draws only records without a prediction
    per = {"m": np.array([[1, 0], [0, 0], [0, 0], [0, 0], [0, 1], [0, 0]])}

    def precision(s):
        den = s[..., 0] + s[..., 1]
        return np.divide(s[..., 0], den, out=np.full(den.shape, np.nan), where=den > 0)

    est, _ = bootstrap_counts(per, precision, resamples=400, seed=3)
    assert est["m"].estimate == 0.5 and 0.0 <= est["m"].low <= est["m"].high <= 1.0


# ---- MLflow param


@pytest.mark.parametrize("text,want", [("nan", NAN), ("NaN", NAN), (" nan", NAN), ("0.5", 0.5), ("1", 1.0), ("junk", 0.0), ("2", 0.0)])
def test_the_zero_division_param_reads_back(text, want):
    got = zero_division_param({"zero_division": text})
    assert (math.isnan(got) and math.isnan(want)) or got == want
    assert zero_division_param({}) == 0.0
