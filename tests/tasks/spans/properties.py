"""The `spans` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from extracteval.tasks.spans.semantics import SpanCorpus, SpansConfig, score_spans, span_counts
from tests.tasks.spans.helpers import spanset

from tests.contract.properties import Truth, Pred, PropertyCase, _shuffled, _ids

# ---------------------------------------------------------------------------------------------
# spans: truth = id → (text, [(start, end, tag)]), pred = id → [(start, end, tag)]

SPAN_TAGS = ["A", "B", "C"]
TEXT_LEN = 30


@st.composite
def _spans(draw: st.DrawFn, max_size: int = 4) -> list[tuple[int, int, str]]:
    out = []
    for _ in range(draw(st.integers(0, max_size))):
        s = draw(st.integers(0, TEXT_LEN - 2))
        out.append((s, draw(st.integers(s + 1, TEXT_LEN)), draw(st.sampled_from(SPAN_TAGS))))
    return out


@st.composite
def _spans_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 4))
    ids = _ids(n)
    truth = {i: (draw(st.text(alphabet="ab ", min_size=TEXT_LEN, max_size=TEXT_LEN)), draw(_spans())) for i in ids}
    pred = {}
    for i in ids:
        # some gold spans copied, some with a boundary slip, plus spurious ones
        kept = [(s, min(TEXT_LEN, e + draw(st.integers(0, 2))), t) for s, e, t in truth[i][1] if draw(st.booleans())]
        pred[i] = kept + draw(_spans(max_size=2))
    return truth, pred


SPANS_CFG = SpansConfig(bootstrap=0)


def _span_corpus(truth: Truth, pred: Pred) -> SpanCorpus:
    ids = list(truth)
    tags = sorted(SPAN_TAGS)
    return SpanCorpus(
        doc_ids=tuple(ids), tags=tuple(tags), unit="char", texts=tuple(truth[i][0] for i in ids),
        gold=spanset([truth[i][1] for i in ids], tags), predictions={"m": spanset([pred.get(i, []) for i in ids], tags)},
    )


@dataclass(frozen=True)
class SpansRun:
    model: Any
    ledger: Any


def _score_spans(truth: Truth, pred: Pred) -> SpansRun:
    corpus = _span_corpus(truth, pred)
    return SpansRun(model=score_spans(corpus, config=SPANS_CFG).models["m"], ledger=span_counts(corpus, "m", config=SPANS_CFG))


def _span_results(r: SpansRun) -> dict[str, Any]:
    return {"exact": r.model.exact, **r.model.relaxed}


def _spans_tag_metrics(r: SpansRun) -> dict[str, Any]:
    out = {}
    for mode, res in _span_results(r).items():
        out[f"{mode}.micro"] = res.micro
        out |= {f"{mode}.{t}": tm for t, tm in res.per_tag.items()}
    out |= {f"curve@{p.threshold}": p for p in r.model.curve}
    return out


def _spans_bounded(r: SpansRun) -> dict[str, float]:
    out = {f"{mode}.macro_f1": res.macro_f1 for mode, res in _span_results(r).items()}
    for name, tm in _spans_tag_metrics(r).items():
        out |= {f"{name}.{k}": getattr(tm, k) for k in ("precision", "recall", "f1")}
    return out


def _spans_perfect(r: SpansRun, truth: Truth) -> dict[str, float]:
    if not any(spans for _, spans in truth.values()):
        return {}  # nothing to find: P/R/F1 are 0/0
    out = {f"{mode}.macro_f1": res.macro_f1 for mode, res in _span_results(r).items()}
    for name, tm in _spans_tag_metrics(r).items():
        out |= {f"{name}.{k}": getattr(tm, k) for k in ("precision", "recall", "f1")}
    return out


def _spans_canonical(r: SpansRun) -> Any:
    d = r.model.to_dict()
    # error examples are the first few in document order (the order of the input file), so a
    # shuffle of documents may show others; their counts and confusions must not change
    d["errors"].pop("examples")
    return d


PROPERTIES = PropertyCase(
    name="spans",
    records=_spans_records(),
    score=_score_spans,
    ledger=lambda r: r.ledger,
    bounded=_spans_bounded,
    prf=lambda r: {name: (tm.precision, tm.recall, tm.f1) for name, tm in _spans_tag_metrics(r).items()},
    perfect=lambda t: {i: list(spans) for i, (_, spans) in t.items()},
    perfect_metrics=_spans_perfect,
    empties=(lambda t: {i: [] for i in t},),
    # recall: gold spans matched / gold spans, exact and relaxed, micro and per tag, every curve point
    recall=lambda r: {f"{name}.recall": (tm.recall, tm.tp + tm.fn) for name, tm in _spans_tag_metrics(r).items()},
    found=lambda r: sum(tm.tp for tm in _spans_tag_metrics(r).values()),
    canonical=_spans_canonical,
    shuffle_item=lambda item, rnd: (item[0], _shuffled(item[1], rnd)) if isinstance(item, tuple) else _shuffled(item, rnd),
)


