"""The `spans` task's ledger: what chunks of documents leave to merge, and the result computed once from it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from extracteval.tasks.spans.contract import RANKING
from extracteval.core.ledger import Ledger, add_counts, by_key, either, elementwise, first_each, keep, merge, union
from extracteval.core.bootstrap import PairComparison, bootstrap_counts
from extracteval.core.counts import Counts
from extracteval.core.ranking import Score, field_winners, field_wins, rank_by_metrics
from extracteval.tasks.spans.config import CurvePoint, ERROR_KINDS, ErrorBreakdown, ModelSpans, SpansResult, _metrics, _threshold_key, curve_thresholds
from extracteval.tasks.spans.counting import _match_result, _score_model, first_ill_formed, span_warnings
from extracteval.tasks.spans.metrics import spans_metrics
from extracteval.tasks.spans.semeval import COUNT_NAMES, schema_result

if TYPE_CHECKING:
    from extracteval.chunked import ChunkScore


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    modes: Mapping[str, Mapping[str, tuple[int, int, int]]] = merge(by_key(by_key(add_counts)))  # mode → tag → (tp, fp, fn)
    curve: tuple[tuple[int, int, int], ...] = merge(elementwise(add_counts))  # per curve threshold
    errors: Mapping[str, int] = merge(by_key(add_counts))
    examples: Mapping[str, tuple[dict[str, Any], ...]] = merge(first_each("k"))  # each kind's first, as many as `k`
    confusions: Mapping[tuple[str, str], int] = merge(by_key(add_counts))
    text_fallback: bool = merge(either)
    k: int = merge(keep)  # examples kept per error kind
    # the SemEval-2013 schemas (`semeval`): schema → (correct, incorrect, partial, missed, spurious), overall and per type
    schemas: Mapping[str, tuple[int, ...]] = merge(by_key(add_counts), default_factory=dict)
    schemas_per_type: Mapping[str, Mapping[str, tuple[int, ...]]] = merge(by_key(by_key(add_counts)), default_factory=dict)


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
                schemas={s: tuple(d[c] for c in COUNT_NAMES) for s, d in ms.nervaluate.items()},
                schemas_per_type={s: {t: tuple(x[c] for c in COUNT_NAMES) for t, x in d["per_type"].items()} for s, d in ms.nervaluate.items()},
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
                               token_correct=ok, ill_formed=int(ledger.ill_formed.get(m, 0)),
                               nervaluate=schema_result(ml.schemas, ml.schemas_per_type, tags, zd))
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
        per_doc = {m: np.ascontiguousarray(rows[:, 3 * j : 3 * j + 3], dtype=np.int64) for j, m in enumerate(names)}  # exact tp, fp, fn

        def micro_f1(summed: np.ndarray) -> np.ndarray:  # by the task's one map, as the result's own micro F1
            return spans_metrics(summed[..., 0:1], summed[..., 1:2], summed[..., 2:3], which=("micro/f1",), zero_division=cfg.zero_division)["micro/f1"]

        cis, diffs = bootstrap_counts({m: per_doc[m] for m in order}, micro_f1, pairs, resamples=cfg.bootstrap, confidence=cfg.confidence, seed=cfg.seed)
        comparisons = [PairComparison(higher=a, lower=b, difference=diffs[(a, b)]) for a, b in pairs]
    final = {}
    for r in ranked:
        ms = models[r.model]
        final[r.model] = ModelSpans(model=ms.model, exact=ms.exact, relaxed=ms.relaxed, curve=ms.curve, errors=ms.errors,
                                    token_accuracy=ms.token_accuracy, token_correct=ms.token_correct, ill_formed=ms.ill_formed,
                                    rank=r.rank, tier=r.tier, tag_wins=r.field_wins, ci=cis.get(r.model), nervaluate=ms.nervaluate)
    return SpansResult(
        config=cfg, unit=ledger.unit, n_documents=ledger.n_documents, n_tokens=ledger.n_tokens,
        n_gold=ledger.n_gold, gold_ill_formed=int(ledger.ill_formed.get("gold", 0)), tags=tags,
        models=final, ranking=tuple(order), tag_winners=winners, warnings=tuple(warnings), comparisons=tuple(comparisons),
    )
