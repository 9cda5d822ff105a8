"""The `spans` task: span / NER evaluation with exact and relaxed matching.

Pipeline, per model: spans sorted canonically → candidate (gold, predicted) pairs only among
overlapping spans of the same document (sort + sweep, linear in the number of spans) → every
candidate pair scored once (IoU, and TextSim for same-tag pairs that are not exact) → one-to-one
matchings solved per connected component (single-pair components vectorised, the rest by optimal
assignment, `core.matching.max_matching`) → per-tag count ledgers (`Counts`) → ratios once.

Matching:
* **exact**: same start, end and tag.
* **relaxed@t**: same tag, overlapping, and `iou_weight·IoU + text_weight·TextSim ≥ t`, where
  IoU = overlap / union of the two spans (characters for JSONL, tokens for token files) and
  TextSim = rapidfuzz `fuzz.ratio`/100 of the two span texts. An exact pair scores 1.0, so
  relaxed@t ⊇ exact for every t ≤ 1, and relaxed F1 ≥ exact F1.

The F1-vs-threshold curve re-uses the scored pairs: the number of matched pairs at threshold t
is the maximum matching of the pairs scoring ≥ t, evaluated per component only where its edge
set changes.

Error breakdown (relative to exact matching; each error pairs one gold and one predicted span
at most once, chosen by optimal assignment in this order): `type` (same boundaries, other tag),
`boundary` (same tag, overlapping, other boundaries), `boundary_type` (overlapping, other tag and
boundaries), then `missed` (gold span left) and `spurious` (predicted span left). So exact
FP = type + boundary + boundary_type + spurious and FN = type + boundary + boundary_type + missed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from extracteval.tasks.spans.contract import RANKING
from extracteval.core.ledger import Ledger, add_counts, by_key, either, elementwise, first_each, keep, merge, union
from extracteval.core.bootstrap import Interval, PairComparison, bootstrap_macro_f1
from extracteval.core.counts import Counts, ratios
from extracteval.core.matching import max_matching
from extracteval.core.ranking import TIER_COLOURS, Score, field_winners, field_wins, format_wins, rank_by_metrics

if TYPE_CHECKING:
    from extracteval.chunked import ChunkScore
    from extracteval.tasks.spans.schemes import FactorizedTags

__all__ = [
    "SpansConfig",
    "SpanSet",
    "SpanCorpus",
    "LazyTokens",
    "TagMetrics",
    "MatchResult",
    "CurvePoint",
    "ErrorBreakdown",
    "ModelSpans",
    "SpansResult",
    "score_spans",
    "span_counts",
    "corpus_from_tags",
    "curve_thresholds",
    "ERROR_KINDS",
    "document_counts",
]

ERROR_KINDS = ("boundary", "type", "boundary_type", "missed", "spurious")
_EPS = 1e-9  # scores within this of a threshold pass it (0.65·IoU + 0.35·TextSim is not exact in binary)


def curve_thresholds(step: float = 0.05) -> tuple[float, ...]:
    """0.00, step, …, 1.00 (rounded so that 0.05·k prints as written)."""
    n = int(round(1.0 / step))
    if not math.isclose(n * step, 1.0, abs_tol=1e-9):
        raise ValueError(f"Expected `curve_step` to divide 1.0 (e.g. 0.05, 0.1), but got {step!r}.")
    return tuple(round(k * step, 10) for k in range(n + 1))


def _threshold_key(t: float) -> str:
    return f"relaxed@{t:g}"


@dataclass(frozen=True, kw_only=True)
class SpansConfig:
    """Options of the `spans` task.

    Attributes:
        threshold: the main relaxed threshold (default 0.5); relaxed results are also reported at
            every value of `report_thresholds`.
        report_thresholds: extra relaxed thresholds always reported (default: 0.5 and 0.8).
        iou_weight, text_weight: weights of IoU and TextSim in the relaxed score; ≥ 0, sum 1.
        curve_step: spacing of the F1-vs-threshold curve (0.05 → 21 points from 0 to 1).
        scheme: tagging scheme used to decode token files (recorded in the config).
        zero_division: value of a ratio whose denominator is 0.
        max_examples: examples kept per error kind and model.
        relaxed: False skips relaxed matching and the curve (exact results and errors only).
        bootstrap: resamples of documents for the confidence interval of each model's exact
            micro F1 and of the F1 difference of adjacent ranks (paired); 0 turns them off.
        confidence: interval coverage (0.95).
        seed: random seed of the bootstrap.
    """

    threshold: float = 0.5
    report_thresholds: tuple[float, ...] = (0.5, 0.8)
    iou_weight: float = 0.65
    text_weight: float = 0.35
    curve_step: float = 0.05
    scheme: str | None = None
    zero_division: float = 0.0
    max_examples: int = 5
    relaxed: bool = True
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("threshold", "iou_weight", "text_weight", "zero_division"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"Expected `{name}` to be a float in the [0, 1] range, but got {v!r}.")
        for v in self.report_thresholds:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"Expected every report threshold to be in the [0, 1] range, but got {v!r}.")
        if not math.isclose(self.iou_weight + self.text_weight, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"Expected `iou_weight` + `text_weight` = 1 (so scores stay in [0, 1]), but got "
                f"{self.iou_weight!r} + {self.text_weight!r}."
            )
        curve_thresholds(self.curve_step)
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, int) or self.bootstrap < 0:
            raise ValueError(f"Expected `bootstrap` to be an int ≥ 0 (resamples), but got {self.bootstrap!r}.")
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"Expected `confidence` to be in the (0, 1) range, but got {self.confidence!r}.")
        if not isinstance(self.max_examples, int) or self.max_examples < 0:
            raise ValueError(f"Expected `max_examples` to be an int ≥ 0, but got {self.max_examples!r}.")

    @property
    def thresholds(self) -> tuple[float, ...]:
        """Every relaxed threshold reported, ascending, without duplicates."""
        return tuple(sorted({round(float(t), 10) for t in (self.threshold, *self.report_thresholds)}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "report_thresholds": list(self.thresholds),
            "iou_weight": self.iou_weight,
            "text_weight": self.text_weight,
            "text_similarity": "rapidfuzz fuzz.ratio / 100",
            "curve_step": self.curve_step,
            "scheme": self.scheme,
            "zero_division": self.zero_division,
            "max_examples": self.max_examples,
            "relaxed": self.relaxed,
            "bootstrap": self.bootstrap,
            "confidence": self.confidence,
            "seed": self.seed,
        }


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


@dataclass(frozen=True, kw_only=True)
class TagMetrics:
    """Counts and ratios for one tag (or the micro total)."""

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float

    @property
    def support(self) -> int:
        return self.tp + self.fn

    @property
    def predicted(self) -> int:
        return self.tp + self.fp

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


def _metrics(c: Counts, zero_division: float) -> TagMetrics:
    r = ratios(c.tp, c.fp, c.fn, 0, zero_division=zero_division)
    return TagMetrics(tp=c.tp, fp=c.fp, fn=c.fn, precision=float(r["precision"]), recall=float(r["recall"]), f1=float(r["f1"]))


@dataclass(frozen=True, kw_only=True)
class MatchResult:
    """Micro, macro and per-tag results of one matching mode (`exact` or `relaxed@t`).

    `macro_f1` is the mean of per-tag F1 over every tag that occurs in the gold spans or in this
    model's predictions (a tag the model invents counts with F1 = 0).
    """

    mode: str
    threshold: float | None
    micro: TagMetrics
    macro_f1: float
    per_tag: Mapping[str, TagMetrics]

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "micro": self.micro.to_dict(),
            "macro": {"f1": self.macro_f1},
            "per_tag": {t: m.to_dict() for t, m in self.per_tag.items()},
        }


@dataclass(frozen=True, kw_only=True)
class CurvePoint:
    threshold: float
    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


@dataclass(frozen=True, kw_only=True)
class ErrorBreakdown:
    """Errors of the exact matching by kind (see the module docstring), with examples.

    `confusions` counts (gold tag, predicted tag) of `type` and `boundary_type` errors.
    """

    counts: Mapping[str, int]
    examples: Mapping[str, Sequence[Mapping[str, Any]]]
    confusions: Sequence[Mapping[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
            "confusions": [dict(c) for c in self.confusions],
        }


@dataclass(frozen=True, kw_only=True)
class ModelSpans:
    """Everything computed for one model."""

    model: str
    exact: MatchResult
    relaxed: Mapping[str, MatchResult]
    curve: Sequence[CurvePoint]
    errors: ErrorBreakdown
    token_accuracy: float | None
    token_correct: int | None
    ill_formed: int
    rank: int = 0
    tier: str = ""
    tag_wins: float = 0.0
    ci: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rank": self.rank,
            "tier": self.tier,
            "tier_colour": TIER_COLOURS.get(self.tier),
            "tag_wins": self.tag_wins,
            "wins_label": format_wins(self.tag_wins),
            "exact": self.exact.to_dict(),
        }
        for k, v in self.relaxed.items():
            d[k] = v.to_dict()
        d["curve"] = [p.to_dict() for p in self.curve]
        d["errors"] = self.errors.to_dict()
        if self.token_accuracy is not None:
            d["token_accuracy"] = self.token_accuracy
            d["token_correct"] = self.token_correct
        d["ill_formed_chunks"] = self.ill_formed
        d["ci"] = {"exact_micro_f1": self.ci.to_dict()} if self.ci is not None else None
        return d


@dataclass(frozen=True, kw_only=True)
class SpansResult:
    """The whole `spans` result; `to_dict()` is the `--json` document."""

    config: SpansConfig
    unit: str
    n_documents: int
    n_tokens: int | None
    n_gold: int
    gold_ill_formed: int
    tags: tuple[str, ...]
    models: Mapping[str, ModelSpans]
    ranking: tuple[str, ...]
    tag_winners: Mapping[str, Any]
    warnings: tuple[str, ...]
    comparisons: tuple[PairComparison, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": "spans",
            "unit": self.unit,
            "n_documents": self.n_documents,
            "n_tokens": self.n_tokens,
            "n_gold_spans": self.n_gold,
            "gold_ill_formed_chunks": self.gold_ill_formed,
            "tags": list(self.tags),
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
            "tag_winners": {t: w.to_dict() for t, w in self.tag_winners.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "warnings": list(self.warnings),
            "config": self.config.to_dict(),
        }


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


# --------------------------------------------------------------------------------------------
# candidate pairs and matchings


def _coords(gold: SpanSet, pred: SpanSet) -> tuple[np.ndarray, ...]:
    """Start/end of both sets as one increasing coordinate across documents."""
    hi = 0
    for s in (gold, pred):
        if len(s):
            hi = max(hi, int(s.end.max()) + 1)
    stride = np.int64(hi + 1)
    return (
        gold.doc.astype(np.int64) * stride + gold.start,
        gold.doc.astype(np.int64) * stride + gold.end,
        pred.doc.astype(np.int64) * stride + pred.start,
        pred.doc.astype(np.int64) * stride + pred.end,
    )


def overlapping_pairs(gold: SpanSet, pred: SpanSet) -> tuple[np.ndarray, np.ndarray]:
    """Every (gold index, predicted index) whose spans share at least one unit, same document.

    Both sets must be sorted by (doc, start). Linear in the number of spans plus pairs: each
    predicted span looks up the gold spans starting before it ends, from the first one whose
    running maximum end passes its start (exact for non-nested gold; nested gold spans only add
    candidates that the overlap filter then removes).
    """
    if not len(gold) or not len(pred):
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy()
    gs, ge, ps, pe = _coords(gold, pred)
    run_end = np.maximum.accumulate(ge)
    lo = np.searchsorted(run_end, ps, side="right")
    hi = np.searchsorted(gs, pe, side="left")
    n = np.maximum(hi - lo, 0)
    total = int(n.sum())
    p_idx = np.repeat(np.arange(len(pred), dtype=np.int64), n)
    offsets = np.repeat(np.cumsum(n) - n, n)
    g_idx = np.repeat(lo, n) + (np.arange(total, dtype=np.int64) - offsets)
    keep = (gs[g_idx] < pe[p_idx]) & (ge[g_idx] > ps[p_idx])
    return g_idx[keep], p_idx[keep]


def _components(g: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Connected-component label of each edge of the bipartite graph (g, p)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    ug, gi = np.unique(g, return_inverse=True)
    up, pi = np.unique(p, return_inverse=True)
    n = len(ug) + len(up)
    m = coo_matrix((np.ones(len(g)), (gi, pi + len(ug))), shape=(n, n))
    _, labels = connected_components(m, directed=False)
    return labels[gi]


def _isolated(g: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Edges whose two ends have no other edge (components of one pair)."""
    if not len(g):
        return np.zeros(0, dtype=bool)
    _, gi, gc = np.unique(g, return_inverse=True, return_counts=True)
    _, pi, pc = np.unique(p, return_inverse=True, return_counts=True)
    return (gc[gi] == 1) & (pc[pi] == 1)


def _match(g: np.ndarray, p: np.ndarray, score: np.ndarray, threshold: float) -> np.ndarray:
    """Boolean mask of the edges chosen by an optimal one-to-one matching: most pairs with
    score ≥ threshold, then the largest total score (per connected component)."""
    chosen = np.zeros(len(g), dtype=bool)
    idx = np.flatnonzero(score >= threshold - _EPS)
    if not len(idx):
        return chosen
    single = _isolated(g[idx], p[idx])
    chosen[idx[single]] = True
    rest = idx[~single]
    if not len(rest):
        return chosen
    labels = _components(g[rest], p[rest])
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    for part in np.split(rest[order], bounds):
        ug, gi = np.unique(g[part], return_inverse=True)
        up, pi = np.unique(p[part], return_inverse=True)
        mat = np.full((len(ug), len(up)), -1.0)
        mat[gi, pi] = np.maximum(score[part], 0.0)
        lookup = {(int(a), int(b)): int(e) for a, b, e in zip(gi, pi, part)}
        for a, b in max_matching(mat, max(threshold - _EPS, 0.0)):
            chosen[lookup[(a, b)]] = True
    return chosen


def _max_cardinality(edges: list[tuple[int, int]]) -> int:
    """Size of a maximum bipartite matching: augmenting paths for the usual tiny components,
    scipy's Hopcroft–Karp (no recursion) for large ones."""
    if len(edges) > 64:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import maximum_bipartite_matching

        ga, pb = (np.unique(np.array(x), return_inverse=True) for x in zip(*edges))
        m = csr_matrix((np.ones(len(edges)), (ga[1], pb[1])), shape=(len(ga[0]), len(pb[0])))
        return int(np.count_nonzero(maximum_bipartite_matching(m, perm_type="column") >= 0))
    adj: dict[int, list[int]] = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    match_p: dict[int, int] = {}

    def augment(a: int, seen: set[int]) -> bool:
        for b in adj[a]:
            if b in seen:
                continue
            seen.add(b)
            if b not in match_p or augment(match_p[b], seen):
                match_p[b] = a
                return True
        return False

    return sum(augment(a, set()) for a in sorted(adj))


def _curve_tp(g: np.ndarray, p: np.ndarray, score: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
    """Matched pairs at each threshold (pairs scoring ≥ t, maximum matching), from pairs scored once."""
    th = np.asarray(thresholds, dtype=np.float64) - _EPS
    out = np.zeros(len(th), dtype=np.int64)
    if not len(g):
        return out
    single = _isolated(g, p)
    s1 = np.sort(score[single])
    out += len(s1) - np.searchsorted(s1, th, side="left")
    rest = np.flatnonzero(~single)
    if not len(rest):
        return out
    labels = _components(g[rest], p[rest])
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    for part in np.split(rest[order], bounds):
        by_score = part[np.argsort(-score[part], kind="stable")]
        sc = score[by_score]
        # edges passing t are a prefix of by_score; its length changes only at edge scores
        k_at = np.searchsorted(-sc, -th, side="right")
        cache: dict[int, int] = {}
        for i, k in enumerate(k_at.tolist()):
            if k not in cache:
                cache[k] = _max_cardinality(list(zip(g[by_score[:k]].tolist(), p[by_score[:k]].tolist()))) if k else 0
            out[i] += cache[k]
    return out


# --------------------------------------------------------------------------------------------
# scoring


def _per_tag(tp_tags: np.ndarray, gold: SpanSet, pred: SpanSet, n_tags: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tp, fp, fn per tag code from the tags of matched pairs."""
    tp = np.bincount(tp_tags, minlength=n_tags).astype(np.int64)
    g = np.bincount(gold.tag, minlength=n_tags).astype(np.int64)
    pr = np.bincount(pred.tag, minlength=n_tags).astype(np.int64)
    return tp, pr - tp, g - tp


def _match_result(mode: str, threshold: float | None, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tags: Sequence[str], zd: float) -> MatchResult:
    per_tag: dict[str, TagMetrics] = {}
    for k, name in enumerate(tags):
        if tp[k] + fp[k] + fn[k] == 0:
            continue
        per_tag[name] = _metrics(Counts(tp=int(tp[k]), fp=int(fp[k]), fn=int(fn[k])), zd)
    micro = _metrics(Counts(tp=int(tp.sum()), fp=int(fp.sum()), fn=int(fn.sum())), zd)
    macro = float(np.mean([m.f1 for m in per_tag.values()])) if per_tag else zd
    return MatchResult(mode=mode, threshold=threshold, micro=micro, macro_f1=macro, per_tag=per_tag)


def span_counts(corpus: SpanCorpus, model: str, *, config: SpansConfig | None = None) -> dict[str, dict[str, Counts]]:
    """The mergeable ledger of one model: `{mode: {tag: Counts}}` for `exact` and every reported
    relaxed threshold. Ledgers of disjoint document sets add up to the ledger of their union."""
    cfg = config or SpansConfig()
    ms, _, _ = _score_model(corpus, model, cfg)
    out: dict[str, dict[str, Counts]] = {}
    for mode, res in [("exact", ms.exact), *ms.relaxed.items()]:
        out[mode] = {t: Counts(tp=m.tp, fp=m.fp, fn=m.fn) for t, m in res.per_tag.items()}
    return out


def _span_dict(corpus: SpanCorpus, spans: SpanSet, i: int) -> dict[str, Any]:
    d = int(spans.doc[i])
    s, e = int(spans.start[i]), int(spans.end[i])
    texts = corpus.span_texts(spans, np.array([i]))
    if corpus.unit == "token":
        assert corpus.doc_offsets is not None
        off = int(corpus.doc_offsets[d])
        s, e = s - off, e - off
    return {"start": s, "end": e, "tag": corpus.tags[int(spans.tag[i])], "text": texts[0]}


def _example(corpus: SpanCorpus, gold: SpanSet, pred: SpanSet, gi: int | None, pi: int | None) -> dict[str, Any]:
    doc = int(gold.doc[gi]) if gi is not None else int(pred.doc[pi])  # type: ignore[index]
    return {
        "doc": corpus.doc_ids[doc],
        "gold": None if gi is None else _span_dict(corpus, gold, gi),
        "pred": None if pi is None else _span_dict(corpus, pred, pi),
    }


def _doc_counts(corpus: SpanCorpus, gold: SpanSet, pred: SpanSet, tp_docs: np.ndarray) -> np.ndarray:
    """(documents, 1, 4) exact tp, fp, fn, 0 per document: the bootstrap's resampling unit."""
    n = len(corpus.doc_ids)
    tp = np.bincount(tp_docs, minlength=n)
    out = np.zeros((n, 1, 4), dtype=np.int64)
    out[:, 0, 0] = tp
    out[:, 0, 1] = np.bincount(pred.doc, minlength=n) - tp
    out[:, 0, 2] = np.bincount(gold.doc, minlength=n) - tp
    return out


def _iou(gold: SpanSet, pred: SpanSet, g: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Intersection over union of the offsets of each pair (gold span g[i], predicted span p[i])."""
    inter = np.minimum(gold.end[g], pred.end[p]) - np.maximum(gold.start[g], pred.start[p])
    union = np.maximum(gold.end[g], pred.end[p]) - np.minimum(gold.start[g], pred.start[p])
    return inter / np.maximum(union, 1)


def _relaxed_scores(corpus: SpanCorpus, gold: SpanSet, pred: SpanSet, rg: np.ndarray, rp: np.ndarray, exact: np.ndarray,
                    cfg: SpansConfig) -> tuple[np.ndarray, bool]:
    """The relaxed score of each same-tag overlapping pair, iou_weight·IoU + text_weight·TextSim
    (TextSim: rapidfuzz ratio of the span texts, IoU again where a text is unknown; an exact
    pair scores 1), and whether any pair's TextSim fell back to IoU."""
    iou = _iou(gold, pred, rg, rp)
    sim = np.ones(len(rg))
    fallback = False
    fuzzy = np.flatnonzero(~exact)
    if len(fuzzy):
        gt = corpus.span_texts(gold, rg[fuzzy])
        pt = corpus.span_texts(pred, rp[fuzzy])
        known = np.array([a is not None and b is not None for a, b in zip(gt, pt)], dtype=bool)
        if not known.all():
            sim[fuzzy[~known]] = iou[fuzzy[~known]]
            fallback = True
        if known.any():
            from extracteval.core.similarity import FuzzySimilarity

            sim[fuzzy[known]] = FuzzySimilarity().similarity(
                [a for a, k in zip(gt, known) if k], [b for b, k in zip(pt, known) if k]  # type: ignore[misc]
            )
    score = cfg.iou_weight * iou + cfg.text_weight * sim
    score[exact] = 1.0
    return score, fallback


def _score_model(corpus: SpanCorpus, model: str, cfg: SpansConfig) -> tuple[ModelSpans, bool, np.ndarray]:
    """One model's results, whether TextSim had to fall back to IoU, and per-document exact counts."""
    gold = corpus.gold.canonical()
    pred = corpus.predictions[model].canonical()
    tags = corpus.tags
    nt = len(tags)
    zd = cfg.zero_division
    g, p = overlapping_pairs(gold, pred)
    same_tag = gold.tag[g] == pred.tag[p]
    same_bounds = (gold.start[g] == pred.start[p]) & (gold.end[g] == pred.end[p])
    exact = same_tag & same_bounds

    # exact
    e_idx = np.flatnonzero(exact)
    e_chosen = e_idx[_match(g[e_idx], p[e_idx], np.ones(len(e_idx)), 1.0)]
    tp, fp, fn = _per_tag(gold.tag[g[e_chosen]], gold, pred, nt)
    exact_res = _match_result("exact", None, tp, fp, fn, tags, zd)

    # relaxed: score every same-tag overlapping pair once
    r_idx = np.flatnonzero(same_tag)
    rg, rp = g[r_idx], p[r_idx]
    n_g, n_p = len(gold), len(pred)
    relaxed: dict[str, MatchResult] = {}
    curve: list[CurvePoint] = []
    text_fallback = False
    if cfg.relaxed:
        score, text_fallback = _relaxed_scores(corpus, gold, pred, rg, rp, exact[r_idx], cfg)
        for t in cfg.thresholds:
            chosen = _match(rg, rp, score, t)
            rtp, rfp, rfn = _per_tag(gold.tag[rg[chosen]], gold, pred, nt)
            relaxed[_threshold_key(t)] = _match_result(_threshold_key(t), t, rtp, rfp, rfn, tags, zd)
        ths = curve_thresholds(cfg.curve_step)
        for t, ctp in zip(ths, _curve_tp(rg, rp, score, ths)):
            m = _metrics(Counts(tp=int(ctp), fp=n_p - int(ctp), fn=n_g - int(ctp)), zd)
            curve.append(CurvePoint(threshold=t, tp=m.tp, fp=m.fp, fn=m.fn, precision=m.precision, recall=m.recall, f1=m.f1))

    # error breakdown relative to the exact matching
    g_free = np.ones(n_g, dtype=bool)
    p_free = np.ones(n_p, dtype=bool)
    g_free[g[e_chosen]] = False
    p_free[p[e_chosen]] = False
    # error pairs are ranked by IoU alone, so the breakdown does not depend on relaxed options
    other = ~same_tag
    full_score = _iou(gold, pred, g, p)
    stages = (
        ("type", other & same_bounds),
        ("boundary", same_tag & ~same_bounds),
        ("boundary_type", other & ~same_bounds),
    )
    pairs_of: dict[str, np.ndarray] = {}
    for kind, mask in stages:
        idx = np.flatnonzero(mask & g_free[g] & p_free[p])
        chosen = idx[_match(g[idx], p[idx], full_score[idx], 0.0)]
        g_free[g[chosen]] = False
        p_free[p[chosen]] = False
        pairs_of[kind] = chosen
    missed = np.flatnonzero(g_free)
    spurious = np.flatnonzero(p_free)
    counts = {k: int(len(pairs_of[k])) for k in ("boundary", "type", "boundary_type")}
    counts["missed"] = int(len(missed))
    counts["spurious"] = int(len(spurious))
    counts = {k: counts[k] for k in ERROR_KINDS}
    k_ex = cfg.max_examples

    # document order is canonical (JSONL: sorted ids; token files: file order)
    def _first(g_sel: np.ndarray | None, p_sel: np.ndarray | None) -> list[tuple[int | None, int | None]]:
        side, sel = (gold, g_sel) if g_sel is not None else (pred, p_sel)
        assert sel is not None
        order = np.lexsort((side.end[sel], side.start[sel], side.doc[sel]))[:k_ex]
        return [
            (None if g_sel is None else int(g_sel[i]), None if p_sel is None else int(p_sel[i]))
            for i in order.tolist()
        ]

    examples: dict[str, list[dict[str, Any]]] = {}
    for kind in ("boundary", "type", "boundary_type"):
        chosen = pairs_of[kind]
        examples[kind] = [_example(corpus, gold, pred, a, b) for a, b in _first(g[chosen], p[chosen])]
    examples["missed"] = [_example(corpus, gold, pred, a, None) for a, _ in _first(missed, None)]
    examples["spurious"] = [_example(corpus, gold, pred, None, b) for _, b in _first(None, spurious)]
    conf: dict[tuple[str, str], int] = {}
    for kind in ("type", "boundary_type"):
        for e in pairs_of[kind].tolist():
            key = (tags[int(gold.tag[g[e]])], tags[int(pred.tag[p[e]])])
            conf[key] = conf.get(key, 0) + 1
    confusions = [{"gold": a, "pred": b, "count": c} for (a, b), c in sorted(conf.items(), key=lambda kv: (-kv[1], kv[0]))]
    errors = ErrorBreakdown(counts=counts, examples=examples, confusions=confusions)

    tok_acc = None
    tok_ok = None
    if corpus.token_correct is not None and model in corpus.token_correct:
        tok_ok = int(corpus.token_correct[model])
        tok_acc = tok_ok / corpus.n_tokens if corpus.n_tokens else zd
    ms = ModelSpans(
        model=model,
        exact=exact_res,
        relaxed=relaxed,
        curve=curve,
        errors=errors,
        token_accuracy=tok_acc,
        token_correct=tok_ok,
        ill_formed=int(corpus.ill_formed.get(model, 0)),
    )
    return ms, text_fallback, _doc_counts(corpus, gold, pred, gold.doc[g[e_chosen]])


def first_ill_formed(corpus: SpanCorpus, who: str) -> str | None:
    """Where the first chunk a strict scheme dropped from `who`'s tags lies ("line 12, tokens 2–3")."""
    ex = corpus.ill_formed_examples.get(who, ())
    if not ex:
        return None
    d, s, e = ex[0]
    off = int(corpus.doc_offsets[d]) if corpus.doc_offsets is not None else 0
    return f"{corpus.doc_ids[d]}, tokens {s - off + 1}–{e - off}"


def span_warnings(
    cfg: SpansConfig, *, text_fallback: bool, ill_formed: Mapping[str, int], first_ill_formed: Mapping[str, str | None],
) -> list[str]:
    """The result's warnings: spans scored without text, and ill-formed chunks dropped per annotator
    (`gold` or a model), with where the first one lies."""
    warnings = []
    if text_fallback:
        warnings.append(
            "some spans have no text (no document `text`, span `text` or tokens): TextSim is replaced by IoU for the pairs involving them, "
            "whose relaxed score is therefore IoU alone."
        )
    scheme = cfg.scheme or "the scheme"
    for who, n in sorted(ill_formed.items()):
        if n:
            where = f" (first: {first_ill_formed[who]})" if first_ill_formed.get(who) else ""
            label = "gold" if who == "gold" else f"model {who!r}"
            warnings.append(f"{n} ill-formed chunk(s) in the {label} tags were dropped under {scheme}{where}.")
    return warnings


def score_spans(corpus: SpanCorpus, *, config: SpansConfig | None = None) -> SpansResult:
    """Score every model of `corpus` (see the module docstring); models ranked by exact micro
    F1, then precision, recall, per-tag wins and name (`core.ranking`), with bootstrap intervals
    (documents resampled, paired across models) for each exact micro F1 and adjacent difference.

    Examples:
        >>> import numpy as np
        >>> def ss(rows):
        ...     a = np.array(rows, dtype=np.int64).reshape(-1, 3)
        ...     return SpanSet(doc=np.zeros(len(a), dtype=np.int64), start=a[:, 0], end=a[:, 1], tag=a[:, 2].astype(np.int32))
        >>> text = "The administrator can delete inactive accounts."
        >>> corpus = SpanCorpus(doc_ids=("r1",), tags=("Action", "Entity", "Main_actor"), unit="char", texts=(text,),
        ...                     gold=ss([[4, 17, 2], [22, 28, 0], [29, 46, 1]]),
        ...                     predictions={"m": ss([[0, 17, 2], [22, 28, 0], [38, 46, 1]])})
        >>> r = score_spans(corpus).models["m"]
        >>> r.exact.micro.tp, r.relaxed["relaxed@0.5"].micro.tp
        (1, 3)
    """
    cfg = config or SpansConfig()
    if not corpus.predictions:
        raise ValueError("score_spans needs at least one model's predictions.")
    # the whole corpus is one chunk of the chunk engine: counted into a ledger, then reduced
    scored = SpansTask(config=cfg).score_chunk(corpus)
    return finalise_spans(scored.ledger, cfg, lambda: scored.rows, tags=corpus.tags)


def document_counts(corpus: SpanCorpus, model: str, *, config: SpansConfig | None = None) -> dict[str, np.ndarray]:
    """Per-document, per-tag counts of one model: `{mode: array (documents, tags, 3)}` holding
    tp, fp, fn for `exact` and every reported `relaxed@t`, with the same one-to-one matchings as
    `score_spans` (summed over documents they equal its per-tag counts). Documents index
    `corpus.doc_ids`, tags `corpus.tags`. This is the per-record ledger that paired statistics
    across runs resample.

    Examples:
        >>> import numpy as np
        >>> ss = lambda a: SpanSet(doc=np.array([0, 1]), start=np.array(a[0]), end=np.array(a[1]), tag=np.zeros(2, dtype=np.int32))
        >>> c = SpanCorpus(doc_ids=("d1", "d2"), tags=("T",), unit="char", gold=ss(([0, 0], [4, 4])), predictions={"m": ss(([0, 1], [4, 4]))})
        >>> document_counts(c, "m")["exact"][:, 0].tolist()
        [[1, 0, 0], [0, 1, 1]]
    """
    cfg = config or SpansConfig()
    # the same pairs and scores as `_score_model` (kept separate so scoring stays one pass)
    gold = corpus.gold.canonical()
    pred = corpus.predictions[model].canonical()
    n, nt = len(corpus.doc_ids), max(len(corpus.tags), 1)
    g, p = overlapping_pairs(gold, pred)
    same_tag = gold.tag[g] == pred.tag[p]
    exact = same_tag & (gold.start[g] == pred.start[p]) & (gold.end[g] == pred.end[p])
    n_gold = np.zeros((n, nt), dtype=np.int64)
    n_pred = np.zeros((n, nt), dtype=np.int64)
    np.add.at(n_gold, (gold.doc, gold.tag), 1)
    np.add.at(n_pred, (pred.doc, pred.tag), 1)

    def ledger(matched_gold: np.ndarray) -> np.ndarray:
        tp = np.zeros((n, nt), dtype=np.int64)
        np.add.at(tp, (gold.doc[matched_gold], gold.tag[matched_gold]), 1)
        return np.stack([tp, n_pred - tp, n_gold - tp], axis=2)[:, : len(corpus.tags)]

    e_idx = np.flatnonzero(exact)
    out = {"exact": ledger(g[e_idx[_match(g[e_idx], p[e_idx], np.ones(len(e_idx)), 1.0)]])}
    if not cfg.relaxed:
        return out
    r_idx = np.flatnonzero(same_tag)
    rg, rp = g[r_idx], p[r_idx]
    score, _ = _relaxed_scores(corpus, gold, pred, rg, rp, exact[r_idx], cfg)
    for t in cfg.thresholds:
        out[_threshold_key(t)] = ledger(rg[_match(rg, rp, score, t)])
    return out


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    modes: Mapping[str, Mapping[str, tuple[int, int, int]]] = merge(by_key(by_key(add_counts)))  # mode → tag → (tp, fp, fn)
    curve: tuple[tuple[int, int, int], ...] = merge(elementwise(add_counts))  # per curve threshold
    errors: Mapping[str, int] = merge(by_key(add_counts))
    examples: Mapping[str, tuple[dict[str, Any], ...]] = merge(first_each("k"))  # each kind's first, as many as `k`
    confusions: Mapping[tuple[str, str], int] = merge(by_key(add_counts))
    text_fallback: bool = merge(either)
    k: int = merge(keep)  # examples kept per error kind


def _add_tokens(a: int | None, b: int | None) -> int | None:
    """Token counts, None where no part counts tokens (character spans)."""
    return None if a is None and b is None else (a or 0) + (b or 0)


def _first_ill_formed(a: Mapping[str, str | None], b: Mapping[str, str | None]) -> dict[str, str | None]:
    """Per annotator, where its first dropped chunk lies: the earlier part's when it has one."""
    return {w: a.get(w) or b.get(w) for w in {*a, *b}}


@dataclass(frozen=True)
class SpansLedger(Ledger):
    """Counts of a run of documents. Token files add: tokens, per model the tokens whose gold and
    predicted tags are equal, per annotator (`gold` or a model) the chunks a strict scheme dropped
    and where the first one lies (the earliest chunk's: documents come in file order)."""

    n_documents: int
    n_gold: int
    tags: frozenset[str] = merge(union)
    models: Mapping[str, _ModelLedger] = merge(by_key())
    unit: str = merge(keep, default="char")
    n_tokens: int | None = merge(_add_tokens, default=None)  # None: the documents carry no token count (character spans)
    token_correct: Mapping[str, int] = merge(by_key(add_counts), default_factory=dict)
    ill_formed: Mapping[str, int] = merge(by_key(add_counts), default_factory=dict)
    first_ill_formed: Mapping[str, str | None] = merge(_first_ill_formed, default_factory=dict)


@dataclass(frozen=True)
class SpansTask:
    config: Any  # SpansConfig

    def score_chunk(self, chunk: Any) -> ChunkScore:
        """Score a `SpanCorpus`, or a `TokenChunk` of token files (decoded here, so in the worker)."""
        from extracteval.chunked import ChunkScore

        if not hasattr(chunk, "predictions"):
            chunk = chunk.corpus()
        cfg = self.config
        models = {}
        rows = []
        for m in sorted(chunk.predictions):
            ms, fallback, docs = _score_model(chunk, m, cfg)
            modes = {"exact": ms.exact, **ms.relaxed}
            conf: dict[tuple[str, str], int] = {(c["gold"], c["pred"]): c["count"] for c in ms.errors.confusions}
            models[m] = _ModelLedger(
                modes={k: {t: (tm.tp, tm.fp, tm.fn) for t, tm in r.per_tag.items()} for k, r in modes.items()},
                curve=tuple((p.tp, p.fp, p.fn) for p in ms.curve),
                errors=dict(ms.errors.counts),
                examples={k: tuple(v) for k, v in ms.errors.examples.items()},
                confusions=conf,
                text_fallback=fallback,
                k=cfg.max_examples,
            )
            rows.append(docs[:, 0, :3])
        ledger = SpansLedger(
            n_documents=len(chunk.doc_ids), n_gold=len(chunk.gold), tags=frozenset(chunk.tags), models=models, unit=chunk.unit,
            n_tokens=chunk.n_tokens, token_correct=dict(chunk.token_correct or {}), ill_formed=dict(chunk.ill_formed),
            first_ill_formed={who: first_ill_formed(chunk, who) for who in chunk.ill_formed},
        )
        rows_arr = np.concatenate(rows, axis=1) if cfg.bootstrap > 0 else None
        return ChunkScore(ledger=ledger, rows=rows_arr)

    def finalise(self, ledger: SpansLedger, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        return finalise_spans(ledger, self.config, record_rows)


def finalise_spans(ledger: SpansLedger, cfg: Any, record_rows: Callable[[], np.ndarray] | None, *,
                   tags: Sequence[str] | None = None) -> Any:
    """Ratios, winners, ranking, intervals and warnings from a ledger of counts (the reduction of the
chunk engine, and of `score_spans` over the corpus as one chunk). `tags`: their order in the
    result (default: sorted, as the file readers give them)."""
    from extracteval.chunked import row_matrix

    tags = tuple(sorted(ledger.tags)) if tags is None else tuple(tags)
    zd = cfg.zero_division
    names = sorted(ledger.models)
    models: dict[str, ModelSpans] = {}
    for m in names:
        ml = ledger.models[m]

        def result(mode: str, threshold: float | None) -> Any:
            per = ml.modes[mode]
            arr = np.array([per.get(t, (0, 0, 0)) for t in tags], dtype=np.int64).reshape(len(tags), 3)
            return _match_result(mode, threshold, arr[:, 0], arr[:, 1], arr[:, 2], tags, zd)

        relaxed = {_threshold_key(t): result(_threshold_key(t), t) for t in cfg.thresholds} if cfg.relaxed else {}
        curve = []
        if cfg.relaxed:
            for t, (tp, fp, fn) in zip(curve_thresholds(cfg.curve_step), ml.curve):
                r = _metrics(Counts(tp=tp, fp=fp, fn=fn), zd)
                curve.append(CurvePoint(threshold=t, tp=r.tp, fp=r.fp, fn=r.fn, precision=r.precision, recall=r.recall, f1=r.f1))
        confusions = [{"gold": a, "pred": b, "count": c} for (a, b), c in sorted(ml.confusions.items(), key=lambda kv: (-kv[1], kv[0]))]
        errors = ErrorBreakdown(counts={k: ml.errors[k] for k in ERROR_KINDS}, examples={k: list(v) for k, v in ml.examples.items()}, confusions=confusions)
        ok = ledger.token_correct.get(m)  # None: no token agreement was counted for this model
        models[m] = ModelSpans(model=m, exact=result("exact", None), relaxed=relaxed, curve=curve, errors=errors,
                               token_accuracy=None if ok is None else (ok / ledger.n_tokens if ledger.n_tokens else zd),
                               token_correct=ok, ill_formed=int(ledger.ill_formed.get(m, 0)))
    warnings = span_warnings(cfg, text_fallback=any(ledger.models[m].text_fallback for m in names), ill_formed=ledger.ill_formed,
                             first_ill_formed=ledger.first_ill_formed)
    scores = {m: {t: Score(f1=r.f1, precision=r.precision, recall=r.recall) for t, r in ms.exact.per_tag.items()} for m, ms in models.items()}
    by_tag: dict[str, dict[str, Score]] = {}
    for m, per in scores.items():
        for t in tags:
            by_tag.setdefault(t, {})[m] = per.get(t, Score(f1=0.0, precision=0.0, recall=0.0))
    winners = field_winners(by_tag) if len(models) > 1 else {}
    wins = field_wins(winners, list(models))
    overall = {m: {f"spans/exact/micro/{k}": float(getattr(ms.exact.micro, k)) for k in ("f1", "precision", "recall")} for m, ms in models.items()}
    ranked = rank_by_metrics(RANKING, overall, wins)
    order = [r.model for r in ranked]
    pairs = list(zip(order, order[1:]))
    cis: dict[str, Any] = {}
    comparisons: list[Any] = []
    if cfg.bootstrap > 0 and ledger.n_documents > 1:
        assert record_rows is not None
        rows = row_matrix(record_rows())
        per_doc = {}
        for j, m in enumerate(names):
            arr = np.zeros((rows.shape[0], 1, 4), dtype=np.int64)
            arr[:, 0, :3] = rows[:, 3 * j : 3 * j + 3]
            per_doc[m] = arr
        cis, diffs = bootstrap_macro_f1({m: per_doc[m] for m in order}, pairs, resamples=cfg.bootstrap, confidence=cfg.confidence,
                                        seed=cfg.seed, zero_division=cfg.zero_division)
        comparisons = [PairComparison(higher=a, lower=b, difference=diffs[(a, b)]) for a, b in pairs]
    final = {}
    for r in ranked:
        ms = models[r.model]
        final[r.model] = ModelSpans(model=ms.model, exact=ms.exact, relaxed=ms.relaxed, curve=ms.curve, errors=ms.errors,
                                    token_accuracy=ms.token_accuracy, token_correct=ms.token_correct, ill_formed=ms.ill_formed,
                                    rank=r.rank, tier=r.tier, tag_wins=r.field_wins, ci=cis.get(r.model))
    return SpansResult(
        config=cfg, unit=ledger.unit, n_documents=ledger.n_documents, n_tokens=ledger.n_tokens,
        n_gold=ledger.n_gold, gold_ill_formed=int(ledger.ill_formed.get("gold", 0)), tags=tags,
        models=final, ranking=tuple(order), tag_winners=winners, warnings=tuple(warnings), comparisons=tuple(comparisons),
    )
