"""The properties every task must have, written once over a registry of tasks.

In the spirit of scikit-learn's `tests/test_common.py`: each task of the registry brings one row,
`PROPERTIES` in tests/tasks/<task>/properties.py — a Hypothesis strategy for (truth, prediction)
pairs keyed by record id, and accessors that read its result — and each property below is written
once and run over every row:

- counts merge: the ledger of a ∪ b is the ledger of a plus the ledger of b (records split in two);
- order independence: shuffling records, and items inside a record where their order has no
  meaning (entities, spans, tool calls), changes nothing in the output;
- bounds: every reported ratio is in [0, 1];
- F1 identity: F1 = 2PR/(P+R) wherever a task reports P, R and F1 of the same counts;
- a perfect prediction scores 1.0 on every metric that is defined for it;
- an empty prediction has recall 0 (what "recall" means per task is in each `recall` accessor);
- idempotence of normalisation: replacing predicted values by their normalised form changes no
  count (tasks that compare values through the shared `Normalizer`).

Each property checks that it is not vacuous (something was compared), so that it can fail.
"""

from __future__ import annotations

from importlib import import_module
import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from extracteval.tasks import TASKS as REGISTRY


from tests.contract.properties import SETTINGS, Truth, Pred, PropertyCase, _add, _plain, _shuffled

def _rows() -> dict[str, PropertyCase]:
    """Task → its row (`PROPERTIES` in tests/tasks/<task>/properties.py), for every registered task that brings one."""
    out = {}
    for task in REGISTRY:
        try:
            out[task] = import_module(f"tests.tasks.{task}.properties").PROPERTIES
        except ModuleNotFoundError as e:
            if e.name != f"tests.tasks.{task}.properties":
                raise
    return out


BY_NAME = _rows()
NORMALISING = [t.name for t in BY_NAME.values() if t.normalise is not None]


def test_the_registry_covers_every_task() -> None:
    assert sorted(BY_NAME) == sorted(REGISTRY), "add tests/tasks/<task>/properties.py with its PROPERTIES row"
    assert all(BY_NAME[t].name == t for t in BY_NAME)


def _draw_scorable(data: st.DataObject, task: PropertyCase) -> tuple[Truth, Pred]:
    truth, pred = data.draw(task.records, label="records")
    assume(task.scorable(truth))
    return truth, pred


# ---------------------------------------------------------------------------------------------
# the properties, once over every task


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_ledger_of_a_union_is_the_sum_of_the_ledgers(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, pred = _draw_scorable(data, task)
    ids = sorted(truth.keys() | pred.keys())
    assume(len(ids) >= 2)
    cut = data.draw(st.integers(1, len(ids) - 1), label="cut")
    parts = [set(ids[:cut]), set(ids[cut:])]

    def part(sel: set[str]) -> tuple[Truth, Pred]:
        return {i: v for i, v in truth.items() if i in sel}, {i: v for i, v in pred.items() if i in sel}

    a, b = part(parts[0]), part(parts[1])
    assume(task.scorable(a[0]) and task.scorable(b[0]))
    whole = task.ledger(task.score(truth, pred))
    merged = _add(task.ledger(task.score(*a)), task.ledger(task.score(*b)))
    assert _plain(merged) == _plain(whole)


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data(), rnd=st.randoms(use_true_random=False))
def test_shuffling_records_and_items_changes_nothing(name: str, data: st.DataObject, rnd: random.Random) -> None:
    task = BY_NAME[name]
    truth, pred = _draw_scorable(data, task)
    base = task.canonical(task.score(truth, pred))
    t2 = {i: task.shuffle_item(truth[i], rnd) for i in _shuffled(list(truth), rnd)}
    p2 = {i: task.shuffle_item(pred[i], rnd) for i in _shuffled(list(pred), rnd)}
    assert task.canonical(task.score(t2, p2)) == base


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_metrics_are_in_the_unit_interval_and_f1_is_2pr_over_p_plus_r(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, pred = _draw_scorable(data, task)
    r = task.score(truth, pred)
    bounded = task.bounded(r)
    assert bounded
    out = {k: v for k, v in bounded.items() if not 0.0 <= v <= 1.0}
    assert not out, out
    for what, (p, rec, f1) in task.prf(r).items():
        if p + rec > 0:
            assert f1 == pytest.approx(2 * p * rec / (p + rec), abs=1e-12), what
        else:
            assert f1 == 0.0, what


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_a_perfect_prediction_scores_one_on_every_metric(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, _ = _draw_scorable(data, task)
    r = task.score(truth, task.perfect(truth))
    metrics = task.perfect_metrics(r, truth)
    if name != "spans":  # a spans truth without a span defines no metric; every other task has some
        assert metrics
    below = {k: v for k, v in metrics.items() if v != pytest.approx(1.0, abs=1e-12)}
    assert not below, below


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_an_empty_prediction_has_recall_zero(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, _ = _draw_scorable(data, task)
    empty = task.empties[data.draw(st.integers(0, len(task.empties) - 1), label="empty")](truth)
    r = task.score(truth, empty)
    recall = task.recall(r)
    supported = {k: v for k, (v, support) in recall.items() if support > 0}
    assume(supported)  # the truth has something to find
    assert task.found(r) == 0
    assert all(v == 0.0 for v in supported.values()), supported


@pytest.mark.parametrize("name", NORMALISING)
@SETTINGS
@given(data=st.data())
def test_normalising_predicted_values_again_changes_no_count(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    assert task.normalise is not None
    truth, pred = _draw_scorable(data, task)
    a, b = task.score(truth, pred), task.score(truth, task.normalise(pred))
    assert _plain(task.ledger(b)) == _plain(task.ledger(a))
    assert task.bounded(b) == task.bounded(a)
