"""Reference test: the vectorised `score_json` against seed 001's pseudo-code transcribed literally
(per record, per key, with the seed's own `is_null` extended by SPEC §2's null tokens), on
random records. EXACT uses the shared normaliser in both, FUZZY uses rapidfuzz in both."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from extracteval.tasks.json.semantics import JsonConfig, JsonPredictions, score_json
from extracteval.core.normalize import DEFAULT_NULL_TOKENS, Normalizer

KEYS = st.sampled_from(["name", "email", "age", "dob", "notes", "tier", "active"])
VALUES = st.one_of(
    st.none(), st.just(""), st.just(" "), st.just("n/a"), st.integers(0, 3), st.booleans(), st.floats(0, 3).map(lambda x: round(x, 1)),
    st.sampled_from(["Ann Lee", "Anne Lee", "ann lee", "Bob", "2024-01-05", "Jan 5, 2024", "a@b.co", "A@B.CO", "gold", "Gold "]),
    st.lists(st.integers(0, 2), max_size=2),
)
RECORDS = st.dictionaries(KEYS, VALUES, max_size=7)
STRATEGY = {"name": "FUZZY", "notes": "IGNORE", "tier": "EXACT"}


def is_null(value) -> bool:
    """Seed 001's is_null, with SPEC §2's additions (NaN, null tokens, empty list/dict)."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, str) and (value.strip() == "" or value.strip().casefold() in DEFAULT_NULL_TOKENS):
        return True
    if isinstance(value, (list, dict)) and len(value) == 0:
        return True
    return False


def seed_001(gt: dict, aio: dict, safety: float = 1.0) -> dict:
    norm = Normalizer()
    extra_keys = [k for k in aio if k not in gt]
    gt_null_aio_has_value = [k for k in gt if is_null(gt[k]) and k in aio and not is_null(aio[k])]
    gt_non_null = [k for k in gt if not is_null(gt[k])]
    aio_missing_or_null = [k for k in gt_non_null if k not in aio or is_null(aio[k])]
    both_non_null = [k for k in gt_non_null if k in aio and not is_null(aio[k])]
    completeness = 1.0 if not gt_non_null else len(both_non_null) / len(gt_non_null)
    total_distinct = len(set(gt) | set(aio))
    hallucination = 0.0 if total_distinct == 0 else (len(extra_keys) + len(gt_null_aio_has_value)) / total_distinct
    scores = []
    for k in both_non_null:
        g, a = norm.key(gt[k]), norm.key(aio[k])
        strategy = STRATEGY.get(k)
        if strategy is None:  # auto-detect from the truth value
            strategy = "EXACT" if g[0] != "t" or "@" in g else "SEMANTIC"
        if strategy == "IGNORE":
            continue
        if g == a:
            scores.append(1.0)
        elif strategy == "EXACT" or (g[0] not in "tj" and a[0] not in "tj"):
            scores.append(0.0)
        elif strategy == "FUZZY":
            scores.append(1.0 if fuzz.ratio(g[2:], a[2:]) / 100 >= 0.85 else 0.0)
        else:  # SEMANTIC with the test backend below: shared first three characters
            scores.append(1.0 if g[2:5] == a[2:5] else 0.0)
    accuracy = 1.0 if not scores else sum(scores) / len(scores)
    rqs = 0.45 * accuracy + 0.25 * completeness + 0.15 * safety - 0.15 * hallucination
    return {
        "buckets": {"extra_keys": extra_keys, "gt_null_aio_has_value": gt_null_aio_has_value, "gt_non_null": gt_non_null,
                    "aio_missing_or_null": aio_missing_or_null, "both_non_null": both_non_null},
        "completeness": completeness, "hallucination": hallucination, "accuracy": accuracy, "rqs": min(1.0, max(0.0, rqs)),
    }


class Prefix3:
    name = "prefix3"

    def similarity(self, a, b):
        import numpy as np

        return np.array([1.0 if x[:3] == y[:3] else 0.0 for x, y in zip(a, b)])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(RECORDS, RECORDS, st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=6))
def test_vectorised_equals_seed_pseudocode(rows) -> None:
    truth = {f"r{i}": gt for i, (gt, _, _) in enumerate(rows)}
    preds = {f"r{i}": aio for i, (_, aio, _) in enumerate(rows)}
    safety = {f"r{i}": s for i, (_, _, s) in enumerate(rows)}
    res = score_json(truth, [JsonPredictions(name="m", records=preds, safety=safety)], config=JsonConfig(strategies=STRATEGY),
                     similarity=Prefix3())
    m = res.models["m"]
    expected = {rid: seed_001(truth[rid], preds[rid], safety[rid]) for rid in truth}
    for rid, e in expected.items():
        got = m.record(rid)
        for b, keys in e["buckets"].items():
            assert sorted(got.buckets[b]) == sorted(keys), (rid, b)
        assert got.completeness == e["completeness"]
        assert got.hallucination == e["hallucination"]
        assert got.accuracy == e["accuracy"]
        assert abs(got.rqs - e["rqs"]) < 1e-12
    for b in e["buckets"]:
        assert m.buckets[b] == sum(len(e["buckets"][b]) for e in expected.values())
    assert abs(m.rqs["mean"] - sum(e["rqs"] for e in expected.values()) / len(expected)) < 1e-12
