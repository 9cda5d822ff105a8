"""Benchmark of the `entities` task: 20k records × 10 entities × 6 features.

Measured in the same run, on the same data:

- extracteval's `score_entities` (flat pair arrays, fuzzy over distinct text pairs, one optimal
  assignment per record, both views) on all 20k records, and on the subset the naive loop runs;
- a naive pairwise Python loop doing the same work on that subset: normalise each entity's
  fields once, per record score every gold × predicted pair field by field (`fuzz.ratio` for the
  FUZZY description), the same optimal assignment with the same tie-break, then per feature the
  one-vs-rest label counts of the matched and strict views, macro precision/recall/F1/specificity,
  micro accuracy and row accuracy. Its results are checked against extracteval's.

Each timing is the median of REPEATS runs, wall clock and process CPU time (the machine is
shared, so wall time includes waiting for a core; CPU time does not). Target: ≥ 5,000 records/s.
"""

from __future__ import annotations

import math
import random
import resource
import statistics
import time
from collections import defaultdict

N_RECORDS = 20_000
N_ENTITIES = 10
NAIVE_RECORDS = 2_000
REPEATS = 5
FIELDS = ["amount", "category", "date", "description", "quantity", "unit_price"]
WORDS = ["steel", "bolt", "nut", "washer", "hex", "m8", "m10", "zinc", "copper", "pipe", "elbow", "cable", "tie",
         "drill", "bit", "glove", "vest", "panel", "led", "cord", "paper", "toner", "chair", "stand"]


def make_data(n: int, seed: int = 0):
    rng = random.Random(seed)
    vocab = [" ".join(rng.sample(WORDS, 3)) for _ in range(400)]
    truth, pred = {}, {}
    for i in range(n):
        gold = []
        for _ in range(N_ENTITIES):
            qty = rng.choice([1, 2, 5, 10, 20, 100])
            price = rng.choice(["0.18", "1.15", "4.75", "17.40", "38.00", "129.00"])
            gold.append({
                "description": rng.choice(vocab), "quantity": qty, "unit_price": price,
                "amount": f"{float(price) * qty:.2f}", "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                "category": rng.choice(["parts", "tools", "labour", "office", "it"]),
            })
        p = []
        for e in gold:
            r = rng.random()
            if r < 0.08:
                continue  # missed
            e = dict(e)
            if r < 0.2:
                e["description"] = e["description"].replace("e", "a", 1)  # OCR-ish typo
            if r > 0.9:
                e["quantity"] = str(e["quantity"] * 10)
            if r > 0.95:
                e["unit_price"], e["amount"] = e["amount"], e["unit_price"]
            p.append(e)
        if rng.random() < 0.2:
            p.append({"description": "subtotal", "quantity": 1, "unit_price": "99.00", "amount": "99.00"})
        rng.shuffle(p)
        truth[f"r{i}"] = gold
        pred[f"r{i}"] = p
    return truth, pred


def naive(truth, pred, cfg) -> dict:
    """The whole task as a pairwise Python loop: alignment, both views, per-feature metrics."""
    import numpy as np
    from rapidfuzz import fuzz

    from extracteval.core.feature_views import LabelEncoder
    from extracteval.core.matching import max_matching

    enc = LabelEncoder("auto", cfg.normalization)
    missing = enc.key(None)
    thr, eps = cfg.match_threshold, 1e-6
    fuzzy = {f for f in FIELDS if cfg.strategy_for(f).value == "FUZZY"}
    # view → feature → label → [tp, fp, fn]
    counts = {v: {f: defaultdict(lambda: [0, 0, 0]) for f in FIELDS} for v in ("matched", "strict")}
    matched = correct_rows = missed = extra = 0
    for rid in sorted(set(truth) | set(pred)):
        gold = [[enc.key(e.get(f)) for f in FIELDS] for e in truth.get(rid, [])]
        preds = [[enc.key(e.get(f)) for f in FIELDS] for e in pred.get(rid, [])]
        pairs = []
        if gold and preds:
            s = np.zeros((len(gold), len(preds)))
            for i, g in enumerate(gold):
                for j, p in enumerate(preds):
                    num = den = agree = 0.0
                    for k, f in enumerate(FIELDS):
                        a, b = g[k], p[k]
                        agree += a == b
                        if a == missing and b == missing:
                            continue
                        if a == missing:
                            v = 0.0
                        elif f in fuzzy and a != b and a[0] == b[0] == "t":
                            v = fuzz.ratio(a[2:], b[2:]) / 100.0
                        else:
                            v = float(a == b)
                        num += v
                        den += 1.0
                    sim = num / den if den else 0.0
                    # the task's tie-break: among equal similarities, the pair agreeing on more fields
                    s[i, j] = thr + (1 - thr) * ((1 - eps) * (sim - thr) / (1 - thr) + eps * agree / len(FIELDS)) if sim >= thr else sim
            pairs = max_matching(s, thr)
        used_g, used_p = {i for i, _ in pairs}, {j for _, j in pairs}
        for i, j in pairs:
            ok = True
            for k, f in enumerate(FIELDS):
                a, b = gold[i][k], preds[j][k]
                if f in fuzzy and a != b and a[0] == b[0] == "t" and fuzz.ratio(a[2:], b[2:]) / 100.0 >= cfg.fuzzy_threshold:
                    b = a
                ok &= a == b
                for view in ("matched", "strict"):
                    c = counts[view][f]
                    if a == b:
                        c[a][0] += 1
                    else:
                        c[a][2] += 1
                        c[b][1] += 1
            correct_rows += ok
        for i in set(range(len(gold))) - used_g:
            for k, f in enumerate(FIELDS):
                counts["strict"][f][gold[i][k]][2] += 1
        for j in set(range(len(preds))) - used_p:
            for k, f in enumerate(FIELDS):
                counts["strict"][f][preds[j][k]][1] += 1
        matched += len(pairs)
        missed += len(gold) - len(pairs)
        extra += len(preds) - len(pairs)
    out = {"matched_count": matched, "missed_gold_count": missed, "extra_predictions_count": extra}
    rows = {"matched": matched, "strict": matched + missed + extra}
    for view in ("matched", "strict"):
        n = rows[view]
        f1s = []
        for f in FIELDS:
            per = []
            for tp, fp, fn in counts[view][f].values():
                tn = n - tp - fp - fn
                per.append((tp / (tp + fp) if tp + fp else 0.0, tp / (tp + fn) if tp + fn else 0.0,
                            2 * tp / (2 * tp + fp + fn), tn / (tn + fp) if tn + fp else 0.0))
            f1s.append(sum(x[2] for x in per) / len(per))
            out[f"{view}/{f}/precision"] = sum(x[0] for x in per) / len(per)
            out[f"{view}/{f}/specificity"] = sum(x[3] for x in per) / len(per)
            out[f"{view}/{f}/f1"] = f1s[-1]
        out[f"{view}/macro_f1"] = sum(f1s) / len(f1s)
        out[f"{view}/row_accuracy"] = correct_rows / n if n else 0.0
    return out


def as_naive(result) -> dict:
    """extracteval's result in the naive loop's keys, to check that both did the same work."""
    m = result.models["m"]
    pres = m.presence.to_dict()
    out = {k: pres[k] for k in ("matched_count", "missed_gold_count", "extra_predictions_count")}
    for view in ("matched", "strict"):
        vm = getattr(m, view)
        for f in FIELDS:
            fm = vm.features[f]
            out[f"{view}/{f}/precision"] = fm.precision
            out[f"{view}/{f}/specificity"] = fm.specificity
            out[f"{view}/{f}/f1"] = fm.f1
        out[f"{view}/macro_f1"] = vm.totals["f1"]
        out[f"{view}/row_accuracy"] = vm.row_accuracy
    return out


def timed(fn, repeats: int = REPEATS):
    """(result, median wall s, median CPU s) over `repeats` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
    return out, statistics.median(walls), statistics.median(cpus)


def main() -> None:
    from extracteval.tasks.entities.semantics import EntitiesConfig, ModelEntities, score_entities

    truth, pred = make_data(N_RECORDS)
    cfg = EntitiesConfig(strategies={"description": "FUZZY"})
    # warm-up on a few records: scipy's import (~0.5 s, once per process) is not what this measures
    warm = dict(list(truth.items())[:50])
    score_entities(warm, [ModelEntities(name="m", records={k: pred[k] for k in warm})], config=cfg)

    def rate(n: int, s: float) -> str:
        return f"{n / s:,.0f}"

    r, wall, cpu = timed(lambda: score_entities(truth, [ModelEntities(name="m", records=pred)], config=cfg))
    s = r.models["m"].presence.to_dict()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"extracteval score_entities, {N_RECORDS:,} records × {N_ENTITIES} entities × {len(FIELDS)} features "
          f"(median of {REPEATS}): wall {wall:.2f} s = {rate(N_RECORDS, wall)} records/s, "
          f"CPU {cpu:.2f} s = {rate(N_RECORDS, cpu)} records/s (target ≥ 5,000) · peak RSS {peak_mb:,.0f} MB")
    print(f"  matched {s['matched_count']:,} of {s['gold_count']:,} gold, {s['extra_predictions_count']:,} extra")

    sub_t = dict(list(truth.items())[:NAIVE_RECORDS])
    sub_p = {k: pred[k] for k in sub_t}
    rs, s_wall, s_cpu = timed(lambda: score_entities(sub_t, [ModelEntities(name="m", records=sub_p)], config=cfg))
    nv, n_wall, n_cpu = timed(lambda: naive(sub_t, sub_p, cfg))
    mine = as_naive(rs)
    diff = [k for k in nv if not math.isclose(nv[k], mine[k], rel_tol=1e-9, abs_tol=1e-12)]
    print(f"same {NAIVE_RECORDS:,}-record subset (first records), median of {REPEATS}:")
    print(f"  naive pairwise Python loop (alignment + both views' per-feature metrics): wall {n_wall:.2f} s = "
          f"{rate(NAIVE_RECORDS, n_wall)} records/s, CPU {n_cpu:.2f} s = {rate(NAIVE_RECORDS, n_cpu)} records/s")
    print(f"  extracteval score_entities:                                           wall {s_wall:.2f} s = "
          f"{rate(NAIVE_RECORDS, s_wall)} records/s, CPU {s_cpu:.2f} s = {rate(NAIVE_RECORDS, s_cpu)} records/s")
    print(f"  speed-up on the subset: {n_wall / s_wall:.1f}× wall, {n_cpu / s_cpu:.1f}× CPU; "
          f"full run vs naive subset rate: {(N_RECORDS / wall) / (NAIVE_RECORDS / n_wall):.1f}× wall")
    print(f"  same results ({len(nv)} figures: matched/missed/extra counts, per-feature macro P/F1/specificity and "
          f"row accuracy of both views): {'yes' if not diff else 'NO, differ: ' + ', '.join(diff[:8])}")


if __name__ == "__main__":
    main()
