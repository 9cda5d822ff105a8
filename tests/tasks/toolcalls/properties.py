"""The `toolcalls` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extracteval.tasks.toolcalls.semantics import score_toolcalls

from tests.contract.properties import Truth, Pred, PropertyCase, _shuffled, _ids

# ---------------------------------------------------------------------------------------------
# toolcalls: truth/pred = id → list of {name, arguments}

TNAMES = st.sampled_from(["f", "g", "h"])
TVALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "Paris"]), st.booleans())
CALL = st.fixed_dictionaries({"name": TNAMES, "arguments": st.dictionaries(st.sampled_from(["x", "y", "z"]), TVALUES, max_size=3)})


@st.composite
def _toolcalls_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 6))
    ids = _ids(n)
    truth = {i: draw(st.lists(CALL, max_size=3)) for i in ids}
    pred: Pred = {}
    for i in ids:
        if draw(st.integers(0, 5)):
            pred[i] = [c for c in truth[i] if draw(st.booleans())] + draw(st.lists(CALL, max_size=2))
    return truth, pred


def _score_toolcalls(truth: Truth, pred: Pred) -> Any:
    return score_toolcalls(truth, {"m": pred}).models["m"]


def _toolcalls_perfect(m: Any, truth: Truth) -> dict[str, float]:
    out = {k: m.metrics[k] for k in ("valid_call_rate", "call_accuracy")}
    if m.counts.ref_calls:
        out |= {k: m.metrics[k] for k in ("name_match_rate", "args_exact_rate")}
    if m.counts.tp + m.counts.fn:  # P/R/F1 are defined only when reference calls have arguments
        out |= {k: m.metrics[k] for k in ("args_precision", "args_recall", "args_f1")}
    return out


PROPERTIES = PropertyCase(
    name="toolcalls",
    records=_toolcalls_records(),
    score=_score_toolcalls,
    ledger=lambda m: m.counts,
    bounded=lambda m: dict(m.metrics),
    prf=lambda m: {"args": (m.metrics["args_precision"], m.metrics["args_recall"], m.metrics["args_f1"])},
    perfect=lambda t: {i: [dict(c) for c in v] for i, v in t.items()},
    perfect_metrics=_toolcalls_perfect,
    empties=(lambda t: {i: [] for i in t}, lambda t: {}),
    # recall: reference calls matched by name / reference calls, and reference arguments
    # reproduced / reference arguments
    recall=lambda m: {"name_match_rate": (m.metrics["name_match_rate"], m.counts.ref_calls),
                      "args_recall": (m.metrics["args_recall"], m.counts.tp + m.counts.fn)},
    found=lambda m: m.counts.tp + m.counts.name_matches,
    canonical=lambda m: m.to_dict(),
    shuffle_item=lambda calls, rnd: _shuffled(list(calls), rnd),
)


