"""The `spans` task's matching: candidate pairs of overlapping gold and predicted spans, and the optimal
one-to-one matchings (exact, relaxed and along the threshold curve)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from extracteval.core.matching import max_matching
from extracteval.tasks.spans.config import _EPS
from extracteval.tasks.spans.corpus import SpanSet


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
