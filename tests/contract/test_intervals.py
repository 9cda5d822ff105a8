"""`leaderboard` intervals and `compare` paired intervals, for every task in the registry.

Every task's bundled example (experiments/) is evaluated with all its models into an embedded
SQLite store in tmp. Per task: the per-record counts its adapter reads back from each model run
give exactly the logged metrics (every metric the adapter says they determine); the leaderboard
attaches an interval to every run and to every adjacent pair, containing the point estimate; the
comparison of the best and the worst run has a paired interval of the gap; both are seeded. A run
whose per-record artifact lacks the counts gets a note, not an error. A task added to the
registry without the adapter methods fails here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.tracking import MlflowClient

from extracteval.core.bootstrap import bootstrap_counts
from extracteval.tasks import RANKING_SPECS
from extracteval.core.record_counts import RecordCountTable, paired_counts, rate_metric
from extracteval.mlflow.adapters import TASKS, get_adapter


@pytest.fixture(scope="module")
def store(evaluated: tuple[str, Path]) -> str:
    """Every task's example, evaluated with all its models (the session's `evaluated`, in conftest.py)."""
    return evaluated[0]


def _children(client: MlflowClient, task: str) -> list:
    exp = client.get_experiment_by_name(f"primary-{task}")
    runs = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("extracteval.role") == "model"]
    return sorted(runs, key=lambda r: int(r.data.tags["extracteval.rank"]))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_declares_the_counts_of_its_primary_metric(task: str) -> None:
    adapter = get_adapter(task)
    assert RANKING_SPECS[task].primary in adapter.interval_metrics
    assert callable(adapter.record_counts) and callable(adapter.count_metric)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_metrics_from_per_record_counts_equal_the_logged_metrics(task: str, store: str) -> None:
    from extracteval.mlflow.intervals import read_run_counts

    adapter = get_adapter(task)
    client = MlflowClient(store)
    children = _children(client, task)
    assert len(children) >= 3
    for run in children:
        table = read_run_counts(task, run.info.artifact_uri, run.data.params, store)
        assert table is not None, (task, run.info.run_name)
        assert table.counts.shape == (len(table.record_ids), len(table.columns)) and len(set(table.record_ids)) == len(table.record_ids)
        checked = 0
        for metric in adapter.interval_metrics:
            fn = adapter.count_metric(metric, table.columns, run.data.params)
            assert fn is not None, (task, metric)
            value = float(fn(table.counts.sum(axis=0)))
            assert value == pytest.approx(run.data.metrics[metric], abs=1e-12), (task, run.data.tags["extracteval.model"], metric)
            checked += 1
        assert checked == len(adapter.interval_metrics)
        assert adapter.count_metric("no/such/metric", table.columns, run.data.params) is None


@pytest.mark.parametrize("task", sorted(TASKS))
def test_leaderboard_intervals_for_every_task(task: str, store: str) -> None:
    from extracteval.mlflow.tracking_leaderboard import build_tracking_leaderboard

    lb = build_tracking_leaderboard(experiment=f"primary-{task}", tracking_uri=store, resamples=200, seed=3)
    doc = lb.to_dict()
    entries = [e for g in lb.leaderboard.groups for e in g.entries]
    assert len(entries) >= 3 and not [n for n in lb.notes if "unavailable" in n or "not available" in n or "skipped" in n], lb.notes
    for e in entries:
        assert e.ci is not None and e.ci.resamples == 200, (task, e.model)
        assert e.ci.estimate == pytest.approx(e.score, abs=1e-12)  # per-record counts give the logged metric
        assert e.ci.low <= e.score <= e.ci.high and e.ci.low < e.ci.high or e.ci.low == e.ci.high == e.score
    comparisons = doc["comparisons"]
    assert len(comparisons) == len(entries) - 1
    for c, (hi, lo) in zip(comparisons, zip(entries[:-1], entries[1:])):
        d = c["difference"]
        assert d["estimate"] == pytest.approx(hi.score - lo.score, abs=1e-12)
        assert d["low"] <= d["estimate"] <= d["high"]
    again = build_tracking_leaderboard(experiment=f"primary-{task}", tracking_uri=store, resamples=200, seed=3).to_dict()
    assert again["comparisons"] == comparisons and [e["ci"] for e in again["ranking"]] == [e["ci"] for e in doc["ranking"]]


@pytest.mark.parametrize("task", sorted(TASKS))
def test_compare_paired_interval_for_every_task(task: str, store: str) -> None:
    from extracteval.mlflow.compare import compare_runs

    client = MlflowClient(store)
    children = _children(client, task)
    best, worst = children[0], children[-1]
    res = compare_runs(baseline=best.info.run_id, candidate=worst.info.run_id, tracking_uri=store, resamples=200, seed=5)
    assert res.metric == RANKING_SPECS[task].primary
    assert res.ci_low is not None and res.ci_high is not None, res.notes
    assert res.ci_low <= res.gap <= res.ci_high and res.resamples == 200 and res.n_records >= 60
    assert not [n for n in res.notes if "per-record counts give a gap" in n], res.notes  # the counts give the logged gap
    again = compare_runs(baseline=best.info.run_id, candidate=worst.info.run_id, tracking_uri=store, resamples=200, seed=5)
    assert (again.ci_low, again.ci_high) == (res.ci_low, res.ci_high)
    # every metric the counts determine has its interval
    for metric in get_adapter(task).interval_metrics:
        r = compare_runs(baseline=best.info.run_id, candidate=worst.info.run_id, tracking_uri=store, metric=metric, resamples=50)
        assert r.ci_low is not None and r.ci_low <= r.gap <= r.ci_high, (task, metric, r.notes)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_runs_without_the_counts_get_a_note(task: str, store: str, tmp_path: Path) -> None:
    """A run logged before the counts were written (here: its per-record artifact without the
    count columns): intervals are skipped with a note, the ranking and the decision still come."""
    from extracteval.mlflow.compare import compare_runs
    from extracteval.mlflow.tracking_leaderboard import build_tracking_leaderboard

    client = MlflowClient(store)
    src = _children(client, task)[:2]
    exp = client.create_experiment(f"iv-old-{task}", artifact_location=(tmp_path / "art").as_uri())
    ids = []
    for i, run in enumerate(src):
        new = client.create_run(exp, run_name=run.info.run_name, tags=dict(run.data.tags))
        for k, v in run.data.params.items():
            client.log_param(new.info.run_id, k, v)
        for k in (RANKING_SPECS[task].primary, *RANKING_SPECS[task].tie_breaks):
            client.log_metric(new.info.run_id, k, run.data.metrics[k])
        frame = pd.read_parquet(client.download_artifacts(run.info.run_id, "extracteval/records.parquet", str(tmp_path / f"d{i}")))
        if i == 0:  # an older artifact: ids only
            frame = frame[["model", "record_id"]]
        (tmp_path / f"r{i}").mkdir()
        frame.to_parquet(tmp_path / f"r{i}" / "records.parquet")
        client.log_artifact(new.info.run_id, str(tmp_path / f"r{i}" / "records.parquet"), "extracteval")
        client.set_terminated(new.info.run_id)
        ids.append(new.info.run_id)
    lb = build_tracking_leaderboard(experiment=f"iv-old-{task}", tracking_uri=store, resamples=50)
    assert any("unavailable for" in n and "lacks the per-record counts" in n for n in lb.notes), lb.notes
    assert len([e for g in lb.leaderboard.groups for e in g.entries]) == 2
    res = compare_runs(baseline=ids[0], candidate=ids[1], tracking_uri=store, resamples=50)
    assert res.ci_low is None and any("lacks the per-record counts" in n for n in res.notes), res.notes


# ---- the generic pieces -------------------------------------------------------------------------

_rows = st.lists(st.tuples(st.sampled_from(["r1", "r2", "r10", "a", "b"]), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(rows=_rows, order=st.randoms(use_true_random=False))
def test_summed_counts_and_intervals_do_not_depend_on_record_order(rows: list, order) -> None:
    shuffled = list(rows)
    order.shuffle(shuffled)

    def table(rs: list) -> RecordCountTable:
        ids, a, b = zip(*rs)
        return RecordCountTable.from_columns(list(ids), {"right": np.array(a), "records": np.array(a) + np.array(b)})

    t1, t2 = table(rows), table(shuffled)
    rec1, cols1, arr1 = paired_counts({"m": t1, "n": t1})
    rec2, cols2, arr2 = paired_counts({"m": t2, "n": t2})
    assert rec1 == rec2 and cols1 == cols2
    assert np.array_equal(arr1["m"], arr2["m"])
    assert np.array_equal(t1.counts.sum(axis=0), t2.counts.sum(axis=0))
    metric = rate_metric(cols1, "right", "records")
    assert bootstrap_counts(arr1, metric, [("m", "n")], resamples=30) == bootstrap_counts(arr2, metric, [("m", "n")], resamples=30)


def test_paired_counts_zero_fill_records_and_columns_a_table_lacks() -> None:
    a = RecordCountTable.from_columns(["r2", "r10", "r1"], {"x": [1, 2, 3]})
    b = RecordCountTable.from_columns(["r10", "r1", "r9"], {"y": [4, 5, 6]})
    rec, cols, arrays = paired_counts({"a": a, "b": b})
    assert rec == ["r1", "r2", "r9", "r10"] and cols == ("x", "y")
    assert arrays["a"].tolist() == [[3, 0], [1, 0], [0, 0], [2, 0]] and arrays["b"].tolist() == [[0, 5], [0, 0], [0, 6], [0, 4]]


def test_float_per_record_values_are_resampled_exactly() -> None:
    """A mean of per-record scores (json's RQS): the values are the counts, summed with a record count."""
    rng = np.random.default_rng(0)
    scores = rng.random(500)
    per = {"m": np.column_stack([np.ones(500), scores]), "n": np.column_stack([np.ones(500), scores * 0.5])}
    mean = lambda s: s[..., 1] / s[..., 0]  # noqa: E731
    est, diffs = bootstrap_counts(per, mean, [("m", "n")], resamples=300, seed=1)
    assert est["m"].estimate == pytest.approx(scores.mean(), abs=1e-14)
    assert est["m"].low < scores.mean() < est["m"].high and diffs[("m", "n")].low > 0
    assert bootstrap_counts(per, mean, [("m", "n")], resamples=300, seed=1) == (est, diffs)
    assert bootstrap_counts(per, mean, [("m", "n")], resamples=300, seed=2) != (est, diffs)
