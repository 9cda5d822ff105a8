"""Builders shared by the spans tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from extracteval.tasks.spans.semantics import SpanCorpus, SpanSet

Span = tuple[int, int, str]


def spanset(docs: Sequence[Sequence[Span]], tags: Sequence[str]) -> SpanSet:
    code = {t: i for i, t in enumerate(tags)}
    rows = [(d, s, e, code[t]) for d, spans in enumerate(docs) for (s, e, t) in spans]
    if not rows:
        return SpanSet.empty()
    a = np.array(rows, dtype=np.int64)
    return SpanSet(doc=a[:, 0], start=a[:, 1], end=a[:, 2], tag=a[:, 3].astype(np.int32))


def char_corpus(texts: Sequence[str | None], gold: Sequence[Sequence[Span]], preds: Mapping[str, Sequence[Sequence[Span]]]) -> SpanCorpus:
    """A character-offset corpus: texts[d], gold[d] = [(start, end, tag)], preds[model][d]."""
    tags = sorted({t for d in gold for (_, _, t) in d} | {t for p in preds.values() for d in p for (_, _, t) in d})
    return SpanCorpus(
        doc_ids=tuple(f"d{i:04d}" for i in range(len(texts))),
        tags=tuple(tags),
        unit="char",
        texts=tuple(texts),
        gold=spanset(gold, tags),
        predictions={m: spanset(p, tags) for m, p in preds.items()},
    )


def find(text: str, phrase: str, start: int = 0) -> tuple[int, int]:
    i = text.index(phrase, start)
    return i, i + len(phrase)
