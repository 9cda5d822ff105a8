"""One rule reads every difference's interval, on every run kind and task: wholly one side of zero
→ significantly different; a bound of exactly zero → borderline; across zero → not."""

from __future__ import annotations

import pytest

from extracteval.core.bootstrap import BORDERLINE, NOT_SIGNIFICANT, SIGNIFICANT, Interval, PairComparison, significance


@pytest.mark.parametrize(("low", "high", "verdict"), [
    (0.01, 0.2, SIGNIFICANT), (-0.2, -0.001, SIGNIFICANT),
    (0.0, 0.217, BORDERLINE), (-0.1, 0.0, BORDERLINE),
    (-0.05, 0.05, NOT_SIGNIFICANT), (0.0, 0.0, NOT_SIGNIFICANT),  # every resample equal: no difference at all
    (None, 0.1, None),
])
def test_the_rule(low, high, verdict) -> None:
    assert significance(low, high) == verdict


def test_pairs_and_intervals_say_the_same() -> None:
    iv = Interval(estimate=0.117, low=0.0, high=0.217, confidence=0.95, resamples=1000)
    d = PairComparison(higher="a", lower="b", difference=iv).to_dict()
    assert (d["verdict"], d["significant"], iv.verdict, iv.significant) == (BORDERLINE, False, BORDERLINE, False)
    iv = Interval(estimate=0.1, low=0.02, high=0.2, confidence=0.95, resamples=1000)
    assert PairComparison(higher="a", lower="b", difference=iv).to_dict()["verdict"] == SIGNIFICANT
