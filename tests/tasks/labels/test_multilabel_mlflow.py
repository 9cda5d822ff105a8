"""Multi-label features on the MLflow side: the evaluator plugin's `multi_label` key, the logged
keys, the per-record rows and the interval counts read back from them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from extracteval.mlflow.adapters import get_adapter
from extracteval.mlflow.keys import KeyMap


def _scored():
    adapter = get_adapter("labels")
    targets = [{"tags": ["a", "b"], "kind": "x"}, {"tags": "b;c", "kind": "y"}, {"tags": None, "kind": "x"}, {"tags": ["A"], "kind": "y"},
               {"tags": [], "kind": "x"}]
    outputs = [json.dumps({"tags": ["b", "a"], "kind": "x"}), json.dumps({"tags": "c", "kind": "x"}), json.dumps({"tags": "a;z", "kind": "x"}),
               "", json.dumps({"tags": [], "kind": "x"})]
    scored = adapter.score_frame(ids=["1", "2", "3", "4", "5"], targets=targets, predictions={"m": outputs},
                                 config={"multi_label": {"tags": None}, "types": {"tags": "category"}}, truth_source="dataset")
    return adapter, scored


def test_evaluator_plugin_logs_the_set_metrics_under_flat_names():
    adapter, scored = _scored()
    fm = scored.result.models["m"].strict.features["tags"]
    assert fm.mode == "multi_label" and fm.rows == 5 and fm.correct == 2  # {a,b} and {} right; row 4 has no prediction
    mx = adapter.metrics(scored, "m", KeyMap.build(["tags", "kind"]))
    for k in ("micro_precision", "micro_recall", "micro_f1", "samples_precision", "samples_recall", "samples_f1", "hamming_loss"):
        assert f"feature/tags/{k}" in mx and f"aligned/feature/tags/{k}" in mx
        assert f"feature/kind/{k}" not in mx  # a single-label feature: its own keys only
    assert mx["feature/tags/micro_f1"] == pytest.approx(fm.micro["f1"]) and mx["feature/tags/hamming_loss"] == pytest.approx(fm.hamming_loss)
    assert mx["feature/tags/micro_accuracy"] == pytest.approx(2 / 5)  # the subset accuracy
    for k in ("precision", "recall", "f1"):
        assert mx[f"labels/samples/{k}"] == pytest.approx(scored.result.models["m"].strict.samples[k])
        assert f"aligned/labels/samples/{k}" in mx
    assert json.loads(adapter.params(scored)["multi_label"]) == {"tags": ";"}


def test_records_and_interval_counts_read_the_sets(tmp_path):
    adapter, scored = _scored()
    rec = adapter.records_frame(scored, "m")
    tags = rec[rec["feature"] == "tags"].set_index("record_id")
    assert tags.loc["1", "truth"] == '["a", "b"]' and tags.loc["1", "predicted"] == '["a", "b"]' and bool(tags.loc["1", "correct"])
    assert tags.loc["4", "status"] == "missing" and tags.loc["5", "truth"] == "[]" and bool(tags.loc["5", "correct"])
    assert int(tags["correct"].sum()) == scored.result.models["m"].strict.features["tags"].correct
    rec.to_parquet(tmp_path / "records.parquet")
    params = adapter.params(scored)
    table = adapter.record_counts(tmp_path / "records.parquet", params)
    summed = table.counts.sum(axis=0)
    strict = scored.result.models["m"].strict
    for metric, want in (("labels/macro/f1", strict.totals["f1"]), ("labels/macro/precision", strict.totals["precision"]),
                         ("labels/micro_accuracy", strict.totals["micro_accuracy"])):
        value = adapter.count_metric(metric, table.columns, params)
        assert float(np.asarray(value(summed))) == pytest.approx(want), metric
    # a multi-label row: one tp, fp or fn per label of its sets
    from extracteval.core.record_counts import column

    row3 = dict(zip(table.columns, table.counts[list(table.record_ids).index("3")]))  # truth {}, predicted {a, z}
    assert {c: int(v) for c, v in row3.items() if v and c.startswith("tags")} == {
        column("tags", "a", "fp"): 1, column("tags", "z", "fp"): 1, column("tags", "rows"): 1}
    row2 = dict(zip(table.columns, table.counts[list(table.record_ids).index("2")]))  # truth {b, c}, predicted {c}
    assert {c: int(v) for c, v in row2.items() if v and c.startswith("tags")} == {
        column("tags", "c", "tp"): 1, column("tags", "b", "fn"): 1, column("tags", "rows"): 1}


def _interval_equals_result(adapter, scored, tmp_path, metrics) -> None:
    """Each metric from the per-record counts read back equals the result's (the intervals' full sample)."""
    rec = adapter.records_frame(scored, "m")
    rec.to_parquet(tmp_path / "records.parquet")
    params = adapter.params(scored)
    table = adapter.record_counts(tmp_path / "records.parquet", params)
    for metric, want in metrics.items():
        value = adapter.count_metric(metric, table.columns, params)
        assert float(np.asarray(value(table.counts.sum(axis=0)))) == pytest.approx(want), metric


def test_unanswered_and_invented_rows_are_never_right_and_the_interval_agrees(tmp_path):
    """A row the model did not answer, or one it invented, is never right whole, also where the side
    present holds the empty set; without any right row the interval's subset accuracy is 0, not Σtp / rows."""
    adapter = get_adapter("labels")
    cfg = {"multi_label": {"tags": None}, "types": {"tags": "category"}}
    scored = adapter.score_frame(ids=["1", "2", "3"], targets=[{"tags": ["a"]}, {"tags": []}, {"tags": []}],
                                 predictions={"m": [json.dumps({"tags": ["a"]}), None, None]}, config=cfg, truth_source="dataset")
    strict = scored.result.models["m"].strict
    assert strict.features["tags"].micro_accuracy == pytest.approx(1 / 3) and strict.row_accuracy == pytest.approx(1 / 3)
    _interval_equals_result(adapter, scored, tmp_path, {"labels/micro_accuracy": strict.totals["micro_accuracy"]})
    none_right = adapter.score_frame(ids=["1", "2"], targets=[{"tags": ["a", "b"]}, {"tags": ["a"]}],
                                     predictions={"m": [json.dumps({"tags": ["a", "b", "c"]}), json.dumps({"tags": ["a", "c"]})]},
                                     config=cfg, truth_source="dataset")
    assert none_right.result.models["m"].strict.totals["micro_accuracy"] == 0.0
    _interval_equals_result(adapter, none_right, tmp_path, {"labels/micro_accuracy": 0.0})


def test_a_positive_label_written_otherwise_than_displayed_reaches_the_interval(tmp_path):
    """`Yes` for a category feature whose values read `yes`: the interval uses the label as the results display it."""
    adapter = get_adapter("labels")
    targets = [{"churn": v} for v in ("yes", "no", "yes", "no")]
    outputs = [json.dumps({"churn": v}) for v in ("yes", "yes", "no", "no")]
    scored = adapter.score_frame(ids=["1", "2", "3", "4"], targets=targets, predictions={"m": outputs},
                                 config={"positive_labels": {"churn": "Yes"}, "types": {"churn": "category"}}, truth_source="dataset")
    strict = scored.result.models["m"].strict
    assert strict.features["churn"].mode == "binary" and strict.totals["f1"] == pytest.approx(0.5)
    _interval_equals_result(adapter, scored, tmp_path, {"labels/macro/f1": strict.totals["f1"]})
