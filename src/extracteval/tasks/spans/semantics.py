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

SemEval-2013 schemas (`semeval`; the result's `nervaluate`): nervaluate's `strict`, `exact`,
`partial` and `ent_type` counts, overall and per type, from the same overlapping pairs — its greedy
pairing in document order, decided at once for uncontested pairs.

The stages, each in its module: `config` (options, result types) → `corpus` (documents and span
sets) → `matching` (candidate pairs, matchings) → `counting` (per model: tags, documents, errors)
→ `ledger` (what chunks merge, and the result from it); this module is their entry point.
"""

from __future__ import annotations

from extracteval.tasks.spans.config import CurvePoint, ERROR_KINDS, ErrorBreakdown, MatchResult, ModelSpans, SpansConfig, SpansResult, TagMetrics, curve_thresholds
from extracteval.tasks.spans.corpus import LazyTokens, SpanCorpus, SpanSet, corpus_from_tags
from extracteval.tasks.spans.counting import document_counts, span_counts
from extracteval.tasks.spans.ledger import SpansTask, finalise_spans


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


# --------------------------------------------------------------------------------------------
# candidate pairs and matchings


# --------------------------------------------------------------------------------------------
# scoring


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


