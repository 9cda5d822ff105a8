"""The `entities` task's alignment: the candidate pairs of gold and predicted entities of a record, their EXACT,
FUZZY and SEMANTIC field scores over distinct value pairs, and the optimal one-to-one matching."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.core.matching import max_matching
from extracteval.core.similarity import SimilarityBackend
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError
from extracteval.tasks.entities.config import EntitiesConfig, ModelEntities
from extracteval.tasks.entities.counting import _Prepared, _Side, _prepare
from extracteval.tasks.entities.counting import _FieldTable


_TIE_EPS = 1e-6


def _pairs(gold: _Side, pred: _Side, n_records: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (gold, pred) candidate pair of every record, gold-major within a record.

    Returns pair_gold, pair_pred and the (n_records + 1,) offsets of each record's block."""
    g_n = np.diff(gold.start)
    p_n = np.diff(pred.start)
    per_rec = g_n * p_n
    pstart = np.concatenate([[0], np.cumsum(per_rec)]).astype(np.int64)
    total = int(pstart[-1])
    if total == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, pstart
    # for each gold entity: P_r partners, the pred entities of its record
    g_idx = np.arange(len(gold.record), dtype=np.int64)
    reps = p_n[gold.record]
    pair_gold = np.repeat(g_idx, reps)
    first = np.repeat(pred.start[gold.record], reps)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps)
    pair_pred = first + within
    return pair_gold, pair_pred, pstart


_DENSE_PAIRS = 1 << 22  # pair tables up to 4M entries (4 MB + 32 MB) are dense


def _distinct_pairs(ids: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(ids, return_inverse=True)` for pair ids `a * width + b`. With few keys per field
    (the usual case) a dense presence table does it in linear time, instead of sorting millions
    of candidate pairs."""
    if width * width > _DENSE_PAIRS:
        u, inv = np.unique(ids, return_inverse=True)
        return u, inv.ravel()
    present = np.zeros(width * width, dtype=bool)
    present[ids] = True
    u = np.flatnonzero(present)
    lut = np.zeros(width * width, dtype=np.int64)
    lut[u] = np.arange(len(u), dtype=np.int64)
    return u, lut[ids]


def _fuzzy_scores(code_a: np.ndarray, code_b: np.ndarray, table: _FieldTable, scorer: str) -> np.ndarray:
    """Similarity of code pairs: 1 for equal keys, rapidfuzz score/100 for two different texts,
    0 otherwise; computed once per *distinct* pair, in one batched `cpdist` call."""
    out = (code_a == code_b).astype(np.float64)
    cand = (code_a != code_b) & table.is_text[code_a] & table.is_text[code_b]
    if not cand.any():
        return out
    width = len(table.keys) + 1
    upairs, inv = _distinct_pairs(code_a[cand] * width + code_b[cand], width)
    ua, ub = np.divmod(upairs, width)
    from rapidfuzz import fuzz
    from rapidfuzz.process import cpdist

    texts = table.texts
    scores = cpdist([texts[a] for a in ua.tolist()], [texts[b] for b in ub.tolist()], scorer=getattr(fuzz, scorer), workers=1)
    out[cand] = (np.asarray(scores, dtype=np.float64) / 100.0)[inv]
    return out


@dataclass
class _SemanticTable:
    """Similarity-backend scores of the distinct (gold code, predicted code) text pairs of one
    SEMANTIC field, gathered over the whole input (every record, every model) so the backend is
    called once per field, never per record."""

    ids: np.ndarray  # sorted distinct pair ids: gold code * width + predicted code
    scores: np.ndarray  # backend score per id in [0, 1]; NaN = the backend could not score the pair
    width: int

    @property
    def failures(self) -> int:
        return int(np.isnan(self.scores).sum())


def _semantic_candidates(code_a: np.ndarray, code_b: np.ndarray, table: _FieldTable) -> np.ndarray:
    # as for FUZZY: only two different texts go to the backend; numbers and dates compare exactly
    return (code_a != code_b) & table.is_text[code_a] & table.is_text[code_b]


def _semantic_table(
    backend: SimilarityBackend, table: _FieldTable, code_pairs: Sequence[tuple[np.ndarray, np.ndarray]], fname: str
) -> _SemanticTable:
    width = len(table.keys) + 1
    ids = [a[c] * width + b[c] for a, b in code_pairs for c in [_semantic_candidates(a, b, table)]]
    u = _distinct_pairs(np.concatenate(ids), width)[0] if ids else np.zeros(0, dtype=np.int64)
    if not len(u):
        return _SemanticTable(ids=u, scores=np.zeros(0), width=width)
    ua, ub = np.divmod(u, width)
    texts = table.texts
    raw = np.asarray(backend.similarity([texts[i] for i in ua.tolist()], [texts[i] for i in ub.tolist()]), dtype=np.float64).ravel()
    if raw.shape[0] != len(u):
        raise InputError(
            f"SEMANTIC field {fname!r}: similarity backend {getattr(backend, 'name', backend)!r} returned "
            f"{raw.shape[0]} scores for {len(u)} pairs; expected one score per pair."
        )
    return _SemanticTable(ids=u, scores=np.clip(raw, 0.0, 1.0), width=width)


def _semantic_scores(code_a: np.ndarray, code_b: np.ndarray, table: _FieldTable, sem: _SemanticTable) -> tuple[np.ndarray, np.ndarray]:
    """Scores of code pairs (1 for equal keys, the backend's score for two different texts — NaN
    when it failed —, 0 otherwise) and the mask of pairs the backend scored."""
    out = (code_a == code_b).astype(np.float64)
    cand = _semantic_candidates(code_a, code_b, table)
    if cand.any():
        q = code_a[cand] * sem.width + code_b[cand]
        pos = np.minimum(np.searchsorted(sem.ids, q), max(len(sem.ids) - 1, 0))
        if not len(sem.ids) or not bool((sem.ids[pos] == q).all()):  # pragma: no cover (tables hold every pair asked for)
            raise RuntimeError("entities: a SEMANTIC pair was not scored in advance")
        out[cand] = sem.scores[pos]
    return out, cand


_Matches = tuple[np.ndarray, np.ndarray, list[float]]


def _align_all(prep: _Prepared, cfg: EntitiesConfig, backend: SimilarityBackend) -> tuple[list[_Matches], dict[str, _SemanticTable]]:
    """Every model's matches, and the SEMANTIC score tables, each filled by one backend call:
    key fields over every candidate pair of every model before aligning, the other SEMANTIC
    features over the matched pairs after."""
    gold, n_rec = prep.gold, len(prep.order)
    semantic = [f for f in prep.fields_needed if cfg.strategy_for(f) is Strategy.SEMANTIC]
    sem: dict[str, _SemanticTable] = {}
    sem_keys = [f for f in semantic if f in prep.key_fields]
    # candidate pairs are kept for every model only when a SEMANTIC key field needs them all at once
    pairs = [_pairs(gold, side, n_rec) for side in prep.sides] if sem_keys else [None] * len(prep.sides)
    for f in sem_keys:
        sem[f] = _semantic_table(backend, prep.tables[f],
                                 [(gold.codes[f][pg], side.codes[f][pp]) for side, (pg, pp, _) in zip(prep.sides, pairs)], f)  # type: ignore[misc]
    matches = []
    for i, side in enumerate(prep.sides):
        matches.append(_match(prep, side, cfg, sem, pairs[i]))
        pairs[i] = None  # free it
    for f in semantic:
        if f not in sem:
            sem[f] = _semantic_table(backend, prep.tables[f],
                                     [(gold.codes[f][mg], side.codes[f][mp]) for side, (mg, mp, _) in zip(prep.sides, matches)], f)
    return matches, sem


def _pair_similarity(prep: _Prepared, side: _Side, cfg: EntitiesConfig, sem: Mapping[str, _SemanticTable],
                     pair_g: np.ndarray, pair_p: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The weighted key-field similarity of every candidate pair (0 for an invalid prediction), and the
    key fields' equality masks of the scored fields (kept for the tie-break)."""
    gold = prep.gold
    num = np.zeros(len(pair_g))
    den = np.zeros(len(pair_g))
    scored = set(prep.scored)
    equal: dict[str, np.ndarray] = {}  # kept for the tie-break below, which would gather them again
    for f in prep.key_fields:
        t = prep.tables[f]
        a, b = gold.codes[f][pair_g], side.codes[f][pair_p]
        considered = (a != t.missing) | (b != t.missing)  # both absent: the field says nothing
        eq = a == b
        if f in scored:
            equal[f] = eq
        strategy = cfg.strategy_for(f)
        if strategy is Strategy.FUZZY:
            s = _fuzzy_scores(a, b, t, cfg.fuzzy_scorer)
        elif strategy is Strategy.SEMANTIC:
            s = np.nan_to_num(_semantic_scores(a, b, t, sem[f])[0], nan=0.0)  # a failed pair is no evidence of a match
        else:
            s = eq.astype(np.float64)
        s[a == t.missing] = 0.0
        num += prep.weights[f] * s * considered
        den += prep.weights[f] * considered
    # Two entities absent on every key field disagree on nothing: similarity 1, not 0/0 = 0, or
    # a gold entity such as {"item": null} copied verbatim would stay unmatched.
    sim = np.divide(num, den, out=np.ones(len(pair_g)), where=den > 0)
    sim[~side.valid[pair_p]] = 0.0
    return sim, equal


def _tie_break_rank(prep: _Prepared, side: _Side, sim: np.ndarray, equal: Mapping[str, np.ndarray],
                    pair_g: np.ndarray, pair_p: np.ndarray, thr: float) -> np.ndarray:
    """The score the assignment maximises: the similarity, with admissible ties broken by agreement on the scored fields."""
    gold = prep.gold
    # Ties on the key fields (two gold lines with the same description) go to the pair that agrees
    # on more of the scored fields: admissible scores are squeezed into [thr, 1] with a tiny share
    # for that agreement, which keeps them admissible and never reorders different similarities
    # by more than _TIE_EPS.
    rank = sim.copy()
    if thr < 1.0 and len(pair_g):
        ok = np.flatnonzero(sim >= thr)  # only admissible pairs get the tie-break share
        agree = np.zeros(len(ok))
        for f in prep.scored:
            agree += equal[f][ok] if f in equal else gold.codes[f][pair_g[ok]] == side.codes[f][pair_p[ok]]
        agree /= max(len(prep.scored), 1)
        rank[ok] = thr + (1.0 - thr) * ((1.0 - _TIE_EPS) * (sim[ok] - thr) / (1.0 - thr) + _TIE_EPS * agree)
    return rank


def _assign(gold: _Side, side: _Side, rank: np.ndarray, pstart: np.ndarray, thr: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The optimal one-to-one assignment of each record's entities: matched gold and predicted entity indices, in parts."""
    g_n, p_n = np.diff(gold.start), np.diff(side.start)
    out_g: list[np.ndarray] = []
    out_p: list[np.ndarray] = []
    active = np.flatnonzero((g_n > 0) & (p_n > 0))
    # Records of one shape (G gold × P predicted) are checked together for an *evident* optimal
    # assignment: on the smaller side, every entity's best partner is admissible and no two share
    # one. Those pairs match min(G, P) entities (the most possible) with the sum of the row maxima
    # (the highest possible total), exactly what `max_matching` maximises, for one argmax instead
    # of an assignment. Only the other records go through the solver, one by one.
    shape = g_n[active] * (int(p_n.max(initial=0)) + 1) + p_n[active]
    for key in np.unique(shape).tolist():
        recs = active[shape == key]
        gn, pn = int(g_n[recs[0]]), int(p_n[recs[0]])
        idx = pstart[recs][:, None] + np.arange(gn * pn)[None, :]
        blocks = rank[idx].reshape(len(recs), gn, pn)
        if gn <= pn:
            best = blocks.argmax(axis=2)  # (k, G): first maximum, entities are canonically ordered
            val = np.take_along_axis(blocks, best[:, :, None], axis=2)[:, :, 0]
            rows = np.broadcast_to(np.arange(gn), best.shape)
            cols = best
        else:
            best = blocks.argmax(axis=1)  # (k, P)
            val = np.take_along_axis(blocks, best[:, None, :], axis=1)[:, 0, :]
            rows = best
            cols = np.broadcast_to(np.arange(pn), best.shape)
        distinct = (np.diff(np.sort(best, axis=1), axis=1) != 0).all(axis=1)
        evident = (val >= thr).all(axis=1) & distinct
        if evident.any():
            out_g.append((gold.start[recs[evident]][:, None] + rows[evident]).ravel())
            out_p.append((side.start[recs[evident]][:, None] + cols[evident]).ravel())
        if gn == 1 or pn == 1:
            # one candidate per entity on the smaller side: admissible best pairs are the matching
            ok = ~evident[:, None] & (val >= thr)
            if ok.any():
                out_g.append((gold.start[recs][:, None] + rows)[ok])
                out_p.append((side.start[recs][:, None] + cols)[ok])
            continue
        for k in np.flatnonzero(~evident).tolist():
            r = int(recs[k])
            pairs = max_matching(blocks[k], thr)
            if pairs:
                ij = np.asarray(pairs, dtype=np.int64)
                out_g.append(gold.start[r] + ij[:, 0])
                out_p.append(side.start[r] + ij[:, 1])
    return out_g, out_p


def _match(
    prep: _Prepared, side: _Side, cfg: EntitiesConfig, sem: Mapping[str, _SemanticTable],
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> _Matches:
    """Matched (gold, pred) entity indices and their similarity, one optimal assignment per record."""
    gold, n_rec = prep.gold, len(prep.order)
    pair_g, pair_p, pstart = pairs if pairs is not None else _pairs(gold, side, n_rec)
    sim, equal = _pair_similarity(prep, side, cfg, sem, pair_g, pair_p)
    thr = float(cfg.match_threshold)
    rank = _tie_break_rank(prep, side, sim, equal, pair_g, pair_p, thr)
    out_g, out_p = _assign(gold, side, rank, pstart, thr)
    if not out_g:
        z = np.zeros(0, dtype=np.int64)
        return z, z, []
    mg = np.concatenate(out_g).astype(np.int64)
    mp = np.concatenate(out_p).astype(np.int64)
    order = np.argsort(mg, kind="stable")
    mg, mp = mg[order], mp[order]
    # the reported similarity of a pair is the weighted field similarity, not the tie-break score
    r_of = gold.record[mg]
    p_n = np.diff(side.start)
    sims = sim[pstart[r_of] + (mg - gold.start[r_of]) * p_n[r_of] + (mp - side.start[r_of])]
    return mg, mp, sims.tolist()


def align_entities(
    gold: Sequence[Mapping[str, Any]],
    pred: Sequence[Any],
    *,
    config: EntitiesConfig | None = None,
    similarity: SimilarityBackend | None = None,
) -> list[tuple[int, int, float]]:
    """Optimal alignment of one record's entities: sorted `(gold index, pred index, similarity)`.

    `similarity` is the backend of SEMANTIC fields (default `LexicalSimilarity`).

    Examples:
        >>> gold = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]
        >>> pred = [{"sku": "B", "qty": 2}, {"sku": "A", "qty": 5}]
        >>> [(g, p) for g, p, _ in align_entities(gold, pred)]
        [(0, 1), (1, 0)]
    """
    cfg = config or EntitiesConfig()
    prep = _prepare({"r": list(gold)}, [ModelEntities(name="m", records={"r": list(pred)})], cfg, "gold")
    side = prep.sides[0]
    [(mg, mp, sims)], _ = _align_all(prep, cfg, _backend(similarity))
    return sorted((int(prep.gold.orig[g]), int(side.orig[p]), s) for g, p, s in zip(mg.tolist(), mp.tolist(), sims))


def _backend(similarity: SimilarityBackend | None) -> SimilarityBackend:
    if similarity is not None:
        return similarity
    from extracteval.core.similarity import LexicalSimilarity

    return LexicalSimilarity()  # offline, and labelled "lexical" in every report, never "semantic"
