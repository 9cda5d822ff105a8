"""The chunked `entities` engine equals the in-memory one: the same document, byte for byte, for
any chunk size (1 included) and with worker processes, though display labels, the "missing in
every gold entity" check, the SEMANTIC pair counts and the mean similarity span the data set."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.tasks.entities.chunked import EntitiesTask
from extracteval.tasks.entities.semantics import EntitiesConfig, ModelEntities, gold_fields_of, plan_entities, score_entities
from extracteval.tasks.entities.ledger import _exact_sum
from extracteval.core.similarity import LexicalSimilarity
from extracteval.errors import InputError
from extracteval.tasks.entities.chunks import EntitiesChunk

VALUE = st.sampled_from(["Bolt M8", "bolt m8", "Bolts M8", "Nut", "nut ", "Washer", "", None, "n/a", 1, 2, "2", True, "true", 1.5])
ENTITY = st.dictionaries(st.sampled_from(["sku", "desc", "qty"]), VALUE, max_size=3)
PRED_ENTITY = st.one_of(ENTITY, ENTITY.map(lambda e: {**e, "vat": 1}), st.sampled_from(["oops", 3, None, ["x"]]))


@st.composite
def datasets(draw):
    ids = sorted({f"r{draw(st.integers(0, 30))}" for _ in range(draw(st.integers(1, 12)))})
    truth = {i: draw(st.lists(ENTITY, max_size=4)) for i in ids}
    if not any(truth.values()):
        truth[ids[0]] = [{"sku": "Bolt M8", "qty": 1}]
    preds = {}
    for m in draw(st.sampled_from([["m"], ["b", "a"]])):
        recs = {}
        for i in ids:
            if draw(st.integers(0, 4)):
                gold = truth[i]
                recs[i] = [draw(st.sampled_from([e, {**e, "qty": 2}])) if draw(st.booleans()) else draw(PRED_ENTITY) for e in gold]
                recs[i] += draw(st.lists(PRED_ENTITY, max_size=1))
                recs[i] = draw(st.permutations(recs[i]))
        for extra in draw(st.lists(st.sampled_from(["a0", "q1", "r99", "z1"]), max_size=2, unique=True)):
            recs[extra] = draw(st.lists(PRED_ENTITY, max_size=2))
        preds[m] = recs
    strategies = {f: draw(st.sampled_from(["EXACT", "FUZZY", "SEMANTIC", "IGNORE"])) for f in ("desc", "sku") if draw(st.booleans())}
    fields = set(gold_fields_of([e for es in truth.values() for e in es]))
    strategies = {f: s for f, s in strategies.items() if f in fields}
    # `category` reads True and "true" as two labels with the same text ("b:true" and "t:true" displayed)
    types = {f: draw(st.sampled_from(["auto", "category", "number"])) for f in sorted(fields) if draw(st.booleans())}
    cfg = EntitiesConfig(strategies=strategies, types=types, match_threshold=draw(st.sampled_from([0.0, 0.5, 1.0])),
                         max_examples=draw(st.sampled_from([1, 5])), zero_division=draw(st.sampled_from([0.0, 1.0])))
    return truth, preds, cfg


def split(truth, preds, size):
    """As `tasks.entities.chunks` does: ids in byte order, `size` truth records per chunk, predicted
    records the truth lacks in the chunk open when they are met."""
    all_ids = sorted(set(truth) | {i for p in preds.values() for i in p})
    chunk_t, chunk_p = {}, {m: {} for m in preds}
    for i in all_ids:
        if i in truth:
            chunk_t[i] = truth[i]
        for m, p in preds.items():
            if i in p:
                chunk_p[m][i] = p[i]
        if len(chunk_t) >= size:
            yield EntitiesChunk(truth=chunk_t, predictions=chunk_p)
            chunk_t, chunk_p = {}, {m: {} for m in preds}
    if chunk_t or any(chunk_p.values()):
        yield EntitiesChunk(truth=chunk_t, predictions=chunk_p)


def outcome(fn):
    try:
        return json.dumps(fn().to_dict())
    except InputError as e:
        return f"InputError: {e}"


def chunked(truth, preds, cfg, size, workers=1):
    plan = plan_entities(gold_fields_of([e for es in truth.values() for e in es]), cfg, "t.jsonl")
    task = EntitiesTask(config=cfg, plan=plan, truth_source="t.jsonl", sources={m: f"{m}.jsonl" for m in preds}, similarity=LexicalSimilarity())
    return run_chunks(task, split(truth, preds, size), workers=workers)[0]


def in_memory(truth, preds, cfg):
    models = [ModelEntities(name=m, records=r, source=f"{m}.jsonl") for m, r in preds.items()]
    return score_entities(truth, models, config=cfg, truth_source="t.jsonl", similarity=LexicalSimilarity())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]))
def test_chunked_document_is_byte_identical(data, size):
    truth, preds, cfg = data
    assert outcome(lambda: chunked(truth, preds, cfg, size)) == outcome(lambda: in_memory(truth, preds, cfg))


def test_field_missing_in_every_gold_entity_is_caught_across_chunks():
    truth = {"r1": [{"sku": "A", "qty": None}], "r2": [{"sku": "B", "qty": "n/a"}]}
    preds = {"m": truth}
    with pytest.raises(InputError, match="feature 'qty' is missing in every ground-truth entity"):
        chunked(truth, preds, EntitiesConfig(), 1)
    truth["r2"] = [{"sku": "B", "qty": 3}]  # present in one chunk only: scored
    assert chunked(truth, preds, EntitiesConfig(), 1).features == ("qty", "sku")


def test_semantic_pairs_scored_count_distinct_pairs_of_the_whole_input():
    # the same (gold, predicted) pair in two chunks is one distinct pair, as in memory
    truth = {"r1": [{"desc": "Bolt M8"}], "r2": [{"desc": "Bolt M8"}]}
    preds = {"m": {"r1": [{"desc": "bolts M8"}], "r2": [{"desc": "bolts M8"}]}}
    cfg = EntitiesConfig(strategies={"desc": "SEMANTIC"}, match_threshold=0.0)
    got = chunked(truth, preds, cfg, 1).to_dict()["config"]["similarity"]["semantic"]
    assert got["pairs_scored"] == {"desc": 1}
    assert got == in_memory(truth, preds, cfg).to_dict()["config"]["similarity"]["semantic"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=60), st.integers(0, 60))
def test_exact_sum_of_parts_is_the_sum_of_the_whole(xs, cut):
    a = np.asarray(xs, dtype=np.float64)
    whole = _exact_sum(a)
    assert _exact_sum(a[:cut]) + _exact_sum(a[cut:]) == whole
    assert Fraction(whole, 2**1130) == sum((Fraction(x) for x in xs), Fraction(0))


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_cli_chunked_with_workers_equals_in_memory(cli, tmp_path):
    rng = np.random.default_rng(3)
    items = ["Bolt M8", "Nut M8", "Washer", "Paint white 10 L", "Pallet delivery"]
    ids = sorted(f"INV-{i:03d}" for i in range(120))
    truth = [{"id": i, "entities": [{"description": str(rng.choice(items)), "quantity": int(rng.integers(1, 5)), "amount": f"{rng.integers(1, 99)}.00"}
                                    for _ in range(int(rng.integers(0, 4)))]} for i in ids]
    a = [{"id": r["id"], "entities": [{**e, "quantity": e["quantity"] + int(rng.integers(0, 2))} for e in r["entities"][::-1]]}
         for r in truth if rng.random() < 0.9] + [{"id": "ZZZ-1", "entities": [{"description": "VAT"}]}]
    b = [{"id": r["id"], "entities": [{**e, "description": e["description"].lower() + "s"} for e in r["entities"]] + ["oops"]} for r in truth]
    for name, rows in (("t", truth), ("a", a), ("b", b)):
        _write(tmp_path / f"{name}.jsonl", rows)
    (tmp_path / "s.yaml").write_text("description: SEMANTIC\n")
    args = ["score", "entities", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"a={tmp_path / 'a.jsonl'}",
            "--predictions", f"b={tmp_path / 'b.jsonl'}", "--strategies", str(tmp_path / "s.yaml"), "--json"]
    want = cli(*args)
    assert want.code == 0, want.err
    for extra in (["--chunk-size", "1"], ["--chunk-size", "9", "--workers", "2", "--output", str(tmp_path / "out")]):
        got = cli(*args, *extra)
        assert got.code == 0, got.err
        assert got.out == want.out
    import pandas as pd

    rec = pd.read_parquet(tmp_path / "out" / "records.parquet")
    assert len(rec) == 2 * (len(ids) + 1) and json.loads((tmp_path / "out" / "result.json").read_text()) == json.loads(want.out)


def test_cli_refuses_what_cannot_be_streamed(cli, tmp_path, pyspark_or_not):
    _write(tmp_path / "t.jsonl", [{"id": "b", "entities": [{"x": 1}]}, {"id": "a", "entities": [{"x": 1}]}])
    _write(tmp_path / "p.jsonl", [{"id": "a", "entities": []}])
    (tmp_path / "p.json").write_text('[{"id": "a", "entities": []}]')
    base = ["score", "entities", "--truth", str(tmp_path / "t.jsonl")]
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.jsonl'}", "--chunk-size", "5")
    assert r.code == 2 and "t.jsonl: line 2: record id 'a' is out of order (it follows 'b' at line 1)" in r.err and "Traceback" not in r.err, r.err
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.json'}", "--chunk-size", "5")
    assert r.code == 2 and "drop --chunk-size" in r.err, r.err
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.jsonl'}", "--chunk-size", "5", "--similarity", "llm_judge")
    assert r.code == 2 and "--similarity llm_judge with --chunk-size" in r.err, r.err
    r = cli(*base, "--predictions", f"p={tmp_path / 'p.jsonl'}", "--engine", "spark", "--chunk-size", "5")
    assert r.code == 2 and "--chunk-size/--workers are for the local engine" in r.err, r.err
