"""`document_counts`: the per-document, per-tag ledger behind the spans per-record Parquet."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.spans.semantics import SpanCorpus, SpanSet, SpansConfig, document_counts, score_spans

TEXT = "abcdefghijklmnopqrstuvwxyz0123456789"


def _spans(rows: list[tuple[int, int, int, int]], order: list[int] | None = None) -> SpanSet:
    if not rows:
        return SpanSet.empty()
    a = np.array(rows, dtype=np.int64)
    if order is not None:
        a = a[order]
    return SpanSet(doc=a[:, 0], start=a[:, 1], end=a[:, 2], tag=a[:, 3].astype(np.int32))


span = st.tuples(st.integers(0, 3), st.integers(0, 30), st.integers(1, 6), st.integers(0, 2)).map(lambda t: (t[0], t[1], t[1] + t[2], t[3]))


@settings(max_examples=60, deadline=None)
@given(gold=st.lists(span, max_size=12), pred=st.lists(span, max_size=12), seed=st.integers(0, 1000))
def test_documents_sum_to_the_per_tag_counts_in_any_order(gold, pred, seed):
    tags = ("A", "B", "C")
    cfg = SpansConfig(bootstrap=0)
    corpus = SpanCorpus(doc_ids=("d0", "d1", "d2", "d3"), tags=tags, unit="char", texts=(TEXT,) * 4, gold=_spans(gold), predictions={"m": _spans(pred)})
    result = score_spans(corpus, config=cfg).models["m"]
    counts = document_counts(corpus, "m", config=cfg)
    assert set(counts) == {"exact", "relaxed@0.5", "relaxed@0.8"}
    for mode, res in [("exact", result.exact), *result.relaxed.items()]:
        arr = counts[mode]
        assert arr.shape == (4, 3, 3) and (arr >= 0).all()
        total = arr.sum(axis=0)
        for k, t in enumerate(tags):
            m = res.per_tag.get(t)
            assert tuple(total[k]) == ((m.tp, m.fp, m.fn) if m else (0, 0, 0)), (mode, t)
    rng = np.random.default_rng(seed)
    shuffled = SpanCorpus(doc_ids=corpus.doc_ids, tags=tags, unit="char", texts=corpus.texts,
                          gold=_spans(gold, list(rng.permutation(len(gold)))), predictions={"m": _spans(pred, list(rng.permutation(len(pred))))})
    again = document_counts(shuffled, "m", config=cfg)
    assert all(np.array_equal(again[k], counts[k]) for k in counts)


def test_a_document_without_spans_has_a_zero_row():
    corpus = SpanCorpus(doc_ids=("a", "b"), tags=("T",), unit="char", texts=(TEXT, TEXT),
                        gold=_spans([(0, 0, 4, 0)]), predictions={"m": _spans([(0, 1, 4, 0)])})
    c = document_counts(corpus, "m", config=SpansConfig(bootstrap=0, relaxed=False))
    assert list(c) == ["exact"]
    assert c["exact"].tolist() == [[[0, 1, 1]], [[0, 0, 0]]]
