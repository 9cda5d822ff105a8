"""Multi-valued cells, FUZZY strategy, IGNORE, the bootstrap and validation of inputs."""

from __future__ import annotations

import pandas as pd
import pytest

from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields
from extracteval.core.matching import max_matching
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError

NOCI = FieldsConfig(bootstrap=0)


def one(truth: dict, pred: dict, config: FieldsConfig = NOCI, **kw):
    ids = [f"r{i}" for i in range(len(next(iter(truth.values()))))]
    r = score_fields(pd.DataFrame(truth, index=ids), [ModelPredictions(name="m", values=pd.DataFrame(pred, index=ids), **kw)], config=config)
    return r


def test_multi_valued_cells_are_sets():
    r = one({"parties": [["Acme Inc.", "Bolt LLC"], ["X"], []]}, {"parties": [["bolt llc", "ACME INC."], ["X", "Y"], None]})
    c = r.models["m"].fields["parties"].counts
    assert (c.tp, c.fp, c.fn, c.tn) == (3, 1, 0, 1)
    assert c.exact == 2


def test_multi_valued_duplicates_count_once():
    r = one({"p": [["A", "A", "B"]]}, {"p": [["a", "b", "b"]]})
    c = r.models["m"].fields["p"].counts
    assert (c.tp, c.fp, c.fn) == (2, 0, 0)


def test_scalar_against_list_is_a_set_of_one():
    r = one({"p": [["A", "B"], "C"]}, {"p": ["A", ["C"]]})
    c = r.models["m"].fields["p"].counts
    assert (c.tp, c.fp, c.fn) == (2, 0, 1)


def test_fuzzy_strategy_and_optimal_not_greedy_matching():
    cfg = FieldsConfig(bootstrap=0, strategies={"p": "FUZZY"}, fuzzy_threshold=0.8)
    # "acme corp" is close to both truth values; greedy would take the first and lose one match
    r = one({"p": [["acme corporation", "acme corp ltd"]]}, {"p": [["acme corp ltd.", "acme corporatio"]]}, config=cfg)
    c = r.models["m"].fields["p"].counts
    assert (c.tp, c.fp, c.fn) == (2, 0, 0)


def test_fuzzy_scalar_threshold():
    cfg = FieldsConfig(bootstrap=0, strategies={"name": Strategy.FUZZY})
    r = one({"name": ["Acme Robotics Inc.", "Bolt"]}, {"name": ["Acme Robotics Inc", "Volt Systems"]}, config=cfg)
    c = r.models["m"].fields["name"].counts
    assert (c.tp, c.fp, c.fn) == (1, 1, 1)


def test_fuzzy_never_matches_different_numbers_or_dates():
    cfg = FieldsConfig(bootstrap=0, default_strategy="FUZZY")
    r = one({"d": ["2024-01-01", "1000"]}, {"d": ["2024-01-02", "1001"]}, config=cfg)
    assert r.models["m"].fields["d"].counts.tp == 0


def test_ignore_leaves_field_out():
    cfg = FieldsConfig(bootstrap=0, strategies={"notes": "IGNORE"})
    r = one({"a": ["x"], "notes": ["y"]}, {"a": ["x"], "notes": ["z"]}, config=cfg)
    assert r.fields == ("a",)
    assert "notes" not in r.models["m"].fields


def test_unknown_strategy_lists_valid_names():
    with pytest.raises(InputError, match="EXACT, FUZZY, SEMANTIC, IGNORE.*'FUZY'"):
        FieldsConfig(strategies={"a": "FUZY"})


def test_thresholds_outside_unit_interval_rejected():
    with pytest.raises(InputError, match="fuzzy_threshold.*1.5"):
        FieldsConfig(fuzzy_threshold=1.5)


def test_duplicate_ids_and_unknown_ids_are_errors():
    truth = pd.DataFrame({"a": ["x", "y"]}, index=["1", "1"])
    with pytest.raises(InputError, match="unique.*'1'"):
        score_fields(truth, [ModelPredictions(name="m", values=truth)])
    truth = pd.DataFrame({"a": ["x"]}, index=["1"])
    pred = pd.DataFrame({"a": ["x", "y"]}, index=["1", "2"])
    with pytest.raises(InputError, match="not in the ground truth.*'2'"):
        score_fields(truth, [ModelPredictions(name="m", values=pred, source="p.csv")])


def test_missing_predictions_count_as_empty_and_are_reported():
    truth = pd.DataFrame({"a": ["x", "y"]}, index=["1", "2"])
    pred = pd.DataFrame({"a": ["x"]}, index=["1"])
    r = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=NOCI)
    c = r.models["m"].fields["a"].counts
    assert (c.tp, c.fn) == (1, 1)
    assert r.models["m"].missing_records == 1
    assert any("1 ground-truth record(s) have no prediction" in w for w in r.warnings)
    assert not {c.name: c for c in r.checks}["equal_length"].passed


def test_invalid_status_value_names_record():
    truth = pd.DataFrame({"a": ["x"]}, index=["7"])
    with pytest.raises(InputError, match="record '7'.*status.*'done'"):
        score_fields(truth, [ModelPredictions(name="m", values=truth, status=pd.Series(["done"], index=["7"]))])


def test_model_given_twice_is_an_error():
    truth = pd.DataFrame({"a": ["x"]}, index=["1"])
    with pytest.raises(InputError, match="given twice"):
        score_fields(truth, [ModelPredictions(name="m", values=truth), ModelPredictions(name="m", values=truth)])


def test_bootstrap_interval_contains_estimate_and_is_seeded():
    import numpy as np

    rng = np.random.default_rng(0)
    n = 200
    pool = ["a", "b", "c", "Not Present"]
    truth = pd.DataFrame({"f": rng.choice(pool, n)}, index=[str(i) for i in range(n)])
    good = truth.copy()
    good.iloc[:20, 0] = "zzz"
    bad = truth.copy()
    bad.iloc[:120, 0] = "zzz"
    models = [ModelPredictions(name="good", values=good), ModelPredictions(name="bad", values=bad)]
    r1 = score_fields(truth, models, config=FieldsConfig(bootstrap=300, seed=1))
    r2 = score_fields(truth, models, config=FieldsConfig(bootstrap=300, seed=1))
    assert r1.to_dict() == r2.to_dict()
    ci = r1.models["good"].overall_f1_ci
    assert ci.low <= r1.models["good"].overall["f1"] <= ci.high
    (cmp,) = r1.comparisons
    assert (cmp.higher, cmp.lower) == ("good", "bad") and cmp.significant
    same = score_fields(truth, [ModelPredictions(name="x", values=good), ModelPredictions(name="y", values=good)], config=FieldsConfig(bootstrap=200))
    assert not same.comparisons[0].significant


def test_max_matching_prefers_more_pairs_then_higher_score():
    import numpy as np

    assert sorted(max_matching(np.array([[0.9, 0.8], [0.7, 0.0]]), 0.5)) == [(0, 1), (1, 0)]
    assert max_matching(np.array([[0.4]]), 0.5) == []
    assert max_matching(np.zeros((0, 3)), 0.5) == []
