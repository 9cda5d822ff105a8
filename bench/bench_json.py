"""Benchmark of the `json` task: 100k records of ~20 leaf keys, depth ≤ 3, EXACT + FUZZY strategies.

Compares `score_json` (flatten once, canonicalise each distinct value once, vectorised buckets,
FUZZY once per distinct pair) with a naive per-record Python implementation of the json rules (recursive
flatten, normalise every value where it is compared, rapidfuzz on every pair), measured in the
same run on the same data; the naive one runs on a slice (default 10k records) and its rate is
reported as records/s. Both must agree on every per-record RQS of that slice. Each side is timed
three times in turns on fresh data, and keeps its fastest call (see `_timing.py`).

    python bench/bench_json.py [N_RECORDS] [N_NAIVE]
"""

from __future__ import annotations

import random
import sys
from typing import Any

import numpy as np
from _timing import best_of, peak_traced_mib, spread

from extracteval.tasks.json.semantics import JsonConfig, JsonPredictions, score_json
from extracteval.core.normalize import Normalizer

FIRST = ["Maria", "Kenji", "Aisha", "Lars", "Priya", "Tom", "Chloe", "Mateo", "Olga", "Samuel", "Yuki", "Fatima", "Liam", "Ingrid"]
LAST = ["Gonzalez", "Watanabe", "Bello", "Eriksen", "Raman", "ONeill", "Dubois", "Rossi", "Petrova", "Okafor", "Tanaka", "Haddad"]
STREETS = ["Main Street", "Oak Avenue", "Harbour Road", "Kings Lane", "Elm Street", "Station Road", "Maple Drive"]
CITIES = ["Springfield", "Toronto", "Manchester", "Lyon", "Osaka", "Austin", "Bergen", "Milan"]
STRATEGIES = {
    "name": "FUZZY", "company": "FUZZY", "address.street": "FUZZY", "address.city": "EXACT", "status": "EXACT",
    "tier": "EXACT", "orders[*].sku": "EXACT", "note": "FUZZY", "address.geo.region": "EXACT", "source": "EXACT",
}


def make_data(n: int, seed: int = 5) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = random.Random(seed)
    truth: dict[str, Any] = {}
    pred: dict[str, Any] = {}
    for i in range(n):
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        t = {
            "name": name,
            "email": f"user{rng.randrange(5000)}@example.com",
            "age": rng.randrange(18, 90),
            "dob": f"19{rng.randrange(50, 99)}-0{rng.randrange(1, 9)}-1{rng.randrange(0, 9)}",
            "active": rng.random() < 0.8,
            "status": rng.choice(["new", "active", "churned"]),
            "tier": rng.choice(["gold", "silver", "bronze"]),
            "company": rng.choice(["Acme Inc.", "Bolt LLC", "Cobalt Ltd.", None]),
            "score": round(rng.uniform(0, 100), 1),
            "note": rng.choice(["call back", "vip", None, "prefers email"]),
            "source": rng.choice(["web", "store", "phone"]),
            "address": {
                "street": f"{rng.randrange(1, 300)} {rng.choice(STREETS)}",
                "city": rng.choice(CITIES),
                "zip": str(rng.randrange(10000, 99999)),
                "geo": {"lat": round(rng.uniform(-60, 60), 2), "region": rng.choice(["north", "south"])},
            },
            "orders": [{"sku": f"SKU{rng.randrange(300)}", "qty": rng.randrange(1, 5)} for _ in range(rng.randrange(1, 3))],
        }
        p = {**t, "address": {**t["address"], "geo": dict(t["address"]["geo"])}, "orders": [dict(o) for o in t["orders"]]}
        r = rng.random()
        if r < 0.15:
            p["name"] = name[:-1] + rng.choice("aeiouy")  # near miss
        if rng.random() < 0.1:
            p["address"]["street"] = p["address"]["street"].replace("Street", "St")
        if rng.random() < 0.1:
            p["dob"] = "January 5, 1970"
        if rng.random() < 0.1:
            p["age"] = str(t["age"])
        if rng.random() < 0.08:
            p["segment"] = "retail"  # hallucinated key
        if rng.random() < 0.08:
            p["company"] = None
        if rng.random() < 0.05:
            p["orders"][0]["qty"] += 1
        truth[f"r{i:06d}"] = t
        pred[f"r{i:06d}"] = p
    return truth, pred


# --- naive per-record implementation of the json rules -------------------------------------------


def naive_flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            out.update(naive_flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            out.update(naive_flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = obj
    return out


def naive_score(gt: dict[str, Any], aio: dict[str, Any], strategies: dict[str, str]) -> float:
    """The json rules written the obvious way: per record, per key, normalise and compare."""
    import re

    from rapidfuzz import fuzz

    norm = Normalizer()  # no cache shared across records: every value is normalised where it is used
    g, a = naive_flatten(gt), naive_flatten(aio)
    keys = set(g) | set(a)
    extra = gt_null_has = gt_non_null = both = 0
    acc_total = acc_n = 0
    for k in keys:
        g_null = k not in g or norm._compute(g[k]) is None if not isinstance(g.get(k), (list, dict)) else not g.get(k)
        a_null = k not in a or norm._compute(a[k]) is None if not isinstance(a.get(k), (list, dict)) else not a.get(k)
        if k not in g:
            extra += 1
            continue
        if g_null:
            if k in a and not a_null:
                gt_null_has += 1
            continue
        gt_non_null += 1
        if a_null:
            continue
        both += 1
        pattern = re.sub(r"\[\d+\]", "[*]", k)
        gk, ak = norm._compute(g[k]), norm._compute(a[k])
        strategy = strategies.get(k) or strategies.get(pattern)
        if strategy is None:
            strategy = "EXACT" if gk[0] != "t" or re.match(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", gk[2:]) else "SEMANTIC"
        if strategy == "IGNORE":
            continue
        acc_n += 1
        if gk == ak:
            acc_total += 1
        elif strategy == "FUZZY" and (gk[0] in "tj" or ak[0] in "tj"):
            acc_total += fuzz.ratio(gk[2:], ak[2:]) / 100.0 >= 0.85
    completeness = both / gt_non_null if gt_non_null else 1.0
    halluc = (extra + gt_null_has) / len(keys) if keys else 0.0
    accuracy = acc_total / acc_n if acc_n else 1.0
    return round(min(1.0, max(0.0, 0.45 * accuracy + 0.25 * completeness + 0.15 * 1.0 - 0.15 * halluc)), 12)


def main() -> None:
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()]  # bench/run.py passes task names: ignore them
    n = numbers[0] if numbers else 100_000
    n_naive = min(n, numbers[1] if len(numbers) > 1 else 10_000)
    truth, pred = make_data(min(n, 1000))
    leaves = sum(len(naive_flatten(t)) for t in truth.values()) / len(truth)
    cfg = JsonConfig(flatten=True, strategies=STRATEGIES)
    print(f"json: {n:,} records, {leaves:.1f} leaf keys per record on average, depth ≤ 3, strategies EXACT + FUZZY")

    def fast_inputs() -> tuple[Any, ...]:
        truth, pred = make_data(n)
        return truth, [JsonPredictions(name="m", records=pred)]

    def naive_inputs() -> tuple[Any, ...]:
        truth, pred = make_data(n_naive)  # the first n_naive records of make_data(n): the same generator, in order
        return truth, pred

    def naive_all(truth: dict[str, Any], pred: dict[str, Any]) -> list[float]:
        return [naive_score(truth[i], pred[i], STRATEGIES) for i in sorted(truth)]

    fast, slow = best_of([(fast_inputs, lambda t, p: score_json(t, p, config=cfg)), (naive_inputs, naive_all)])
    m = fast.result.models["m"]
    print(f"  extracteval score_json : wall {fast.wall:6.2f} s = {n / fast.wall:8,.0f} records/s; "
          f"CPU {fast.cpu:6.2f} s = {n / fast.cpu:8,.0f} records/s  (CPU s per call {spread(fast)})")
    print(f"  naive per-record Python: wall {slow.wall:6.2f} s = {n_naive / slow.wall:8,.0f} records/s; "
          f"CPU {slow.cpu:6.2f} s = {n_naive / slow.cpu:8,.0f} records/s  (first {n_naive:,} records; CPU s per call {spread(slow)})")
    naive = slow.result
    ids = [f"r{i:06d}" for i in range(n_naive)]
    fast_rqs = m.records_frame().set_index("record_id")["rqs"].loc[ids].to_numpy()
    agree = bool(np.array_equal(fast_rqs, np.asarray(naive)))
    print(f"  per-record RQS identical to the naive implementation on its {n_naive:,} records: {agree}; mean RQS {m.rqs['mean']:.4f}")
    ratio = (n / fast.cpu) / (n_naive / slow.cpu)
    print(f"  speed-up vs naive: {ratio:.1f}x by CPU time, {(n / fast.wall) / (n_naive / slow.wall):.1f}x by wall time   "
          f"(target ≥ 15x naive by CPU time: {'met' if ratio >= 15 else 'NOT met'})")
    del fast
    truth, preds = fast_inputs()
    print(f"  peak traced memory of score_json on the {n:,} records: {peak_traced_mib(lambda: score_json(truth, preds, config=cfg)):.1f} MiB")


if __name__ == "__main__":
    main()
