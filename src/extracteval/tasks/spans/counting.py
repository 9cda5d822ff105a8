"""The `spans` task's count: each model's spans matched against the gold ones, per tag and per document, with the
error breakdown, examples and warnings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.tasks.spans.metrics import spans_metrics

from extracteval.core.counts import Counts
from extracteval.tasks.spans.config import CurvePoint, ERROR_KINDS, ErrorBreakdown, MatchResult, ModelSpans, SpansConfig, TagMetrics, _metrics, _threshold_key, curve_thresholds
from extracteval.tasks.spans.corpus import SpanCorpus, SpanSet
from extracteval.tasks.spans.matching import _curve_tp, _match, overlapping_pairs


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
    got = spans_metrics(tp, fp, fn, zero_division=zd)
    micro = TagMetrics(tp=int(tp.sum()), fp=int(fp.sum()), fn=int(fn.sum()),
                       **{k: float(got[f"micro/{k}"]) for k in ("precision", "recall", "f1")})
    return MatchResult(mode=mode, threshold=threshold, micro=micro, per_tag=per_tag,
                       **{avg: {k: float(got[f"{avg}/{k}"]) for k in ("f1", "precision", "recall")} for avg in ("macro", "weighted")})


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


def _relaxed_results(corpus: SpanCorpus, gold: SpanSet, pred: SpanSet, g: np.ndarray, p: np.ndarray, same_tag: np.ndarray,
                     exact: np.ndarray, cfg: SpansConfig) -> tuple[dict[str, MatchResult], list[CurvePoint], bool]:
    """The relaxed stage: every same-tag overlapping pair scored once, matched at each reported
    threshold and along the curve; with whether TextSim fell back to IoU (nothing unless
    `cfg.relaxed`)."""
    tags = corpus.tags
    nt = len(tags)
    zd = cfg.zero_division
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
    return relaxed, curve, text_fallback


def _error_pairs(gold: SpanSet, pred: SpanSet, g: np.ndarray, p: np.ndarray, same_tag: np.ndarray, same_bounds: np.ndarray,
                 e_chosen: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The error stage, relative to the exact matching: the pairs (indices into `g`, `p`) matched
    as each kind of error in turn among the spans still free, then the gold spans left (missed)
    and the predicted ones left (spurious)."""
    g_free = np.ones(len(gold), dtype=bool)
    p_free = np.ones(len(pred), dtype=bool)
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
    return pairs_of, np.flatnonzero(g_free), np.flatnonzero(p_free)


def _error_breakdown(corpus: SpanCorpus, gold: SpanSet, pred: SpanSet, g: np.ndarray, p: np.ndarray, pairs_of: dict[str, np.ndarray],
                     missed: np.ndarray, spurious: np.ndarray, k_ex: int) -> ErrorBreakdown:
    """The error stage's report: the count of each kind, its first `k_ex` examples in document
    order and the tag confusions of the type errors."""
    tags = corpus.tags
    counts = {k: int(len(pairs_of[k])) for k in ("boundary", "type", "boundary_type")}
    counts["missed"] = int(len(missed))
    counts["spurious"] = int(len(spurious))
    counts = {k: counts[k] for k in ERROR_KINDS}

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
    return ErrorBreakdown(counts=counts, examples=examples, confusions=confusions)


def _score_model(corpus: SpanCorpus, model: str, cfg: SpansConfig) -> tuple[ModelSpans, bool, np.ndarray]:
    """One model's results, whether TextSim had to fall back to IoU, and per-document exact counts:
    the overlapping pairs aligned once, then the exact, relaxed and error stages."""
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
    relaxed, curve, text_fallback = _relaxed_results(corpus, gold, pred, g, p, same_tag, exact, cfg)

    # error breakdown relative to the exact matching
    pairs_of, missed, spurious = _error_pairs(gold, pred, g, p, same_tag, same_bounds, e_chosen)
    errors = _error_breakdown(corpus, gold, pred, g, p, pairs_of, missed, spurious, cfg.max_examples)

    tok_acc = None
    tok_ok = None
    if corpus.token_correct is not None and model in corpus.token_correct:
        tok_ok = int(corpus.token_correct[model])
        tok_acc = tok_ok / corpus.n_tokens if corpus.n_tokens else zd
    from extracteval.tasks.spans.semeval import schema_counts, schema_result

    semeval = schema_result(*schema_counts(gold, pred, g, p, tags, cfg.min_overlap, same_tag=same_tag, same_bounds=same_bounds), tags, zd)
    ms = ModelSpans(
        model=model,
        nervaluate=semeval,
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
