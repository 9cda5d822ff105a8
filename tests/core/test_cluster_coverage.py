"""The cluster bootstrap is honest, by simulation: its 95% intervals hold the true value about 95%
of the time when errors cluster, where the record bootstrap's do not.

The simulation is the `coverage` part of `bench/bench_slices.py` (read from there, so the figures
the benchmark prints and what this test asserts are one computation): 500 seeded repetitions of
200 clusters of 5–50 records whose 0/1 outcome has an intra-cluster correlation of 0.3 (Beta
cluster rates; the ANOVA estimate over the 100,000 clusters drawn is 0.301), accuracy and an F1 of
summed counts, 1,000 resamples per interval. The Monte-Carlo standard error of a coverage near 95%
over 500 repetitions is about 1%. With this seed (2026-11-29): cluster bootstrap 96.2% (accuracy)
and 95.6% (F1), record bootstrap 47.0% and 47.8%. Over 5,000 repetitions the cluster bootstrap
covers 94.4% ± 0.3% for both metrics — slightly under 95%, as a percentile bootstrap over 200
clusters does — so another seed's 500 repetitions would land below 93% now and then (for one metric about one
time in eleven, z = -1.36): the seed is fixed, not tuned. Takes about 6 s (4 s of CPU) on the development
machine (2 vCPUs, shared), plus the suite's start-up.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_slices.py"


def _simulation():
    """The benchmark module; the thread-count variables it sets for its own timings are put back,
    so that the processes later tests start do not inherit them."""
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    before = {k: os.environ.get(k) for k in names}
    spec = importlib.util.spec_from_file_location("bench_slices", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return mod


@pytest.mark.slow
def test_cluster_bootstrap_covers_the_true_value_when_errors_cluster() -> None:
    sim = _simulation()
    got = sim.coverage(reps=500, resamples=1000)
    assert abs(got["icc"] - 0.3) < 0.02, got["icc"]  # the data has the correlation it was built with
    for metric in sim.METRICS:
        cluster, record = got["coverage"][("cluster", metric)], got["coverage"][("record", metric)]
        assert 0.93 <= cluster <= 0.97, (metric, cluster)
        assert record < cluster, (metric, record, cluster)  # the record bootstrap's intervals are too narrow here
