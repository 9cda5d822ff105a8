"""Leaderboard ranking from run metrics: planted ties, fairness, significance."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from extracteval.core.bootstrap import bootstrap_macro_f1
from extracteval.core.run_ranking import RunSummary, paired_record_matrix
from extracteval.mlflow.tracking_leaderboard import rank_runs as build_leaderboard
from extracteval.errors import InputError


def run(name, f1, p, r, fields, truth="T1", config="C1"):
    metrics = {"overall/f1": f1, "overall/precision": p, "overall/recall": r}
    for field, (ff, fp, fr) in fields.items():
        metrics.update({f"field/{field}/f1": ff, f"field/{field}/precision": fp, f"field/{field}/recall": fr})
    return RunSummary(run_id=f"id-{name}", model=name, task="fields", truth_digest=truth, config_digest=config, metrics=metrics, run_name=name)


def six_runs():
    # field "u": universal tie (0 wins); field "s": shared by A and B (1/2 each); field "w": E and F tie at the
    # top (1/2 each); field "x": sole win for F
    same = (0.5, 0.5, 0.5)
    return [
        run("A", 0.80, 0.90, 0.70, {"u": same, "s": (0.9, 0.9, 0.9), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
        run("B", 0.80, 0.85, 0.75, {"u": same, "s": (0.9, 0.9, 0.9), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
        run("C", 0.70, 0.70, 0.80, {"u": same, "s": (0.2, 0.2, 0.2), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
        run("D", 0.70, 0.70, 0.70, {"u": same, "s": (0.2, 0.2, 0.2), "w": (0.1, 0.1, 0.1), "x": (0.1, 0.1, 0.1)}),
        run("F", 0.60, 0.60, 0.60, {"u": same, "s": (0.2, 0.2, 0.2), "w": (0.8, 0.8, 0.8), "x": (0.9, 0.9, 0.9)}),
        run("E", 0.60, 0.60, 0.60, {"u": same, "s": (0.2, 0.2, 0.2), "w": (0.8, 0.8, 0.8), "x": (0.1, 0.1, 0.1)}),
    ]


def test_planted_ties_give_the_documented_ranks():
    lb = build_leaderboard(six_runs())
    ranking = lb.to_dict()["ranking"]
    # A/B: equal F1, precision decides; C/D: equal F1 and precision, recall decides;
    # E/F: fully equal overall, F has more wins (1.5 vs 0.5)
    assert [e["model"] for e in ranking] == ["A", "B", "C", "D", "F", "E"]
    assert [e["rank"] for e in ranking] == [1, 2, 3, 4, 5, 6]
    winners = lb.groups[0].item_winners
    assert winners["u"].kind == "universal" and winners["u"].win_share == 0.0
    assert winners["s"].kind == "shared" and winners["s"].winners == ("A", "B") and winners["s"].win_share == 0.5
    wins = {e["model"]: e["field_wins"] for e in ranking}
    assert wins == {"A": 0.5, "B": 0.5, "C": 0.0, "D": 0.0, "F": 1.5, "E": 0.5}


def test_intervals_attached_after_ranking_equal_ranking_with_them():
    from extracteval.core.bootstrap import Interval
    from extracteval.core.run_ranking import with_intervals

    def iv(lo, hi):
        return Interval(estimate=(lo + hi) / 2, low=lo, high=hi, confidence=0.95, resamples=100)

    runs = six_runs() + [run("G", 0.5, 0.5, 0.5, {"u": (0.5, 0.5, 0.5)}, truth="T2")]
    intervals = {"id-A": iv(0.7, 0.9), "id-C": iv(0.6, 0.8), "id-G": iv(0.4, 0.6)}
    # adjacent ranks: A>B contains 0, B>C does not; (C, A) is not adjacent and is ignored
    pairs = {("id-A", "id-B"): iv(-0.01, 0.02), ("id-B", "id-C"): iv(0.05, 0.15), ("id-C", "id-A"): iv(0.1, 0.2)}
    direct = build_leaderboard(runs, group_by_truth=True, intervals=intervals, pair_intervals=pairs)
    attached = with_intervals(build_leaderboard(runs, group_by_truth=True), intervals, pairs)
    assert attached == direct
    assert attached.to_dict() == direct.to_dict()
    assert [c["significant"] for c in attached.groups[0].comparisons] == [False, True]


def test_fully_equal_runs_fall_back_to_name():
    same = {"f": (0.5, 0.5, 0.5)}
    lb = build_leaderboard([run("zeta", 0.5, 0.5, 0.5, same), run("alpha", 0.5, 0.5, 0.5, same)])
    assert [e.model for e in lb.groups[0].entries] == ["alpha", "zeta"]


def test_mixed_truth_is_refused_then_grouped():
    runs = six_runs()[:2] + [run("edited", 0.9, 0.9, 0.9, {"u": (1, 1, 1)}, truth="T2")]
    with pytest.raises(InputError, match="refusing to rank.*2 groups.*edited"):
        build_leaderboard(runs)
    lb = build_leaderboard(runs, group_by_truth=True)
    assert len(lb.groups) == 2
    assert [len(g.entries) for g in lb.groups] == [2, 1]


def test_mixed_config_is_refused():
    runs = [run("a", 0.5, 0.5, 0.5, {}), run("b", 0.5, 0.5, 0.5, {}, config="C2")]
    with pytest.raises(InputError, match="different ground truth or config"):
        build_leaderboard(runs)


def test_mixed_tasks_need_a_choice():
    r = run("a", 0.5, 0.5, 0.5, {})
    other = RunSummary(run_id="j", model="j", task="json", truth_digest="T", config_digest="C", metrics={"rqs/mean": 0.5})
    with pytest.raises(InputError, match="several tasks.*--task"):
        build_leaderboard([r, other])
    assert build_leaderboard([r, other], task="json").groups[0].entries[0].model == "j"


def test_same_model_name_twice_is_disambiguated_by_run_id_with_all_runs():
    a = run("m", 0.5, 0.5, 0.5, {})
    b = RunSummary(**{**a.__dict__, "run_id": "other-run"})
    names = [e.model for e in build_leaderboard([a, b], all_runs=True).groups[0].entries]
    assert len(set(names)) == 2 and all(n.startswith("m (") for n in names)


def _at(r: RunSummary, start: int, run_id: str | None = None, **metrics: float) -> RunSummary:
    return replace(r, start_time=start, run_id=run_id or r.run_id, metrics={**r.metrics, **metrics})


def test_latest_run_per_model_is_ranked_and_earlier_ones_are_superseded():
    # three rounds of the six planted runs, in shuffled order: the default ranks the last round
    # only, exactly as one round alone; earlier runs are listed, each with the run that replaced it
    rounds = [[_at(r, 1000 * k, f"{r.run_id}-{k}") for r in six_runs()] for k in (1, 2, 3)]
    # an older round scored worse: its numbers must not leak into the ranking
    rounds[0] = [_at(r, r.start_time, **{"overall/f1": 0.99}) for r in rounds[0]]
    rng = np.random.default_rng(0)
    mixed = [r for rnd in rounds for r in rnd]
    mixed = [mixed[i] for i in rng.permutation(len(mixed))]
    lb = build_leaderboard(mixed)
    one = build_leaderboard(rounds[2])
    assert [(e.model, e.rank, e.item_wins, e.run_id) for e in lb.groups[0].entries] == \
        [(e.model, e.rank, e.item_wins, e.run_id) for e in one.groups[0].entries]
    assert [e.run_id for e in lb.groups[0].entries] == [f"id-{m}-3" for m in "ABCDFE"]
    sup = lb.groups[0].superseded
    assert [(s.model, s.run_id, s.superseded_by) for s in sup] == \
        [(m, f"id-{m}-{k}", f"id-{m}-3") for m in "ABCDEF" for k in (2, 1)]
    doc = lb.to_dict()
    assert doc["run_selection"] == "latest run per model" and doc["n_ranked"] == 6 and doc["n_superseded"] == 12
    assert doc["superseded"][0] == {"run_id": "id-A-2", "model": "A", "run_name": "A", "start_time": 2000, "status": "superseded",
                                    "superseded_by": "id-A-3", "superseded_by_start_time": 3000}
    assert doc["groups"][0]["superseded"] == doc["superseded"]
    # --all-runs ranks all 18, names disambiguated by run id, the 0.99 round on top
    every = build_leaderboard(mixed, all_runs=True)
    assert len(every.groups[0].entries) == 18 and every.groups[0].superseded == ()
    assert every.to_dict()["run_selection"] == "all runs"
    assert all(e.model.endswith("-1)") for e in every.groups[0].entries[:6])


def test_latest_is_chosen_within_each_truth_config_group():
    old = _at(run("m", 0.9, 0.9, 0.9, {}), 1, "old")
    new_truth = _at(run("m", 0.5, 0.5, 0.5, {}, truth="T2"), 2, "new-truth")
    lb = build_leaderboard([old, new_truth], group_by_truth=True)
    assert [[e.run_id for e in g.entries] for g in lb.groups] == [["old"], ["new-truth"]]
    assert all(g.superseded == () for g in lb.groups)
    # equal start times: the later end time wins, then the larger run id — never the input order
    a = replace(_at(run("m", 0.5, 0.5, 0.5, {}), 5, "a"), end_time=9)
    b = replace(_at(run("m", 0.6, 0.6, 0.6, {}), 5, "b"), end_time=7)
    for order in ([a, b], [b, a]):
        assert build_leaderboard(order).groups[0].entries[0].run_id == "a"
    c = _at(run("m", 0.6, 0.6, 0.6, {}), 5, "c")
    d = _at(run("m", 0.6, 0.6, 0.6, {}), 5, "d")
    for order in ([c, d], [d, c]):
        assert build_leaderboard(order).groups[0].entries[0].run_id == "d"


def test_superseded_run_without_the_primary_metric_does_not_block_the_ranking():
    old = RunSummary(run_id="old", model="m", task="fields", truth_digest="T1", config_digest="C1", metrics={"micro/f1": 0.5}, start_time=1)
    new = _at(run("m", 0.5, 0.5, 0.5, {}), 2, "new")
    assert [e.run_id for e in build_leaderboard([old, new]).groups[0].entries] == ["new"]
    with pytest.raises(InputError, match="without the primary metric"):
        build_leaderboard([old, new], all_runs=True)


def test_refusal_names_the_ranked_runs_and_counts_the_superseded():
    runs = [_at(run("a", 0.5, 0.5, 0.5, {}), k, f"a{k}") for k in (1, 2, 3)] + [run("b", 0.5, 0.5, 0.5, {}, truth="T2")]
    with pytest.raises(InputError, match=r"truth T1… config C1…: a \(and 2 earlier run\(s\) of these models\); truth T2… config C1…: b"):
        build_leaderboard(runs)


def _per_record_frame(correct: np.ndarray) -> pd.DataFrame:
    n = len(correct)
    return pd.DataFrame(
        {"record_id": [f"r{i:03d}" for i in range(n)], "field": "f", "tp": correct.astype(int), "fp": (~correct).astype(int), "fn": (~correct).astype(int), "tn": 0}
    )


def test_significance_from_paired_per_record_results():
    rng = np.random.default_rng(5)
    base = rng.random(500) < 0.8
    noisy = base.copy()
    noisy[[3, 100, 400]] = ~noisy[[3, 100, 400]]
    better = base | (rng.random(500) < 0.7)
    frames = {"base": _per_record_frame(base), "noisy": _per_record_frame(noisy), "better": _per_record_frame(better)}
    ids, arrays = paired_record_matrix(frames)
    assert len(ids) == 500
    _, diffs = bootstrap_macro_f1(arrays, [("base", "noisy"), ("better", "base")], resamples=500, seed=0)
    assert diffs[("base", "noisy")].contains_zero
    assert not diffs[("better", "base")].contains_zero


def _reference_intervals(arrays, pairs, resamples, seed, zd, block=None, group=None):
    """The records bootstrap written plainly, one resample and one model at a time: for each
    group of resamples, the records in consecutive blocks; a resample's draws per block are a
    binomial of the draws it has left, then uniform records of the block; all four ratios per
    model; one np.percentile per model and pair."""
    from extracteval.core.counts import ratios

    models = list(arrays)
    n = len(next(iter(arrays.values())))
    block = block or n
    group = group or resamples
    rng = np.random.default_rng(seed)
    w = np.zeros((resamples, n), dtype=np.int64)  # multiplicity of each record in each resample
    for g0 in range(0, resamples, group):
        g = min(group, resamples - g0)
        left, left_records = np.full(g, n), n
        for b0 in range(0, n, block):
            s = min(block, n - b0)
            k = left if s == left_records else rng.binomial(left, s / left_records)
            left, left_records = left - k, left_records - s
            idx = rng.integers(0, s, size=int(k.sum()))
            pos = 0
            for r in range(g):
                for i in idx[pos : pos + k[r]]:
                    w[g0 + r, b0 + i] += 1
                pos += k[r]
    assert (w.sum(axis=1) == n).all()
    samples = {m: [] for m in models}
    for m in models:
        tot = np.einsum("bn,nfk->bfk", w, arrays[m]).astype(np.float64)
        f1 = ratios(*(tot[..., k] for k in range(4)), zero_division=zd)["f1"]
        valid = tot.sum(-1) > 0
        samples[m].extend(np.where(valid, f1, 0.0).sum(-1) / np.maximum(valid.sum(-1), 1))
    alpha = (1.0 - 0.95) / 2.0  # not exactly 0.025: the module's arithmetic, so the quantiles match
    q = [100 * alpha, 100 * (1 - alpha)]
    per = {m: tuple(np.percentile(np.array(samples[m]), q)) for m in models}
    diffs = {(a, c): tuple(np.percentile(np.array(samples[a]) - np.array(samples[c]), q)) for a, c in pairs}
    return per, diffs


@pytest.mark.parametrize("zd", [0.0, 1.0])
def test_vectorised_bootstrap_draws_the_same_intervals_as_one_model_at_a_time(zd):
    # a leaderboard bootstraps hundreds of models at once; the intervals must be exactly those
    # of the plain per-model computation (same seed, same draws, same arithmetic). Fields with
    # no classification and all-true-negative fields exercise both special cases of F1.
    rng = np.random.default_rng(3)
    arrays = {}
    for m in ("a", "b", "c", "d", "e"):
        counts = rng.integers(0, 3, size=(40, 6, 4))
        counts[:, 0] = 0  # never classified: left out of the macro average
        counts[:, 1, :3] = 0  # only true negatives: F1 1.0 by seed 000's rule
        counts[rng.random(40) < 0.3, 2, :3] = 0
        arrays[m] = counts
    pairs = [("a", "b"), ("c", "e")]
    per, diffs = bootstrap_macro_f1(arrays, pairs, resamples=150, seed=11, zero_division=zd)
    ref_per, ref_diffs = _reference_intervals(arrays, pairs, 150, 11, zd)
    assert {m: (iv.low, iv.high) for m, iv in per.items()} == ref_per
    assert {p: (iv.low, iv.high) for p, iv in diffs.items()} == ref_diffs


@pytest.mark.parametrize(("block", "group"), [(1, None), (3, None), (7, None), (7, 40), (40, 33)])
def test_records_streamed_in_blocks_and_groups_draw_the_reference_intervals(monkeypatch, block, group):
    # on many records the per-record path reads the records in blocks (one pass per group of
    # resamples) so memory does not grow with them; the draws are those of the plain reference
    import extracteval.core.bootstrap as bootstrap

    rng = np.random.default_rng(5)
    arrays = {m: rng.integers(0, 3, size=(40, 6, 4)) for m in ("a", "b", "c")}
    pairs = [("a", "b"), ("b", "c")]
    width = 3 * 6 * 4
    g = group or 150
    monkeypatch.setattr(bootstrap, "_TOTAL_ENTRIES", g * width)
    monkeypatch.setattr(bootstrap, "_DRAW_ENTRIES", max(block * g, block * width))
    want = _reference_intervals(arrays, pairs, 150, 7, 0.0, block=block, group=g)
    per, diffs = bootstrap.bootstrap_macro_f1(arrays, pairs, resamples=150, seed=7)
    assert ({m: (iv.low, iv.high) for m, iv in per.items()}, {p: (iv.low, iv.high) for p, iv in diffs.items()}) == want


def test_records_bootstrap_does_not_depend_on_how_the_rows_are_split(monkeypatch):
    # the chunked engines hand the rows back one spilled chunk at a time, of any sizes
    import extracteval.core.bootstrap as bootstrap

    monkeypatch.setattr(bootstrap, "_DRAW_ENTRIES", 5 * 120)  # blocks of 5 records
    rng = np.random.default_rng(9)
    rows = rng.integers(0, 4, size=(53, 2 * 3 * 4))
    args = (["a", "b"], (3, 4), None, None, [("a", "b")])
    kw = dict(n_records=53, resamples=120, seed=4)
    whole = bootstrap.bootstrap_macro_f1_patterns(*args, records=lambda: rows, **kw)
    for cuts in ([1, 2, 3, 50], [53], [10] * 5 + [3], [0, 4, 49, 0]):
        edges = np.cumsum([0, *cuts])
        parts = [rows[a:b] for a, b in zip(edges[:-1], edges[1:])]
        assert bootstrap.bootstrap_macro_f1_patterns(*args, records=lambda parts=parts: iter(parts), **kw) == whole
    with pytest.raises(ValueError, match="Expected 53 records"):
        bootstrap.bootstrap_macro_f1_patterns(*args, records=lambda: rows[:50], **kw)
    with pytest.raises(ValueError, match="Expected 53 records"):
        bootstrap.bootstrap_macro_f1_patterns(*args, records=lambda: np.concatenate([rows, rows[:2]]), **kw)


def test_paired_record_matrix_keeps_shared_ids_and_items_only():
    a = pd.DataFrame({"record_id": ["r2", "r1", "r3", "r1"], "field": ["f", "f", "f", "g"], "tp": [1, 0, 1, 1], "fp": [0, 1, 0, 0], "fn": [0, 1, 0, 0], "tn": [0, 0, 0, 0]})
    b = pd.DataFrame({"record_id": ["r1", "r2", "r9", "r1"], "field": ["f", "f", "f", "f"], "tp": [1, 1, 1, 1], "fp": [0, 0, 0, 0], "fn": [0, 0, 0, 0], "tn": [0, 0, 0, 0]})
    ids, arrays = paired_record_matrix({"a": a, "b": b})
    assert ids == ["r1", "r2"]  # r3 and r9 are not shared; field g is not shared
    assert arrays["a"].shape == (2, 1, 4)
    assert arrays["a"][:, 0].tolist() == [[0, 1, 1, 0], [1, 0, 0, 0]]
    assert arrays["b"][:, 0].tolist() == [[2, 0, 0, 0], [1, 0, 0, 0]]  # a repeated (record, field) is summed


def _task_run(task, name, primary, items, prefix):
    metrics = {primary: 0.8}
    for item, (f, p, r) in items.items():
        metrics.update({f"{prefix}{item}/f1": f, f"{prefix}{item}/precision": p, f"{prefix}{item}/recall": r})
    return RunSummary(run_id=f"id-{name}", model=name, task=task, truth_digest="T", config_digest="C", metrics=metrics, run_name=name)


def test_toolcalls_functions_are_won_on_argument_f1_without_the_catch_all_row():
    # the "(other functions)" row collects names no reference has: it is not an item to win
    a = _task_run("toolcalls", "A", "toolcalls/call_accuracy", {"get_weather": (0.9, 0.9, 0.9), "book": (0.5, 0.5, 0.5), "(other functions)": (0.7, 1, 1)}, "function/")
    b = _task_run("toolcalls", "B", "toolcalls/call_accuracy", {"get_weather": (0.8, 0.8, 0.8), "book": (0.5, 0.5, 0.5), "(other functions)": (0.1, 1, 1)}, "function/")
    doc = build_leaderboard([a, b]).to_dict()
    assert doc["item_label"] == "functions"
    assert set(doc["field_winners"]) == {"get_weather", "book"}
    assert doc["field_winners"]["get_weather"]["winners"] == ["A"] and doc["field_winners"]["book"]["kind"] == "universal"
    wins = {e["model"]: (e["field_wins"], e["items_scored"], e["wins_label"]) for e in doc["ranking"]}
    assert wins == {"A": (1.0, 2, "Won 1 of 2 functions"), "B": (0.0, 2, "Won 0 of 2 functions")}


def test_structured_paths_only_one_run_has_are_not_won():
    # B invents a path the truth does not have: as in `score structured`, only paths every run has count
    a = _task_run("structured", "A", "structured/field_f1", {"order_id": (1.0, 1.0, 1.0), "items[].sku": (0.6, 0.6, 0.6)}, "field/")
    b = _task_run("structured", "B", "structured/field_f1", {"order_id": (0.9, 0.9, 0.9), "items[].sku": (0.7, 0.7, 0.7), "discount": (0.4, 0.4, 0.4)}, "field/")
    doc = build_leaderboard([a, b]).to_dict()
    assert set(doc["field_winners"]) == {"order_id", "items[].sku"}
    wins = {e["model"]: (e["field_wins"], e["items_scored"], e["wins_label"]) for e in doc["ranking"]}
    assert wins == {"A": (1.0, 2, "Won 1 of 2 fields"), "B": (1.0, 2, "Won 1 of 2 fields")}
