"""Baseline vs candidate decision (seed 004): bands, thresholds, paired bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from extracteval.core.decision import DecisionThresholds, decide, metric_from_counts, verdict_for
from extracteval.tasks.structured.semantics import score_structured
from extracteval.errors import InputError
from extracteval.tasks.structured import metrics as structured_metrics
from extracteval.tasks.toolcalls import metrics as toolcalls_metrics

COLS = ("records", "exact")


def rows(n_ok: int, n: int) -> np.ndarray:
    return np.array([[1, 1]] * n_ok + [[1, 0]] * (n - n_ok))


@pytest.mark.parametrize("gap,verdict", [(0.30, "fine-tuning recommended"), (0.1501, "fine-tuning recommended"), (0.15, "moderate"),
                                         (0.10, "moderate"), (0.05, "moderate"), (0.0499, "minimal"), (0.0, "minimal"), (-0.2, "minimal")])
def test_seed_bands(gap: float, verdict: str) -> None:
    assert verdict_for(gap) == verdict


def test_thresholds_are_configurable_and_validated() -> None:
    t = DecisionThresholds(recommend=0.25, moderate=0.10)
    assert verdict_for(0.2, t) == "moderate" and verdict_for(0.3, t) == "fine-tuning recommended" and verdict_for(0.05, t) == "minimal"
    with pytest.raises(InputError, match="moderate"):
        DecisionThresholds(recommend=0.05, moderate=0.15)


def test_decision_gap_interval_and_determinism() -> None:
    d = decide(COLS, rows(90, 100), rows(60, 100), metric="exact_match_rate", baseline="llm", candidate="slm", resamples=500, seed=3, count_map=structured_metrics)
    assert d.gap == pytest.approx(0.30)
    assert d.verdict == "fine-tuning recommended"
    assert d.ci_low < d.gap < d.ci_high
    assert 0.15 < d.ci_low  # 30 points on 100 paired records is settled
    assert d.to_dict()["verdict_settled"] is True
    again = decide(COLS, rows(90, 100), rows(60, 100), metric="exact_match_rate", baseline="llm", candidate="slm", resamples=500, seed=3, count_map=structured_metrics)
    assert again == d


def test_paired_bootstrap_of_identical_models_is_zero() -> None:
    d = decide(COLS, rows(7, 10), rows(7, 10), metric="exact_match_rate", resamples=200, count_map=structured_metrics)
    assert (d.gap, d.ci_low, d.ci_high, d.verdict) == (0.0, 0.0, 0.0, "minimal")


def test_candidate_better_is_flagged() -> None:
    d = decide(COLS, rows(5, 10), rows(9, 10), metric="exact_match_rate", resamples=100, count_map=structured_metrics)
    assert d.gap == pytest.approx(-0.4) and d.candidate_better and d.verdict == "minimal"


def test_f1_metric_from_summed_counts_not_mean_of_ratios() -> None:
    cols = ("tp", "fp", "fn")
    summed = np.array([3, 1, 2])
    assert float(metric_from_counts("field_f1", cols, summed, count_map=structured_metrics)) == pytest.approx(6 / 9)
    with pytest.raises(InputError, match="call_accuracy"):
        metric_from_counts("accuracy_of_nothing", cols, summed, count_map=toolcalls_metrics)


def test_decision_on_a_structured_result() -> None:
    truth = {str(i): {"a": i} for i in range(40)}
    llm = {str(i): f'{{"a": {i}}}' for i in range(40)}
    slm = {str(i): (f'{{"a": {i}}}' if i % 4 else "{broken") for i in range(40)}
    res = score_structured(truth, {"llm": llm, "slm": slm})
    cols, b = res.count_matrix("llm")
    _, c = res.count_matrix("slm")
    d = decide(cols, b, c, metric="json_valid_rate", baseline="llm", candidate="slm", resamples=300, count_map=structured_metrics)
    assert d.gap == pytest.approx(0.25) and d.verdict == "fine-tuning recommended"
    d2 = decide(cols, b, c, metric="field_f1", baseline="llm", candidate="slm", resamples=300, count_map=structured_metrics)
    assert d2.gap == pytest.approx(1 - 2 * 30 / (2 * 30 + 10))
