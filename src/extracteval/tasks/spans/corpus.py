"""The `spans` task's corpus: the documents' tokens and every side's spans as columns (span sets), built from
span records or from token tags."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from extracteval.tasks.spans.schemes import FactorizedTags



@dataclass(frozen=True, kw_only=True)
class SpanSet:
    """One annotator's spans over a corpus, column by column.

    Attributes:
        doc: document index per span (into `SpanCorpus.doc_ids`).
        start, end: [start, end) in characters (JSONL) or in global token positions (token files).
        tag: tag code per span (into `SpanCorpus.tags`).
        text: the span's own text when the input gave one (else None), object array or None.
    """

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    tag: np.ndarray
    text: np.ndarray | None = None

    def __len__(self) -> int:
        return int(len(self.start))

    @classmethod
    def empty(cls) -> SpanSet:
        z = np.zeros(0, dtype=np.int64)
        return cls(doc=z, start=z.copy(), end=z.copy(), tag=np.zeros(0, dtype=np.int32))

    def take(self, idx: np.ndarray) -> SpanSet:
        return SpanSet(
            doc=self.doc[idx],
            start=self.start[idx],
            end=self.end[idx],
            tag=self.tag[idx],
            text=None if self.text is None else self.text[idx],
        )

    def canonical(self) -> SpanSet:
        """Sorted by (doc, start, end, tag): results do not depend on the input order."""
        d, s = self.doc, self.start
        if len(s) < 2 or bool(np.all((d[1:] > d[:-1]) | ((d[1:] == d[:-1]) & (s[1:] > s[:-1])))):
            # (doc, start) strictly increasing, so the sort is the identity: the usual case of
            # decoded chunks, which come in token order and never share a start
            return self
        order = np.lexsort((self.tag, self.end, self.start, self.doc))
        return self.take(order)


class LazyTokens:
    """A token column read only where it is used: exact scoring needs the text of a handful of
    error examples, not a string per token, and building every token string costs a token
    file's reader as much as the rest of the parse.

    `tokens[s:e]` (all that span texts read) decodes just those tokens with `decode(s, e)`; the
    whole column (`np.asarray(tokens)`, or any other index) is built once by `build()` and
    cached. Once slices have decoded about a quarter of the tokens, a slice builds the whole
    column instead: decoding token by token costs more per token than building the column, so
    a caller reading most tokens slice by slice (the MLflow dataset table) pays at most that
    quarter twice. Both paths give equal strings.
    """

    def __init__(self, n: int, decode: Callable[[int, int], list[str]], build: Callable[[], np.ndarray]) -> None:
        self._n = n
        self._decode = decode
        self._build = build
        self._all: np.ndarray | None = None
        self._budget = n // 4 + 4096  # tokens that slices may decode before the column is built

    def __len__(self) -> int:
        return self._n

    def array(self) -> np.ndarray:
        """Every token, as an object array of strings (built on first use)."""
        if self._all is None:
            self._all = self._build()
        return self._all

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.array()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> Any:
        if self._all is None and isinstance(key, slice):
            s, e, step = key.indices(self._n)
            if step == 1:
                k = max(e - s, 0)
                if k <= self._budget:
                    self._budget -= k
                    out = np.empty(k, dtype=object)
                    out[:] = self._decode(s, e) if k else []
                    return out
        return self.array()[key]


@dataclass(frozen=True, kw_only=True)
class SpanCorpus:
    """Documents, gold spans and each model's predicted spans, ready to score.

    Attributes:
        doc_ids: one id per document (for token files: one per sentence).
        tags: tag names; tag codes index this tuple (keep it sorted for stable output).
        unit: `char` (JSONL offsets) or `token` (token files).
        texts: per-document text for `char` (None where not given).
        tokens: flat token array for `token` (or `LazyTokens`); spans use global positions into it.
        doc_offsets: first global token position of each document (token unit).
        gold, predictions: the spans.
        token_correct: per model, tokens whose full gold and predicted tag strings are equal.
        n_tokens: tokens scored (token unit).
        ill_formed: chunks dropped by a strict scheme: `gold` and per model.
        ill_formed_examples: up to five (doc index, start, end) per annotator.
    """

    doc_ids: tuple[str, ...]
    tags: tuple[str, ...]
    unit: str
    gold: SpanSet
    predictions: Mapping[str, SpanSet]
    texts: tuple[str | None, ...] | None = None
    tokens: np.ndarray | LazyTokens | None = None
    doc_offsets: np.ndarray | None = None
    token_correct: Mapping[str, int] | None = None
    n_tokens: int | None = None
    ill_formed: Mapping[str, int] = field(default_factory=dict)
    ill_formed_examples: Mapping[str, tuple[tuple[int, int, int], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.unit not in ("char", "token"):
            raise ValueError(f"Expected `unit` to be 'char' or 'token', but got {self.unit!r}.")
        if self.unit == "token" and self.doc_offsets is None:
            raise ValueError("A token corpus needs `doc_offsets` (first token of each document).")

    def span_texts(self, spans: SpanSet, idx: np.ndarray) -> list[str | None]:
        """Texts of spans[idx]: their own text, else the document text, else the tokens joined
        by spaces; None for a span with no text at all (its TextSim then falls back to IoU)."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.unit == "token":
            tokens = self.tokens
            if tokens is None:
                return [None] * len(idx)
            return [" ".join(tokens[s:e].tolist()) for s, e in zip(spans.start[idx].tolist(), spans.end[idx].tolist())]
        texts = self.texts or ()
        own = spans.text
        out: list[str | None] = []
        for i in idx.tolist():
            t = own[i] if own is not None else None
            if t is None:
                d = int(spans.doc[i])
                doc_text = texts[d] if d < len(texts) else None
                t = None if doc_text is None else doc_text[int(spans.start[i]) : int(spans.end[i])]
            out.append(t)
        return out


def corpus_from_tags(
    gold: Sequence[str] | FactorizedTags,
    predictions: Mapping[str, Sequence[str] | FactorizedTags],
    *,
    sentence_start: np.ndarray | Sequence[bool] | None = None,
    tokens: Sequence[str] | LazyTokens | None = None,
    scheme: str = "conlleval",
    doc_ids: Sequence[str] | None = None,
    suffix: bool = False,
) -> SpanCorpus:
    """Token tag sequences (all sentences concatenated) → SpanCorpus, one document per sentence.

    Tags are dictionary-encoded (each distinct tag parsed once) and decoded by `scheme`
    (`tasks.spans.schemes`). Raises `schemes.UnknownTagError` whose `source` attribute is "gold" or the
    model name. Without `tokens` there are no span texts and the relaxed score uses IoU alone
    (with a warning), as for JSONL spans without text. `suffix=True` reads `TYPE-PREFIX` tags.

    Examples:
        >>> c = corpus_from_tags(["B-PER", "I-PER", "O"], {"m": ["B-PER", "O", "O"]})
        >>> score_spans(c).models["m"].exact.micro.tp, c.token_correct["m"]
        (0, 2)
    """
    from extracteval.tasks.spans.schemes import UnknownTagError, decode, encode_tags, get_scheme

    sch = get_scheme(scheme).name
    n = len(gold)
    sent = np.zeros(n, dtype=bool) if sentence_start is None else np.asarray(sentence_start, dtype=bool).copy()
    if len(sent) != n:
        raise ValueError(f"Expected `sentence_start` to have one flag per token ({n}), but got {len(sent)}.")
    if n:
        sent[0] = True
    types: list[str] = []
    encoded = {}
    for who, seq in [("gold", gold), *sorted(predictions.items())]:
        if len(seq) != n:
            raise ValueError(f"Expected the tags of {who!r} to have one tag per gold token ({n}), but got {len(seq)}.")
        try:
            enc = encode_tags(seq, scheme=sch, types=types, suffix=suffix)
        except UnknownTagError as e:
            e.source = who  # type: ignore[attr-defined]
            raise
        types[:] = list(enc.types)
        encoded[who] = enc
    order = sorted(range(len(types)), key=lambda i: types[i])
    remap = np.empty(max(len(types), 1), dtype=np.int32)
    remap[order] = np.arange(len(types), dtype=np.int32)
    sent_pos = np.flatnonzero(sent)
    doc_of = np.cumsum(sent) - 1  # document index of every token: one pass, no search per chunk
    ill: dict[str, int] = {}
    ill_ex: dict[str, tuple[tuple[int, int, int], ...]] = {}

    def spans_of(who: str) -> SpanSet:
        enc = encoded[who]
        ch = decode(enc.prefix, enc.type, sent, sch)
        ill[who] = ch.ill_formed
        ill_ex[who] = tuple((int(doc_of[s]), s, e) for s, e in ch.ill_formed_examples)
        doc = doc_of[ch.start]
        return SpanSet(doc=doc.astype(np.int64), start=ch.start.astype(np.int64), end=ch.end.astype(np.int64), tag=remap[ch.type])

    # token accuracy compares whole tag strings, as conlleval does
    g_tags = encoded["gold"]
    token_correct = {}
    for who in predictions:
        e = encoded[who]
        lut = {t: i for i, t in enumerate(e.tags)}
        g_in_p = np.array([lut.get(t, -1) for t in g_tags.tags], dtype=np.int64)
        token_correct[who] = int(np.count_nonzero(g_in_p[g_tags.tag] == e.tag)) if n else 0
    return SpanCorpus(
        doc_ids=tuple(doc_ids) if doc_ids is not None else tuple(f"sentence {k + 1}" for k in range(len(sent_pos))),
        tags=tuple(types[i] for i in order),
        unit="token",
        gold=spans_of("gold"),
        predictions={who: spans_of(who) for who in predictions},
        tokens=tokens if tokens is None or isinstance(tokens, LazyTokens) else np.asarray(tokens, dtype=object),
        doc_offsets=sent_pos.astype(np.int64),
        token_correct=token_correct,
        n_tokens=n,
        ill_formed=ill,
        ill_formed_examples=ill_ex,
    )
