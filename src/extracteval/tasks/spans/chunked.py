"""The `spans` task (JSONL documents, token files) on the chunk driver; JSONL also on the Spark engine.

Each chunk of documents is scored by the core's own per-model scorer (`core.spans._score_model`:
matchings are one-to-one within a document, so a document's counts never depend on another)
into a `SpansLedger`: per model and matching mode the per-tag (tp, fp, fn), the curve's counts,
the error-kind counts, the tag confusions and the first examples of each error kind (documents
come in id order — file order for token files — so the first of the chunks are the first overall). Ledgers add up; per-tag and
micro / macro ratios, tag winners, ranking and warnings are computed once from the merged counts
with the core's functions. The bootstrap interval resamples documents: each chunk's per-document
exact counts (3 integers per document and model) are spilled to a temporary file and read back
for it, in document order, so the interval is the in-memory one exactly (`--no-ci` skips them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from extracteval.chunked import ChunkScore, row_matrix

__all__ = ["SpansLedger", "SpansTask", "spans_chunk_job"]


def _add(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> dict[Any, Any]:
    """Sum two mappings of counts (ints or tuples of ints) key by key."""
    out = dict(a)
    for k, v in b.items():
        if k not in out:
            out[k] = v
        elif isinstance(v, tuple):
            out[k] = tuple(x + y for x, y in zip(out[k], v))
        else:
            out[k] = out[k] + v
    return out


@dataclass(frozen=True)
class _ModelLedger:
    modes: Mapping[str, Mapping[str, tuple[int, int, int]]]  # mode → tag → (tp, fp, fn)
    curve: tuple[tuple[int, int, int], ...]  # per curve threshold
    errors: Mapping[str, int]
    examples: Mapping[str, tuple[dict[str, Any], ...]]
    confusions: Mapping[tuple[str, str], int]
    text_fallback: bool
    k: int  # examples kept per error kind

    def __add__(self, o: _ModelLedger) -> _ModelLedger:
        return _ModelLedger(
            modes={m: _add(self.modes[m], o.modes[m]) for m in self.modes},
            curve=tuple(tuple(x + y for x, y in zip(a, b)) for a, b in zip(self.curve, o.curve)),  # type: ignore[misc]
            errors=_add(self.errors, o.errors),
            examples={k: (v + o.examples[k])[: self.k] for k, v in self.examples.items()},
            confusions=_add(self.confusions, o.confusions),
            text_fallback=self.text_fallback or o.text_fallback,
            k=self.k,
        )


@dataclass(frozen=True)
class SpansLedger:
    """Counts of a run of documents. Token files add: tokens, per model the tokens whose gold and
    predicted tags are equal, per annotator (`gold` or a model) the chunks a strict scheme dropped
    and where the first one lies (the earliest chunk's: documents come in file order)."""

    n_documents: int
    n_gold: int
    tags: frozenset[str]
    models: Mapping[str, _ModelLedger]
    unit: str = "char"
    n_tokens: int = 0
    token_correct: Mapping[str, int] = field(default_factory=dict)
    ill_formed: Mapping[str, int] = field(default_factory=dict)
    first_ill_formed: Mapping[str, str | None] = field(default_factory=dict)

    def __add__(self, o: SpansLedger) -> SpansLedger:
        return SpansLedger(
            n_documents=self.n_documents + o.n_documents, n_gold=self.n_gold + o.n_gold, tags=self.tags | o.tags,
            models={m: self.models[m] + o.models[m] for m in self.models}, unit=self.unit, n_tokens=self.n_tokens + o.n_tokens,
            token_correct=_add(self.token_correct, o.token_correct), ill_formed=_add(self.ill_formed, o.ill_formed),
            first_ill_formed={w: self.first_ill_formed.get(w) or o.first_ill_formed.get(w) for w in {*self.first_ill_formed, *o.first_ill_formed}},
        )


@dataclass(frozen=True)
class SpansTask:
    config: Any  # SpansConfig

    def score_chunk(self, chunk: Any) -> ChunkScore:
        """Score a `SpanCorpus`, or a `TokenChunk` of token files (decoded here, so in the worker)."""
        from extracteval.tasks.spans.semantics import _score_model, first_ill_formed

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
            n_tokens=chunk.n_tokens or 0, token_correct=dict(chunk.token_correct or {}), ill_formed=dict(chunk.ill_formed),
            first_ill_formed={who: first_ill_formed(chunk, who) for who in chunk.ill_formed},
        )
        rows_arr = np.concatenate(rows, axis=1) if cfg.bootstrap > 0 else None
        return ChunkScore(ledger=ledger, rows=rows_arr)

    def finalise(self, ledger: SpansLedger, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        return finalise_spans(ledger, self.config, record_rows)


def finalise_spans(ledger: SpansLedger, cfg: Any, record_rows: Callable[[], np.ndarray] | None) -> Any:
    """Ratios, winners, ranking, intervals and warnings, as `core.spans.score_spans` computes them."""
    from extracteval.core.bootstrap import bootstrap_macro_f1
    from extracteval.core.counts import Counts
    from extracteval.tasks.fields.semantics import PairComparison
    from extracteval.core.ranking import Score, field_winners, field_wins, rank_by_metrics
    from extracteval.tasks.spans.semantics import (
        ERROR_KINDS, CurvePoint, ErrorBreakdown, ModelSpans, SpansResult, _match_result, _metrics, _threshold_key, curve_thresholds,
        span_warnings,
    )

    tags = tuple(sorted(ledger.tags))
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
        tokens = ledger.unit == "token"
        ok = ledger.token_correct.get(m, 0) if tokens else None
        models[m] = ModelSpans(model=m, exact=result("exact", None), relaxed=relaxed, curve=curve, errors=errors,
                               token_accuracy=(ok / ledger.n_tokens if ledger.n_tokens else zd) if tokens else None,
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
    ranked = rank_by_metrics("spans", overall, wins)
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
        config=cfg, unit=ledger.unit, n_documents=ledger.n_documents, n_tokens=ledger.n_tokens if ledger.unit == "token" else None,
        n_gold=ledger.n_gold, gold_ill_formed=int(ledger.ill_formed.get("gold", 0)), tags=tags,
        models=final, ranking=tuple(order), tag_winners=winners, warnings=tuple(warnings), comparisons=tuple(comparisons),
    )


def spans_chunk_job(args: Any, *, chunk_size: int) -> Any:
    """The `ChunkJob` of `score spans` / `evaluate spans --chunk-size N` (`args`: their parsed
    options): JSONL documents sorted by id, N at a time, or token files N sentences at a time
    (`io.spans_chunks.iter_token_chunks`); `inputs` as the in-memory evaluation names them."""
    from extracteval.chunked import ChunkJob
    from extracteval.tasks.spans.chunks import iter_token_chunks, open_spans_stream
    from extracteval.tasks.spans.options import check_token_inputs, named_files, spans_config, spans_inputs

    token_files = check_token_inputs(args)
    if token_files:
        files = {"conll": token_files} if args.conll else {"truth": args.truth, "predictions": token_files}
        chunks: Any = iter_token_chunks(scheme=args.scheme, suffix=args.suffix, chunk_size=chunk_size, **files)
        config = spans_config(args, "token")
    else:
        chunks = open_spans_stream(args.truth, named_files(args.predictions or [], "--predictions"), chunk_size=chunk_size).chunks()
        config = spans_config(args, "char")
    return ChunkJob(task=SpansTask(config=config), chunks=chunks, inputs=spans_inputs(args))
