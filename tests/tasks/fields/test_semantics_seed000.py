"""Seed 000's worked examples, exactly."""

from __future__ import annotations

import pandas as pd
import pytest

from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields

IDS = ["doc1", "doc2", "doc3"]


def frame(**cols: list) -> pd.DataFrame:
    return pd.DataFrame(cols, index=IDS[: len(next(iter(cols.values())))])


def contract_type_result():
    truth = frame(contract_type=["Service Agreement", "NDA", "Not Present"])
    a = frame(contract_type=["Service Agreement", "License Agreement", "Not Present"])
    b = frame(contract_type=["Service Agreement", "NDA", "Employment Agreement"])
    return score_fields(
        truth,
        [ModelPredictions(name="Model A", values=a), ModelPredictions(name="Model B", values=b)],
        config=FieldsConfig(bootstrap=0),
    )


def test_contract_type_model_a_counts_and_metrics():
    f = contract_type_result().models["Model A"].fields["contract_type"]
    assert (f.counts.tp, f.counts.fp, f.counts.fn, f.counts.tn) == (1, 1, 1, 1)
    assert f.precision == f.recall == f.f1 == f.accuracy == 0.5


def test_contract_type_model_b_counts_and_metrics():
    f = contract_type_result().models["Model B"].fields["contract_type"]
    assert (f.counts.tp, f.counts.fp, f.counts.fn, f.counts.tn) == (2, 1, 0, 0)
    assert f.precision == pytest.approx(2 / 3)
    assert f.recall == 1.0
    assert f.f1 == pytest.approx(0.8)
    assert f.accuracy == pytest.approx(2 / 3)


def test_contract_type_winner_is_b():
    r = contract_type_result()
    w = r.field_winners["contract_type"]
    assert (w.kind, w.winners) == ("sole", ("Model B",))
    assert r.models["Model B"].field_wins == 1.0
    assert r.models["Model A"].field_wins == 0.0
    assert r.ranking == ("Model B", "Model A")


def test_perfect_not_present_field_scores_100_percent():
    truth = pd.DataFrame({"termination": ["Not Present", "Not Present"]}, index=["d1", "d2"])
    pred = pd.DataFrame({"termination": ["Not Present", "Not Present"]}, index=["d1", "d2"])
    r = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=FieldsConfig(bootstrap=0))
    f = r.models["m"].fields["termination"]
    assert (f.counts.tp, f.counts.fp, f.counts.fn, f.counts.tn) == (0, 0, 0, 2)
    assert f.precision == f.recall == f.f1 == f.accuracy == 1.0
    assert "all_true_negative" in f.flags


def test_iso_date_equals_month_name_date():
    truth = pd.DataFrame({"effective_date": ["2024-01-01"]}, index=["d1"])
    pred = pd.DataFrame({"effective_date": ["January 1, 2024"]}, index=["d1"])
    r = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=FieldsConfig(bootstrap=0))
    assert r.models["m"].fields["effective_date"].counts.tp == 1


def test_pending_and_error_cells_are_excluded():
    truth = frame(t=["A", "B", "C"])
    pred = frame(t=["A", "X", "Y"])
    status = pd.Series(["ok", "pending", "error"], index=IDS)
    r = score_fields(truth, [ModelPredictions(name="m", values=pred, status=status)], config=FieldsConfig(bootstrap=0))
    f = r.models["m"].fields["t"]
    assert (f.counts.tp, f.counts.fp, f.counts.fn, f.counts.tn, f.counts.excluded) == (1, 0, 0, 0, 2)
    assert f.precision == f.recall == f.f1 == 1.0


def test_field_with_only_excluded_cells_leaves_macro_average():
    truth = frame(good=["A", "B"], stuck=["x", "y"])
    pred = frame(good=["A", "wrong"], stuck=["x", "y"])
    status = pd.DataFrame({"good": ["ok", "ok"], "stuck": ["pending", "error"]}, index=IDS[:2])
    r = score_fields(truth, [ModelPredictions(name="m", values=pred, status=status)], config=FieldsConfig(bootstrap=0))
    m = r.models["m"]
    stuck = m.fields["stuck"]
    assert "no_valid_classifications" in stuck.flags
    assert stuck.precision == stuck.recall == stuck.f1 == stuck.accuracy == 0.0
    assert m.overall["f1"] == pytest.approx(m.fields["good"].f1)
    assert m.fields_scored == 1
    check = {c.name: c for c in r.checks}["valid_classifications"]
    assert not check.passed and "m/stuck" in check.detail


def test_universal_tie_awards_no_wins():
    truth = frame(t=["A", "B"])
    same = frame(t=["A", "C"])
    r = score_fields(truth, [ModelPredictions(name=n, values=same) for n in ("x", "y", "z")], config=FieldsConfig(bootstrap=0))
    w = r.field_winners["t"]
    assert w.kind == "universal"
    assert all(r.models[m].field_wins == 0.0 for m in "xyz")
    # the name is the last tie-break of the ranking
    assert r.ranking == ("x", "y", "z")


def test_shared_win_awards_one_over_k():
    truth = frame(t=["A", "B"])
    good = frame(t=["A", "B"])
    bad = frame(t=["Q", "R"])
    r = score_fields(
        truth,
        [ModelPredictions(name="g1", values=good), ModelPredictions(name="g2", values=good), ModelPredictions(name="b", values=bad)],
        config=FieldsConfig(bootstrap=0),
    )
    w = r.field_winners["t"]
    assert (w.kind, w.winners) == ("shared", ("g1", "g2"))
    assert r.models["g1"].field_wins == r.models["g2"].field_wins == 0.5
    assert r.models["b"].field_wins == 0.0


def test_best_f1_zero_awards_no_wins():
    truth = frame(t=["A", "B"])
    r = score_fields(
        truth,
        [ModelPredictions(name="a", values=frame(t=["X", "Y"])), ModelPredictions(name="b", values=frame(t=["Not Present", "Z"]))],
        config=FieldsConfig(bootstrap=0),
    )
    w = r.field_winners["t"]
    assert w.kind == "none" and w.winners == ()
    assert r.models["a"].field_wins == r.models["b"].field_wins == 0.0


def test_wrong_value_counts_fp_and_fn_so_precision_is_not_inflated():
    truth = frame(t=["A", "B", "C"])
    pred = frame(t=["X", "Y", "Z"])
    f = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=FieldsConfig(bootstrap=0)).models["m"].fields["t"]
    assert (f.counts.fp, f.counts.fn) == (3, 3)
    assert f.precision == 0.0


def test_consistency_checks_pass_and_are_reported():
    r = contract_type_result()
    checks = {c.name: c for c in r.checks}
    for name in ("f1_formula", "impossible_metrics", "perfect_not_present", "macro_average", "overall_within_field_range"):
        assert checks[name].passed, checks[name].detail
        assert checks[name].kind == "consistency"
    assert not checks["sample_size"].passed  # 3 records < 30: reported, and warned
    assert any("fewer than 30" in w for w in r.warnings)


def test_tiers_follow_overall_f1():
    from extracteval.core.ranking import tier

    assert tier(0.9) == "excellent"
    assert tier(0.8999) == "good"
    assert tier(0.7) == "good"
    assert tier(0.6999) == "needs_improvement"


def test_ranking_tie_breaks_precision_then_recall_then_wins_then_name():
    from extracteval.core.ranking import Score, rank_models

    s = Score(f1=0.8, precision=0.8, recall=0.8)
    overall = {
        "d": s,
        "c": s,
        "b": Score(f1=0.8, precision=0.9, recall=0.72),
        "a": Score(f1=0.7, precision=1.0, recall=1.0),
        "e": Score(f1=0.8, precision=0.8, recall=0.8),
    }
    ranked = rank_models(overall, {"c": 1.0, "d": 1.0, "e": 2.0})
    assert [r.model for r in ranked] == ["b", "e", "c", "d", "a"]
    assert [r.rank for r in ranked] == [1, 2, 3, 4, 5]


def test_examples_of_each_classification_kind_are_kept():
    r = contract_type_result()
    ex = r.models["Model A"].fields["contract_type"].examples
    assert ex["wrong"] == [{"record_id": "doc2", "truth": "NDA", "prediction": "License Agreement"}]
    assert ex["tp"][0]["record_id"] == "doc1"
    assert ex["tn"][0]["record_id"] == "doc3"
