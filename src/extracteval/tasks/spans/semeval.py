"""The `spans` task's SemEval-2013 schemas, as nervaluate counts them: `strict`, `exact`, `partial`
and `ent_type`, overall and per type.

Each predicted span, in document order (start, end, tag), takes one still-free gold span among its
candidates — the gold spans it overlaps by at least `min_overlap` % of the gold span's length
(an identical pair always qualifies):

* strict: the first candidate with the same boundaries and tag → correct; else the first candidate
  → incorrect;
* exact: the first candidate with the same boundaries (any tag) → correct; else the first → incorrect;
* partial: the pairing of `exact`, its incorrect pairs counted as partial (half credit);
* ent_type: among the candidates of the same tag, the closest (|Δstart| + |Δend|, then the first)
  → correct; else the first candidate of another tag → incorrect.

A predicted span without a pair is spurious, a gold span left free is missed. Per type, each
schema is evaluated again on the spans of that type alone (as nervaluate does), so the per-type
counts are not a breakdown of the overall ones. The pairing is greedy and follows document order:
a pair whose ends have no other candidate is decided at once (vectorised); only the spans of
contested candidates go through the greedy loop.

Counts are (correct, incorrect, partial, missed, spurious); they add over documents, so chunks
merge them (`ledger.SpansLedger`) and the ratios are computed once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["SCHEMAS", "COUNT_NAMES", "schema_counts", "schema_result"]

SCHEMAS = ("strict", "exact", "partial", "ent_type")
COUNT_NAMES = ("correct", "incorrect", "partial", "missed", "spurious")
_HALF_CREDIT = ("partial", "ent_type")  # precision and recall count partial pairs half

Counts5 = tuple[int, int, int, int, int]
Key = Callable[[np.ndarray], np.ndarray]  # edges → their sort key


def _alone(g: np.ndarray, p: np.ndarray, n_gold: int, n_pred: int) -> np.ndarray:
    """Edges (g[i], p[i]) that are the only candidate of both their spans."""
    return (np.bincount(g, minlength=n_gold)[g] == 1) & (np.bincount(p, minlength=n_pred)[p] == 1)


def _pair(g: np.ndarray, p: np.ndarray, alone: np.ndarray, good: np.ndarray, key: Key | None, n_pred: int) -> tuple[np.ndarray, np.ndarray]:
    """The greedy pairing over candidate edges (g[i], p[i]): each predicted span in order takes
    the free candidate with `good` of least (`key(edges)`, gold index) — else the first free
    candidate that is not `good`. An edge `alone` (`_alone`) is decided at once, so `key` is asked
    only for the contested edges. Returns per predicted span 0 (none), 1 (good pair), 2 (other
    pair), and the edges paired (bool)."""
    status = np.zeros(n_pred, dtype=np.int8)
    status[p[alone]] = np.where(good[alone], 1, 2)
    used = alone.copy()
    if not bool(alone.all()):
        _contested(g, p, good, key, np.flatnonzero(~alone), status, used)
    return status, used


def _contested(g: np.ndarray, p: np.ndarray, good: np.ndarray, key: Key | None, rest: np.ndarray,
               status: np.ndarray, used: np.ndarray) -> None:
    """The greedy loop over the edges `rest` (none shares a span with a decided edge), in place."""
    rest = rest[np.lexsort((g[rest], p[rest]))]
    k = np.zeros(len(g), dtype=np.int64)
    if key is not None:
        k[rest] = key(rest)
    taken: set[int] = set()
    bounds = np.flatnonzero(np.diff(p[rest])) + 1
    for part in np.split(rest, bounds):
        best = other = -1
        best_key = 0
        for e, gg, ok, kk in zip(part.tolist(), g[part].tolist(), good[part].tolist(), k[part].tolist()):
            if gg in taken:
                continue
            if ok:
                if best < 0 or kk < best_key:
                    best, best_key = e, kk
            elif other < 0:
                other = e
        chosen = best if best >= 0 else other
        if chosen >= 0:
            taken.add(int(g[chosen]))
            used[chosen] = True
            status[p[chosen]] = 1 if best >= 0 else 2


def _tally(status: np.ndarray, used: np.ndarray, g: np.ndarray, gold_tag: np.ndarray, pred_tag: np.ndarray, n_tags: int) -> np.ndarray:
    """(tags, 4): good pairs, other pairs and spurious per tag of the predicted span, missed per tag
    of the gold span."""
    out = np.zeros((n_tags, 4), dtype=np.int64)
    for col, which in enumerate((1, 2, 0)):
        out[:, col] = np.bincount(pred_tag[status == which], minlength=n_tags)[:n_tags]
    paired = np.zeros(len(gold_tag), dtype=bool)
    paired[g[used]] = True
    out[:, 3] = np.bincount(gold_tag[~paired], minlength=n_tags)[:n_tags]
    return out


def _total(status: np.ndarray, used: np.ndarray, n_gold: int) -> np.ndarray:
    """Good pairs, other pairs, spurious, missed over every tag."""
    counts = np.bincount(status, minlength=3)
    return np.array([counts[1], counts[2], counts[0], n_gold - int(np.count_nonzero(used))])


def _as_counts(t: np.ndarray, partial: bool) -> Counts5:
    """(good, other, spurious, missed) → (correct, incorrect, partial, missed, spurious): the other
    pairs are partial in the `partial` schema, incorrect in the others."""
    good, other, spurious, missed = (int(x) for x in t)
    return (good, 0, other, missed, spurious) if partial else (good, other, 0, missed, spurious)


def schema_counts(gold: Any, pred: Any, g: np.ndarray, p: np.ndarray, tags: Sequence[str], min_overlap: float, *,
                  same_tag: np.ndarray | None = None, same_bounds: np.ndarray | None = None
                  ) -> tuple[dict[str, Counts5], dict[str, dict[str, Counts5]]]:
    """Overall and per-type counts of the four schemas for canonical span sets `gold`, `pred` and
    their overlapping pairs (g, p) (`matching.overlapping_pairs`; `same_tag`, `same_bounds` of
    each pair when the caller has them); per type only the tags that have spans."""
    nt = len(tags)
    if same_tag is None or same_bounds is None:
        same_tag = gold.tag[g] == pred.tag[p]
        same_bounds = (gold.start[g] == pred.start[p]) & (gold.end[g] == pred.end[p])
    ov = np.minimum(gold.end[g], pred.end[p]) - np.maximum(gold.start[g], pred.start[p])
    keep = (ov / (gold.end[g] - gold.start[g])) * 100.0 >= min_overlap  # nervaluate's expression, so the threshold falls alike
    if not bool(keep.all()):
        g, p, same_tag, same_bounds = g[keep], p[keep], same_tag[keep], same_bounds[keep]

    def dist(e: np.ndarray) -> np.ndarray:  # ent_type's boundary distance of the edges e
        return np.abs(gold.start[g[e]] - pred.start[p[e]]) + np.abs(gold.end[g[e]] - pred.end[p[e]])

    gt, pt = gold.tag.astype(np.int64), pred.tag.astype(np.int64)
    n_g, n_p = len(gold), len(pred)
    alone = _alone(g, p, n_g, n_p)

    def total(good: np.ndarray, key: np.ndarray | None) -> np.ndarray:
        return _total(*_pair(g, p, alone, good, key, n_p), n_g)

    overall = {"strict": _as_counts(total(same_tag & same_bounds, None), False)}
    bounds = total(same_bounds, None)
    overall["exact"], overall["partial"] = _as_counts(bounds, False), _as_counts(bounds, True)
    overall["ent_type"] = _as_counts(total(same_tag, dist), False)
    # per type: the same-tag candidates alone (spans of other tags are not there)
    s = np.flatnonzero(same_tag)
    sg, sp = g[s], p[s]
    alone = _alone(sg, sp, n_g, n_p)
    by_bounds = _tally(*_pair(sg, sp, alone, same_bounds[s], None, n_p), sg, gt, pt, nt)
    by_type = _tally(*_pair(sg, sp, alone, np.ones(len(s), dtype=bool), lambda e: dist(s[e]), n_p), sg, gt, pt, nt)
    present = np.flatnonzero(np.bincount(gt, minlength=nt)[:nt] + np.bincount(pt, minlength=nt)[:nt])
    per_type: dict[str, dict[str, Counts5]] = {}
    for schema, arr, partial in (("strict", by_bounds, False), ("exact", by_bounds, False), ("partial", by_bounds, True), ("ent_type", by_type, False)):
        per_type[schema] = {tags[i]: _as_counts(arr[i], partial) for i in present.tolist()}
    return overall, per_type


def _ratio(num: float, den: int, zd: float) -> float:
    return num / den if den > 0 else zd


def schema_metrics(schema: str, c: Sequence[int], zero_division: float = 0.0) -> dict[str, Any]:
    """One schema's counts → the counts, `possible`, `actual`, precision, recall and F1, as nervaluate
    computes them (partial and ent_type: (COR + 0.5·PAR) over ACT and POS; F1 = 2PR/(P+R), 0 when
    P + R = 0); `zero_division` where ACT or POS is 0."""
    cor, inc, par, mis, spu = (int(x) for x in c)
    act, pos = cor + inc + par + spu, cor + inc + par + mis
    hit = cor + 0.5 * par if schema in _HALF_CREDIT else cor
    p, r = _ratio(hit, act, zero_division), _ratio(hit, pos, zero_division)
    f1 = 2 * (p * r) / (p + r) if (p + r) > 0 else 0.0
    return {"correct": cor, "incorrect": inc, "partial": par, "missed": mis, "spurious": spu, "possible": pos, "actual": act,
            "precision": float(p), "recall": float(r), "f1": float(f1)}


def schema_result(overall: Mapping[str, Sequence[int]], per_type: Mapping[str, Mapping[str, Sequence[int]]], tags: Sequence[str],
                  zero_division: float = 0.0) -> dict[str, Any]:
    """The `nervaluate` object of a model's result: per schema its metrics and `per_type` (in `tags` order)."""
    out: dict[str, Any] = {}
    for schema in SCHEMAS:
        d = schema_metrics(schema, overall.get(schema, (0, 0, 0, 0, 0)), zero_division)
        per = per_type.get(schema, {})
        d["per_type"] = {t: schema_metrics(schema, per[t], zero_division) for t in tags if t in per}
        out[schema] = d
    return out
