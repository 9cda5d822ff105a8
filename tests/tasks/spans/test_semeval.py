"""The SemEval-2013 schemas of the `spans` result (`nervaluate`): agreement with the nervaluate
package on random documents, and worked examples with their expected numbers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.tasks.spans.semantics import SpansConfig, score_spans
from extracteval.tasks.spans.semeval import SCHEMAS, schema_metrics
from tests.tasks.spans.helpers import Span, char_corpus
from tests.system import python_package

TAGS = ["A", "B", "C"]
COUNTS = ("correct", "incorrect", "partial", "missed", "spurious", "possible", "actual")
RATIOS = ("precision", "recall", "f1")


def ours(gold: list[list[Span]], pred: list[list[Span]], min_overlap: float = 1.0) -> dict:
    """The `nervaluate` object of model `m` (spans end exclusive)."""
    corpus = char_corpus([None] * len(gold), gold, {"m": pred})
    cfg = SpansConfig(relaxed=False, bootstrap=0, min_overlap=min_overlap)
    return score_spans(corpus, config=cfg).models["m"].to_dict()["nervaluate"]


# ---------------------------------------------------------------------------------------------
# agreement with nervaluate


def _in_order(doc: list[Span]) -> list[Span]:
    # nervaluate pairs greedily in list order; extracteval pairs in document order (start, end,
    # tag). Rule of the generator: each document's spans are listed in that order — the order
    # token tags decode to. Listed in another order, nervaluate can pair differently when a span
    # has several candidates (e.g. two predictions overlapping one gold span).
    return sorted(doc, key=lambda s: (s[0], s[1], s[2]))


@st.composite
def _doc(draw: st.DrawFn, overlapping: bool, max_spans: int = 6) -> list[Span]:
    """Spans in a document of up to 240 tokens: short ones mostly, some over 100 tokens (where
    1% of the gold span is more than one token); `overlapping=False` gives disjoint spans."""
    n = draw(st.integers(0, max_spans))
    out: list[Span] = []
    for _ in range(n):
        long = draw(st.integers(0, 9)) == 0
        length = draw(st.integers(101, 160)) if long else draw(st.integers(1, 6))
        start = draw(st.integers(0, (240 if long else 24) - length if length < 24 else 240 - length))
        out.append((start, start + length, draw(st.sampled_from(TAGS))))
    if not overlapping:
        out.sort()
        kept: list[Span] = []
        for s in out:
            if not kept or s[0] >= kept[-1][1]:
                kept.append(s)
        out = kept
    return _in_order(out)


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[list[Span]], list[list[Span]], float]:
    n_docs = draw(st.integers(1, 4))
    gold_overlaps, pred_overlaps = draw(st.booleans()), draw(st.booleans())
    gold = [draw(_doc(gold_overlaps)) for _ in range(n_docs)]
    pred = []
    for g in gold:
        # predictions: gold spans kept, shifted or retyped, plus spans of their own
        p = [(max(0, s + draw(st.integers(-2, 2))), e + draw(st.integers(-2, 2)), draw(st.sampled_from([t, *TAGS])))
             for s, e, t in g if draw(st.booleans())]
        p = [(s, e, t) for s, e, t in p if e > s]
        p += draw(_doc(pred_overlaps, max_spans=3))
        if not pred_overlaps:
            p = draw(_doc(False)) if not p else p
        pred.append(_in_order(p))
    min_overlap = draw(st.one_of(st.just(1.0), st.integers(1, 100).map(float), st.floats(1.0, 100.0)))
    return gold, pred, min_overlap


def _as_nervaluate(docs: list[list[Span]]) -> list[list[dict]]:
    return [[{"label": t, "start": s, "end": e - 1} for s, e, t in doc] for doc in docs]  # nervaluate's end is inclusive


def _check_against_nervaluate(gold: list[list[Span]], pred: list[list[Span]], min_overlap: float) -> None:
    from nervaluate import Evaluator

    theirs = Evaluator(_as_nervaluate(gold), _as_nervaluate(pred), tags=TAGS, loader="dict", min_overlap_percentage=min_overlap).evaluate()
    got = ours(gold, pred, min_overlap)
    for schema in SCHEMAS:
        pairs = [(schema, "overall", theirs["overall"][schema], got[schema])]
        assert set(theirs["entities"]) == set(got[schema]["per_type"]), schema
        pairs += [(schema, t, theirs["entities"][t][schema], got[schema]["per_type"][t]) for t in theirs["entities"]]
        for sc, where, a, b in pairs:
            assert {k: getattr(a, k) for k in COUNTS} == {k: b[k] for k in COUNTS}, (sc, where)
            for k in RATIOS:
                assert abs(getattr(a, k) - b[k]) <= 1e-12, (sc, where, k, getattr(a, k), b[k])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_case())
def test_schemas_equal_nervaluate(case: tuple[list[list[Span]], list[list[Span]], float]) -> None:
    python_package("nervaluate", "test")
    _check_against_nervaluate(*case)


def test_contested_pairs_equal_nervaluate() -> None:
    """Spans with several candidates go through the greedy loop: two predictions on one gold span,
    one prediction over two gold spans, nested gold spans, and a 200-token gold span that a
    1-token overlap covers by 0.5% (under the default 1%)."""
    python_package("nervaluate", "test")
    gold = [[(0, 5, "A"), (6, 9, "B")], [(0, 10, "A"), (2, 4, "B"), (2, 4, "C")], [(0, 200, "A")]]
    pred = [[(0, 3, "A"), (2, 8, "B"), (3, 5, "A")], [(0, 10, "B"), (1, 4, "B"), (2, 4, "A")], [(199, 201, "A")]]
    for min_overlap in (1.0, 30.0, 50.0, 100.0):
        _check_against_nervaluate(gold, pred, min_overlap)


# ---------------------------------------------------------------------------------------------
# worked examples, with the expected numbers of nervaluate's published tests


def _counts(d: dict) -> tuple[int, ...]:
    return tuple(d[k] for k in COUNTS)


def test_worked_example_all_schemas() -> None:
    """One document, tokens 0–9: gold PER [2, 4], LOC [5, 6], ORG [8, 9] (end inclusive);
    predicted PER [2, 4], LOC [5, 7], ORG [8, 9]: one boundary error."""
    gold = [[(2, 5, "PER"), (5, 7, "LOC"), (8, 10, "ORG")]]
    pred = [[(2, 5, "PER"), (5, 8, "LOC"), (8, 10, "ORG")]]
    got = ours(gold, pred)
    assert _counts(got["strict"]) == (2, 1, 0, 0, 0, 3, 3)
    assert _counts(got["exact"]) == (2, 1, 0, 0, 0, 3, 3)
    assert _counts(got["partial"]) == (2, 0, 1, 0, 0, 3, 3)
    assert _counts(got["ent_type"]) == (3, 0, 0, 0, 0, 3, 3)
    assert got["strict"]["precision"] == pytest.approx(2 / 3) and got["strict"]["f1"] == pytest.approx(2 / 3)
    assert got["partial"]["precision"] == pytest.approx(2.5 / 3) and got["partial"]["recall"] == pytest.approx(2.5 / 3)
    assert got["ent_type"]["f1"] == 1.0
    assert _counts(got["partial"]["per_type"]["LOC"]) == (0, 0, 1, 0, 0, 1, 1)
    assert got["partial"]["per_type"]["LOC"]["f1"] == 0.5


def test_worked_example_type_and_boundary_errors() -> None:
    """Gold PER [1, 2], LOC [4, 5]; predicted LOC [1, 2] (wrong type), LOC [4, 6] (wrong end),
    MISC [8, 8] (spurious); another document's gold ORG [0, 1] is missed."""
    gold = [[(1, 3, "PER"), (4, 6, "LOC")], [(0, 2, "ORG")]]
    pred = [[(1, 3, "LOC"), (4, 7, "LOC"), (8, 9, "MISC")], []]
    got = ours(gold, pred)
    assert _counts(got["strict"]) == (0, 2, 0, 1, 1, 3, 3)
    assert _counts(got["exact"]) == (1, 1, 0, 1, 1, 3, 3)
    assert _counts(got["partial"]) == (1, 0, 1, 1, 1, 3, 3)
    assert _counts(got["ent_type"]) == (1, 1, 0, 1, 1, 3, 3)
    assert got["partial"]["precision"] == pytest.approx(0.5) and got["ent_type"]["recall"] == pytest.approx(1 / 3)
    # per type: each type alone, so the wrongly typed LOC [1, 2] is spurious for LOC, PER [1, 2] missed
    assert _counts(got["strict"]["per_type"]["LOC"]) == (0, 1, 0, 0, 1, 1, 2)
    assert _counts(got["strict"]["per_type"]["PER"]) == (0, 0, 0, 1, 0, 1, 0)
    assert _counts(got["ent_type"]["per_type"]["LOC"]) == (1, 0, 0, 0, 1, 1, 2)
    assert set(got["strict"]["per_type"]) == {"LOC", "MISC", "ORG", "PER"}


def test_min_overlap() -> None:
    """A gold span of 10 tokens; a prediction covering 3 of them pairs at min overlap ≤ 30%, not above."""
    gold = [[(0, 10, "A")]]
    pred = [[(7, 12, "A")]]
    assert _counts(ours(gold, pred, 30.0)["ent_type"]) == (1, 0, 0, 0, 0, 1, 1)
    assert _counts(ours(gold, pred, 31.0)["ent_type"]) == (0, 0, 0, 1, 1, 1, 1)
    assert _counts(ours(gold, pred, 31.0)["strict"]) == (0, 0, 0, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="min_overlap"):
        SpansConfig(min_overlap=0.5)
    with pytest.raises(ValueError, match="min_overlap"):
        SpansConfig(min_overlap=101)


def test_no_spans() -> None:
    got = ours([[]], [[]])
    assert set(got) == set(SCHEMAS)
    assert _counts(got["strict"]) == (0,) * 7 and got["strict"]["per_type"] == {}
    assert schema_metrics("strict", (0, 0, 0, 0, 0), 1.0)["precision"] == 1.0


# nervaluate's own strategy tests, rewritten: "The John Smith who works at Google Inc" tagged
# O B-PER I-PER O O O B-ORG I-ORG, against predicted tags; expected (COR, INC, PAR, MIS, SPU)
# for strict, exact, partial, ent_type
_BASE = ["O", "B-PER", "I-PER", "O", "O", "O", "B-ORG", "I-ORG"]
_STRATEGY_CASES = {
    "perfect match": (_BASE, [(2, 0, 0, 0, 0)] * 4),
    "missed entity": (["O", "B-PER", "I-PER", "O", "O", "O", "O", "O"], [(1, 0, 0, 1, 0)] * 4),
    "wrong label": (["O", "B-PER", "I-PER", "O", "O", "O", "B-LOC", "I-LOC"],
                    [(1, 1, 0, 0, 0), (2, 0, 0, 0, 0), (2, 0, 0, 0, 0), (1, 1, 0, 0, 0)]),
    "wrong boundary": (["O", "B-PER", "I-PER", "O", "O", "O", "B-LOC", "O"],
                       [(1, 1, 0, 0, 0), (1, 1, 0, 0, 0), (1, 0, 1, 0, 0), (1, 1, 0, 0, 0)]),
    "shifted boundary": (["O", "B-PER", "I-PER", "O", "O", "O", "O", "B-LOC"],
                         [(1, 1, 0, 0, 0), (1, 1, 0, 0, 0), (1, 0, 1, 0, 0), (1, 1, 0, 0, 0)]),
    "extra entity": (["O", "B-PER", "I-PER", "O", "B-PER", "O", "B-LOC", "I-LOC"],
                     [(1, 1, 0, 0, 1), (2, 0, 0, 0, 1), (2, 0, 0, 0, 1), (1, 1, 0, 0, 1)]),
}


def _bio_spans(tags: list[str]) -> list[Span]:
    """BIO tags → spans (end exclusive)."""
    out: list[Span] = []
    for i, t in enumerate(tags):
        if t.startswith("B-") or (t.startswith("I-") and not (out and out[-1][1] == i and out[-1][2] == t[2:])):
            out.append((i, i + 1, t[2:]))
        elif t.startswith("I-"):
            out[-1] = (out[-1][0], i + 1, out[-1][2])
    return out


@pytest.mark.parametrize("name", list(_STRATEGY_CASES))
def test_nervaluate_strategy_examples(name: str) -> None:
    tags, expected = _STRATEGY_CASES[name]
    got = ours([_bio_spans(_BASE)], [_bio_spans(tags)])
    assert [_counts(got[s])[:5] for s in SCHEMAS] == expected


@pytest.mark.parametrize(("pred", "min_overlap", "kind"), [
    ((0, 5), 50.0, "partial"), ((0, 5), 51.0, "spurious"), ((0, 7), 75.0, "spurious"), ((0, 8), 75.0, "partial"), ((0, 10), 100.0, "correct"),
    ((0, 3), 1.0, "partial"), ((0, 3), 50.0, "spurious"), ((9, 10), 10.0, "partial"),
])
def test_nervaluate_min_overlap_examples(pred: tuple[int, int], min_overlap: float, kind: str) -> None:
    """nervaluate's min-overlap tests: a 10-token gold PER, one predicted PER."""
    got = ours([[(0, 10, "PER")]], [[(*pred, "PER")]], min_overlap)["partial"]
    assert {k: got[k] for k in ("correct", "partial", "spurious")} == {k: int(k == kind) for k in ("correct", "partial", "spurious")}
    if kind == "spurious":  # an overlap under the minimum leaves the gold span missed, in every schema
        assert all(ours([[(0, 10, "PER")]], [[(*pred, "PER")]], min_overlap)[s]["missed"] == 1 for s in SCHEMAS)


def test_nervaluate_min_overlap_several_entities() -> None:
    """nervaluate's test at 50%: PER covered 40%, ORG 60%, LOC exact, a MISC far away."""
    gold = [[(0, 5, "PER"), (10, 15, "ORG"), (20, 25, "LOC")]]
    pred = [[(0, 2, "PER"), (10, 13, "ORG"), (20, 25, "LOC"), (30, 33, "MISC")]]
    got = ours(gold, pred, 50.0)["partial"]
    assert (got["correct"], got["partial"], got["spurious"], got["missed"]) == (1, 1, 2, 1)


def test_nervaluate_evaluator_example() -> None:
    """nervaluate's evaluator fixture: two sentences, PER ORG LOC."""
    true = [["O", "B-PER", "O", "B-ORG", "I-ORG", "B-LOC"], ["O", "B-PER", "O", "B-ORG"]]
    pred = [["O", "B-PER", "O", "B-ORG", "O", "B-PER"], ["O", "B-PER", "O", "B-LOC"]]
    got = ours([_bio_spans(t) for t in true], [_bio_spans(p) for p in pred])
    assert set(got["strict"]["per_type"]) == {"PER", "ORG", "LOC"}
    # PER ×2 right; ORG [3, 5) cut short; LOC [5, 6) as PER; ORG [3, 4) as LOC
    assert _counts(got["strict"]) == (2, 3, 0, 0, 0, 5, 5)
    assert _counts(got["exact"]) == (4, 1, 0, 0, 0, 5, 5)
    assert _counts(got["partial"]) == (4, 0, 1, 0, 0, 5, 5)
    assert _counts(got["ent_type"]) == (3, 2, 0, 0, 0, 5, 5)
    assert got["partial"]["precision"] == pytest.approx(0.9) and got["ent_type"]["f1"] == pytest.approx(0.6)


def test_mlflow_keys_and_evaluator_config() -> None:
    """`min_overlap` as an evaluator_config key; the run's `spans/nervaluate/<schema>/…` metrics and report section."""
    from extracteval.mlflow.keys import KeyMap
    from extracteval.tasks.spans.adapter import ADAPTER

    text = "Ada Lovelace met Charles Babbage in London"
    targets = [[{"start": 0, "end": 12, "tag": "PER"}, {"start": 17, "end": 32, "tag": "PER"}, {"start": 36, "end": 42, "tag": "LOC"}]]
    outputs = [[{"start": 0, "end": 3, "tag": "PER"}, {"start": 17, "end": 32, "tag": "ORG"}, {"start": 36, "end": 42, "tag": "LOC"}]]
    for min_overlap, partial in ((1, 1), (50, 0)):  # "Ada" covers 3 of the 12 characters of "Ada Lovelace"
        s = ADAPTER.score_frame(ids=["d"], targets=[{"text": text, "spans": targets[0]}], predictions={"m": outputs},
                                config={"bootstrap": 0, "min_overlap": min_overlap}, truth_source="t")
        m = ADAPTER.metrics(s, "m", KeyMap.build(ADAPTER.item_names(s)))
        keys = {k for k in m if k.startswith("spans/nervaluate/")}
        assert keys == {f"spans/nervaluate/{sc}/{k}" for sc in SCHEMAS
                        for k in ("precision", "recall", "f1", "correct", "incorrect", "partial", "missed", "spurious")}
        assert m["spans/nervaluate/partial/partial"] == partial and m["spans/nervaluate/exact/correct"] == 2
        assert s.doc["config"]["min_overlap"] == min_overlap
        section = next(x for x in ADAPTER.sections(s, ["m"]) if x.title.startswith("SemEval-2013 schemas"))
        assert f"min overlap {min_overlap:g}%" in section.title
        assert set(section.table["schema"]) == set(SCHEMAS) and "(all)" in set(section.table["type"])
