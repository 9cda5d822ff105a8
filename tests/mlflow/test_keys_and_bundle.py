"""Metric-key sanitising, digests, bundle contents and the adapter registry (no tracking store)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.mlflow.bundle import config_digest, load_bundle, truth_digest
from extracteval.mlflow.keys import MAX_KEY_LENGTH, KeyMap, is_valid_key, sanitize_segment


@given(st.text(max_size=400))
def test_any_name_gives_a_valid_key(name):
    km = KeyMap.build([name])
    for suffix in ("tp", "exact_match_rate", "ci_high"):
        k = km.key("field", name, suffix)
        assert is_valid_key(k) and len(k) <= MAX_KEY_LENGTH
        assert km.originals[k] == f"field/{name}/{suffix}"


@settings(max_examples=60)
@given(st.lists(st.text(alphabet=st.sampled_from("ab/<> .é_-"), max_size=6), max_size=12, unique=True), st.randoms())
def test_keymap_is_one_to_one_and_order_independent(names, rnd):
    km = KeyMap.build(names)
    assert len({km.segment(n) for n in names}) == len(names)
    shuffled = list(names)
    rnd.shuffle(shuffled)
    assert KeyMap.build(shuffled).segments == km.segments


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=1000), min_size=1, max_size=6, unique=True)
       | st.lists(st.text(alphabet=st.sampled_from("aé(/)~ "), min_size=150, max_size=400), min_size=1, max_size=6, unique=True))
def test_names_of_any_length_and_script_give_keys_mlflow_accepts(names):
    """Names of 1-1,000 characters of every Unicode class (and long names that differ only past
    the cut or by characters a key cannot hold): one key each, each one MLflow's own check accepts."""
    from mlflow.utils.validation import _validate_metric_name

    km = KeyMap.build(names)
    assert len({km.segment(n) for n in names}) == len(names)
    for n in names:
        for prefix, suffix in (("field", ("exact_match_rate", "ci_high")), ("models", ("overall/f1",))):
            k = km.key(prefix, n, *suffix)
            assert is_valid_key(k) and len(k) <= MAX_KEY_LENGTH
            _validate_metric_name(k)


def test_a_long_name_and_its_collisions_keep_one_key_each():
    long_a, long_b = "a" * 200, "a" * 199 + "b"  # the same first 151 characters
    km = KeyMap.build([long_a, long_b, "a(b)", "a[b]"])
    assert km.segment(long_a) != km.segment(long_b) and len(km.segment(long_a)) == 160
    assert km.segment(long_a) == "a" * 151 + "-" + km.segment(long_a)[-8:]
    # a name written exactly as another's shortened key keeps it; the changed name takes a longer digest
    taken = km.segment("a(b)")
    again = KeyMap.build(["a(b)", "a[b]", taken])
    assert again.segment(taken) == taken and len({again.segment(n) for n in ("a(b)", "a[b]", taken)}) == 3


def test_sanitising_examples():
    assert sanitize_segment("party") == "party"
    assert sanitize_segment("Vertrag/Parteien") == "Vertrag_Parteien"
    assert sanitize_segment("..") == "_.."
    assert sanitize_segment("<script>alert(1)</script>") == "_script_alert_1_script_"
    km = KeyMap.build(["a(b)", "a[b]", "a_b_"])
    assert km.segment("a_b_") == "a_b_"  # unchanged names keep their key
    assert km.segment("a(b)") != km.segment("a[b]") and km.segment("a(b)").startswith("a_b_-")


def test_truth_digest_ignores_row_and_column_order_but_not_content():
    df = pd.DataFrame({"a": ["x", "y", None], "b": [1, 2, 3]}, index=["r1", "r2", "r3"])
    shuffled = df.loc[["r3", "r1", "r2"], ["b", "a"]]
    assert truth_digest(df) == truth_digest(shuffled)
    changed = df.copy()
    changed.loc["r2", "a"] = "z"
    assert truth_digest(changed) != truth_digest(df)
    assert config_digest({"a": 1, "b": [1, 2]}) == config_digest({"b": [1, 2], "a": 1}) != config_digest({"a": 2, "b": [1, 2]})


def test_registry_lists_every_spec_model_type_and_reports_missing_tasks_clearly():
    from extracteval.errors import InputError
    from extracteval.mlflow.adapters import MODEL_TYPES, TASKS, available_tasks, get_adapter, task_for_model_type

    assert set(MODEL_TYPES) == {s.model_type for s in TASKS.values()}
    assert "fields" in available_tasks()
    assert task_for_model_type("extraction-fields") == "fields"
    assert get_adapter("fields").model_type == "extraction-fields"
    with pytest.raises(InputError, match="unknown task 'nope'"):
        get_adapter("nope")
    with pytest.raises(InputError, match="does not go with model_type"):
        task_for_model_type("extraction-fields", "spans")
    for t in set(TASKS) - set(available_tasks()):
        with pytest.raises(InputError, match="not available in this version"):
            get_adapter(t)


def test_bundle_is_complete_and_reloadable(tmp_path):
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("fields")
    truth = [{"vendor": "A", "total": "1"}, {"vendor": "B", "total": None}, {"vendor": "C", "total": "3"}]
    a = [json.dumps({"vendor": "A", "total": "1"}), "{}", json.dumps({"vendor": "X", "total": "3"})]
    b = [json.dumps(t) for t in truth]
    scored = adapter.score_frame(ids=["1", "2", "3"], targets=truth, predictions={"a": a, "b": b}, config={"bootstrap": 50}, truth_source="t")
    bundle = write_bundle(scored, adapter, tmp_path / "out", experiment="e")
    again = load_bundle(tmp_path / "out")
    assert [r.key for r in again.runs] == ["parent", "model-1", "model-2"]
    assert again.runs[1].model == "b" and again.runs[2].model == "a"  # ranking order
    m = again.metrics("model-2")
    assert (m["field/vendor/fp"], m["field/vendor/fn"], m["field/total/tn"], m["field/total/tp"]) == (1, 2, 1, 2)  # "X" wrong, "{}" missed
    assert m["field/vendor/ci_low"] <= m["field/vendor/f1"] <= m["field/vendor/ci_high"]
    figures = json.loads((bundle.run_dir("parent") / "artifacts" / "extracteval" / "comparison_metrics.json").read_text(encoding="utf-8"))
    assert figures["metrics"]["ranking/b/rank"] == 1 and figures["metrics"]["ranking/a/rank"] == 2
    assert set(again.metrics("parent")) <= {"Main/best", "Main/best_lower", "Main/best_upper", "Main/margin", "Main/margin_lower",
                                            "Main/margin_upper", "Main/significant"}
    assert (again.metrics("model-1")["Main/rank"], again.metrics("model-2")["Main/rank"]) == (1, 2)
    assert again.metrics("model-1")["Main/gap_to_next"] == -again.metrics("model-2")["Main/gap_to_next"] > 0
    assert again.read_state()["status"] == "PENDING"
    for r in again.runs:
        files = {p.relative_to(bundle.run_dir(r.key)).as_posix() for p in bundle.run_dir(r.key).rglob("*") if p.is_file()}
        assert {"metrics.json", "artifacts/extracteval/result.json", "artifacts/extracteval/report.html",
                "artifacts/extracteval/field_metrics.csv", "artifacts/extracteval/field_metrics_table.json",
                "artifacts/figures/field_f1.png", "artifacts/figures/confusion_counts.png"} <= files
    for r in again.runs[1:]:  # each child's per-record counts (written in threads) are its model's
        got = pd.read_parquet(bundle.run_dir(r.key) / "artifacts" / "extracteval" / "records.parquet")
        want = adapter.records_frame(scored, r.model)
        pd.testing.assert_frame_equal(got, want, check_dtype=False, check_categorical=False)  # read back: str categories
    assert not (bundle.run_dir("parent") / "artifacts" / "extracteval" / "records.parquet").exists()
    # writing into a folder that holds something else is refused, not overwritten
    from extracteval.errors import InputError

    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        write_bundle(scored, adapter, tmp_path / "busy", experiment="e")


def test_a_run_of_one_model_claims_no_rank(tmp_path):
    # ranked against nothing, a single run has no `ranking/rank`; the children of a comparison
    # keep the rank they got among the models scored together
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("fields")
    truth = [{"vendor": "A", "total": "1"}, {"vendor": "B", "total": "2"}]
    good = [json.dumps(t) for t in truth]
    bad = [json.dumps({"vendor": "X", "total": "1"}), "{}"]
    one = adapter.score_frame(ids=["1", "2"], targets=truth, predictions={"a": bad}, config={"bootstrap": 0}, truth_source="t")
    single = write_bundle(one, adapter, tmp_path / "one", experiment="e", figures=False)
    assert [r.role for r in single.runs] == ["single"]
    m = single.metrics("single")
    assert "ranking/rank" not in m and m["overall/f1"] < 1 and "wins/fields_scored" in m
    listed = json.loads((single.run_dir("single") / "artifacts" / "extracteval" / "metric_keys.json").read_text(encoding="utf-8"))["metrics"]
    assert "ranking/rank" not in {x["key"] for x in listed}
    two = adapter.score_frame(ids=["1", "2"], targets=truth, predictions={"a": bad, "b": good}, config={"bootstrap": 0}, truth_source="t")
    pair = write_bundle(two, adapter, tmp_path / "two", experiment="e", figures=False)
    assert {r.model: pair.metrics(r.key)["ranking/rank"] for r in pair.runs if r.role == "model"} == {"b": 1.0, "a": 2.0}


def test_field_intervals_agree_with_a_direct_record_bootstrap():
    """The multinomial-over-patterns shortcut has the distribution of resampling records."""
    from extracteval.core.counts import ratios
    from extracteval.tasks.fields.adapter import _field_f1_intervals

    rng = np.random.default_rng(1)
    kinds = np.array([[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 1, 0], [2, 1, 0, 0, 0]])
    ledger = kinds[rng.choice(len(kinds), size=(300, 3), p=[0.5, 0.1, 0.1, 0.1, 0.15, 0.05])].astype(np.int32)
    ci = _field_f1_intervals(ledger, resamples=4000, confidence=0.9, seed=3, zero_division=0.0)
    idx = np.random.default_rng(7).integers(0, 300, size=(4000, 300))
    direct = []
    for row in idx:
        c = ledger[row].sum(axis=0)
        direct.append(ratios(c[:, 0], c[:, 1], c[:, 2], c[:, 3])["f1"])
    expected = np.percentile(np.array(direct), [5, 95], axis=0).T
    assert np.allclose(ci, expected, atol=0.01)
    point = ratios(*(ledger.sum(axis=0)[:, k] for k in range(4)))["f1"]
    assert np.all(ci[:, 0] <= point) and np.all(point <= ci[:, 1])
    again = _field_f1_intervals(ledger[::-1], resamples=4000, confidence=0.9, seed=3, zero_division=0.0)
    assert np.array_equal(ci, again)  # record order does not matter


def test_cli_and_package_import_neither_mlflow_nor_matplotlib():
    code = (
        "import sys, extracteval, extracteval.cli; extracteval.cli.build_parser();"
        "import extracteval.mlflow.adapters, extracteval.mlflow.keys, extracteval.report.figures, extracteval.report.html;"
        "bad = [m for m in ('mlflow', 'matplotlib', 'sklearn') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_evaluate_bad_input_exits_2_without_traceback(cli, tmp_path, contracts_args):
    code, out, err = cli("evaluate", "fields", *contracts_args)  # no --experiment
    assert code == 2 and "--experiment" in err
    code, out, err = cli("evaluate")
    assert code == 2 and "needs a task" in err
    code, out, err = cli("evaluate", "--resume-from", str(tmp_path))
    assert code == 2 and "no manifest.json" in err and "Traceback" not in err
    code, out, err = cli("evaluate", "fields", "--truth", str(tmp_path / "missing.csv"), "--predictions", f"a={tmp_path / 'x.csv'}",
                         "--experiment", "e", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}")
    assert code == 2 and "missing.csv" in err
    assert not (tmp_path / "m.db").exists()  # nothing logged for bad input


def test_html_report_renders_percentages_and_escapes_everything():
    from extracteval.mlflow.adapters import Section
    from extracteval.report.html import render_report

    table = pd.DataFrame({"model": ["<b>m</b>"], "f1": [0.83333], "field_wins": [1.5], "tp": [3]})
    html = render_report(title="<t>", subtitle="a & b", sections=[Section(title="<h>", table=table, items=["<i>"], text="<pre>")],
                         figures={"x_y.png": b"\x89PNG"}, meta={"<k>": "<v>"})
    assert "83.3%" in html and ">1.5<" in html and ">3<" in html
    for raw in ("<b>m</b>", "<t>", "<h>", "<i>", "<pre>", "<k>", "<v>"):
        assert raw not in html.split("<style>")[1].split("</style>")[1].replace("<pre>&lt;pre&gt;</pre>", "")
    assert "&lt;b&gt;m&lt;/b&gt;" in html and "a &amp; b" in html
    assert "data:image/png;base64," in html and "Figure: x y" in html


def test_figures_for_other_tasks_render_one_artist_per_model():
    """The F1-vs-threshold curve (spans) and the score histogram (json) are ready for their tasks."""
    from extracteval.report.figures import f1_threshold_curve, png_bytes, score_histogram

    thr = np.round(np.arange(0, 1.0001, 0.05), 2)
    curves = pd.DataFrame({"model": ["a"] * len(thr) + ["$b$"] * len(thr), "threshold": np.tile(thr, 2), "f1": np.r_[1 - thr / 2, 1 - thr]})
    fig = f1_threshold_curve(curves)
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and [t.get_text() for t in ax.get_legend().get_texts()] == ["a", r"\$b\$"]  # `$` shown literally
    assert png_bytes(fig).startswith(b"\x89PNG")
    scores = pd.DataFrame({"model": ["a"] * 10 + ["b"] * 5, "rqs": np.linspace(0, 1, 15)})
    fig = score_histogram(scores)
    assert len(fig.axes[0].patches) == 2 and png_bytes(fig).startswith(b"\x89PNG")


def test_docstring_examples_run():
    import doctest

    import extracteval.core.run_ranking as core_leaderboard
    import extracteval.mlflow.keys as keys

    for module in (keys, core_leaderboard):
        result = doctest.testmod(module)
        assert result.failed == 0 and (module is keys or result.attempted > 0), module.__name__


def _many_fields_scored(n_fields: int, wrong: dict[str, int]):
    """A fields evaluation of 20 records × n_fields; field → number of records the model gets wrong."""
    from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields
    from extracteval.mlflow.adapters import Scored

    ids = [f"r{i:02d}" for i in range(20)]
    truth = pd.DataFrame({f"f{j:03d}": [f"v{i}" for i in range(20)] for j in range(n_fields)}, index=ids)
    pred = truth.copy()
    for f, k in wrong.items():
        pred.loc[ids[:k], f] = "wrong"
    result = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=FieldsConfig(bootstrap=0), truth_source="t")
    doc = result.to_dict()
    return Scored(task="fields", result=result, doc=doc, models=tuple(result.ranking), truth=truth, truth_source="t", config=doc["config"])


def _row_labels(fig) -> list[str]:
    ax = fig.axes[0]
    return [t.get_text() for t in ax.texts if t.get_ha() == "right"]  # the item names beside the rows


def test_fields_figures_of_many_fields_show_the_fields_with_most_errors():
    from extracteval.tasks.fields.adapter import ADAPTER
    from extracteval.mlflow.adapter_parts import FIGURE_ITEMS

    n = FIGURE_ITEMS + 60
    wrong = {f"f{j:03d}": 1 + j % 7 for j in range(0, n, 2)}  # every other field has errors: 50 fields
    figs = ADAPTER.figures(_many_fields_scored(n, wrong), ["m"])
    bars, heat = figs["field_f1.png"], figs["confusion_counts.png"]
    shown = _row_labels(bars)
    assert len(shown) == FIGURE_ITEMS and set(shown) <= set(wrong)  # only fields with errors
    worst = sorted(wrong, key=lambda f: (-wrong[f], f))[:FIGURE_ITEMS]
    assert shown == worst  # the most errors first, on top
    assert f"({FIGURE_ITEMS} of {n}: most errors)" in bars.axes[0].get_title()
    assert set(_row_labels(heat)) == set(worst)
    # 40 fields × 5 counts = 200 cells: still printed; every count text is a number
    assert sum(t.get_text().isdigit() for t in heat.axes[0].texts) == FIGURE_ITEMS * 5
    # few fields: every one shown, no note
    few = ADAPTER.figures(_many_fields_scored(5, {"f001": 2}), ["m"])["field_f1.png"]
    assert len(_row_labels(few)) == 5 and "of" not in few.axes[0].get_title()


def test_heatmap_prints_counts_up_to_2000_cells_and_has_a_colour_bar():
    from extracteval.report.figures import confusion_heatmap

    def table(n_items: int, models: int) -> pd.DataFrame:
        return pd.DataFrame([{"model": f"m{k}", "field": f"f{i}", "tp": 3, "fp": 1, "fn": 1, "tn": 0, "excluded": 0}
                             for k in range(models) for i in range(n_items)])

    def numbers(fig) -> int:
        return sum(t.get_text().isdigit() for t in fig.axes[0].texts)

    assert numbers(confusion_heatmap(table(40, 10))) == 2000  # 40 × 10 × 5 cells: the cut of many fields, ten models
    assert numbers(confusion_heatmap(table(41, 10))) == 0  # the colours carry them; the CSV has them
    fig = confusion_heatmap(table(41, 10))
    assert len(fig.axes) == 2 and "share" in fig.axes[1].get_ylabel()  # the colour bar says what the colour is


def test_truth_digest_streams_chunk_by_chunk_to_the_whole_tables_digest():
    from extracteval.core.digest import TruthDigest, encode_truth

    rng = np.random.default_rng(0)
    n = 97
    ids = [f"r{i:03d}" for i in range(n)]
    vocab = np.asarray(["x", "", None, "Zürich", float("nan"), "é\n\"q\""], dtype=object)
    df = pd.DataFrame({"b": rng.choice(vocab, n), "a": [["l", i] if i % 7 == 0 else f"v{i}" for i in range(n)],
                       "c": rng.integers(0, 5, n)}, index=ids)
    whole = truth_digest(df)
    for size in (1, 10, 50):
        d = TruthDigest()
        for lo in range(0, n, size):
            d.update(encode_truth(df.iloc[lo : lo + size]))
        assert d.hexdigest() == whole, size
    # a column missing from some chunks (JSONL keys learnt as they come) is absent there
    d = TruthDigest()
    d.update(encode_truth(df.iloc[:40][["b", "c"]]))
    d.update(encode_truth(df.iloc[40:]))
    patched = df.copy()
    patched.iloc[:40, patched.columns.get_loc("a")] = None
    assert d.hexdigest() == truth_digest(patched)
    # text, JSON values and absent cells are told apart; an integral float is its integer
    assert truth_digest(pd.DataFrame({"a": ["1"]}, index=["r"])) != truth_digest(pd.DataFrame({"a": [1]}, index=["r"]))
    assert truth_digest(pd.DataFrame({"a": [""]}, index=["r"])) != truth_digest(pd.DataFrame({"a": [None]}, index=["r"]))
    assert truth_digest(pd.DataFrame({"a": [1.0]}, index=["r"])) == truth_digest(pd.DataFrame({"a": [1]}, index=["r"]))
    assert truth_digest(pd.DataFrame({"a": ["x"], "b": [""]}, index=["r"])) != truth_digest(pd.DataFrame({"a": [""], "b": ["x"]}, index=["r"]))
    with pytest.raises(ValueError, match="out of id order"):
        d = TruthDigest()
        d.update(encode_truth(df.iloc[40:]))
        d.update(encode_truth(df.iloc[:40]))


def test_truth_digest_is_fixed_by_its_definition():
    # the documented definition, spelt out by hand for a two-row table
    import hashlib
    import json
    import struct

    df = pd.DataFrame({"b": ["xy", None], "a": [[1, "é"], 2.0]}, index=["r2", "r1"])

    def col(cells):  # (kind, bytes) per row, rows in id order
        meta = b"".join(struct.pack("<q", len(b) * 4 + k) for k, b in cells)
        return hashlib.sha256(meta).digest() + hashlib.sha256(b"".join(b for _, b in cells)).digest()

    h = hashlib.sha256(b"extracteval-truth-digest/2\n" + json.dumps(["a", "b"]).replace(" ", "").encode() + b"\n2\n")
    h.update(col([(1, b"r1"), (1, b"r2")]))
    h.update(col([(2, b"2"), (2, '[1,"é"]'.encode())]))
    h.update(col([(0, b""), (1, b"xy")]))
    assert truth_digest(df) == h.hexdigest()
    assert truth_digest(df.iloc[::-1]) == h.hexdigest()  # rows already in id order: no reordering
    for index in (pd.Index(["r2", "r1"], dtype="str"), pd.Index(["r2", "r1"], dtype=object)):  # text ids read without str()
        assert truth_digest(df.set_axis(index)) == h.hexdigest()
    # ids that are not text are digested as their str(): 10 sorts before 9
    assert truth_digest(pd.DataFrame({"a": ["x", "y"]}, index=[9, 10])) == truth_digest(pd.DataFrame({"a": ["y", "x"]}, index=["10", "9"]))


@pytest.mark.parametrize(("n", "f"), [(0, 3), (3, 2), (130, 300), (5300, 200)])
def test_records_parquet_written_from_the_ledger_reads_back_as_the_frame_written_by_pandas(tmp_path, n, f):
    """The direct Arrow writer must give the file `records_frame_of(...).to_parquet` gives: same
    schema and pandas metadata (index widths int8/int16/int32 follow the category counts), row
    groups (5300 × 200 rows span two) and content, read by pyarrow and by pandas. Each row group
    carries the dictionary of its own record ids only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def decoded(table: pa.Table) -> pa.Table:
        return pa.table({c: table.column(c).cast(table.column(c).type.value_type) if pa.types.is_dictionary(table.column(c).type)
                         else table.column(c) for c in table.column_names})

    from extracteval.tasks.fields.semantics import RecordLedger
    from extracteval.tasks.fields.adapter import records_frame_of, write_records_parquet

    rng = np.random.default_rng(n)
    counts = {m: rng.integers(0, 3, size=(n, f, 5)).astype(np.int32) for m in ("a", "b")}
    rec = RecordLedger(record_ids=tuple(f"r{i}" for i in range(n)), fields=tuple(f"f<{j}>" for j in range(f)), counts=counts)
    cache: dict = {}
    for m in ("a", "b"):
        old, new = tmp_path / f"old-{m}.parquet", tmp_path / f"new-{m}.parquet"
        records_frame_of(rec, [m]).to_parquet(old, index=False)
        write_records_parquet(rec, m, new, cache=cache)  # the second model reuses the id columns
        a, b = pq.ParquetFile(old), pq.ParquetFile(new)
        assert b.schema_arrow.equals(a.schema_arrow, check_metadata=True)
        assert b.metadata.num_row_groups == a.metadata.num_row_groups
        assert decoded(pq.read_table(new)).equals(decoded(pq.read_table(old)))
        for g in range(b.metadata.num_row_groups):
            rows = b.metadata.row_group(g).num_rows
            if not rows:
                continue
            ids = b.read_row_group(g, columns=["record_id"]).column(0)
            assert len(ids.chunk(0).dictionary) == len(pa.compute.unique(ids)) <= -(-rows // f) + 1
        got, want = pd.read_parquet(new), pd.read_parquet(old)
        # `equals` compares dtypes, categories and codes (assert_frame_equal takes a minute here)
        assert list(got.dtypes) == list(want.dtypes) and got.equals(want)


@pytest.mark.parametrize("cap", [None, 0])
def test_field_intervals_from_one_pass_over_the_ledger_equal_the_per_field_draws(monkeypatch, cap):
    """The pattern table counted in one pass (and its fallback when the table would be too large:
    cap 0) gives exactly the intervals of drawing from each field's records, which the chunked
    and Spark engines reproduce from their merged patterns."""
    from extracteval.tasks.fields import adapter as task_fields
    from extracteval.tasks.fields.adapter import _draw_intervals, _field_f1_intervals, _field_patterns

    if cap is not None:
        monkeypatch.setattr(task_fields, "_MAX_PATTERN_CODES", cap)
    rng = np.random.default_rng(5)
    n, f = 700, 9
    ledger = np.zeros((n, f, 5), dtype=np.int32)
    ledger[:, :, :4] = rng.integers(0, 2, size=(n, f, 4))
    ledger[:, 3, :4] = rng.integers(0, 7, size=(n, 4))  # a list-valued field: counts above 1
    ledger[:, 5, :4] = 0  # nothing but excluded cells
    ledger[:, 5, 4] = 1
    ledger[: n // 2, 6, :4] = 0  # one row pattern under a larger base
    assert (_field_patterns(ledger) is None) == (cap == 0)  # the path under test is the one taken
    for seed in (0, 11):
        kw = {"resamples": 300, "confidence": 0.9, "seed": seed, "zero_division": 0.0}
        per_field = _draw_intervals(((ledger[:, j, :4].astype(np.int64), None) for j in range(f)), f, n, **kw)
        assert np.array_equal(_field_f1_intervals(ledger, **kw), per_field, equal_nan=True)


def test_in_memory_field_intervals_come_from_the_patterns_counted_while_scoring():
    """The adapter takes each model's per-field intervals from the patterns `score_fields` counted
    (no second pass over the per-record counts), and they are the intervals of those counts."""
    from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields
    from extracteval.tasks.fields.adapter import FieldsAdapter, _field_f1_intervals
    from extracteval.mlflow.adapters import Scored

    rng = np.random.default_rng(2)
    ids = [f"r{i:03d}" for i in range(150)]
    vocab = np.array(["a", "b", "c", None], dtype=object)
    truth = pd.DataFrame({f: rng.choice(vocab[:3], len(ids)) for f in ("x", "y", "z")}, index=ids)
    preds = [ModelPredictions(name=m, values=pd.DataFrame({f: rng.choice(vocab, len(ids)) for f in ("x", "y", "z")}, index=ids))
             for m in ("zeta", "alpha", "mid")]  # given out of name order
    result = score_fields(truth, preds, config=FieldsConfig(bootstrap=300, seed=4))
    assert result.field_patterns is not None
    scored = Scored(task="fields", result=result, doc=result.to_dict(), models=tuple(result.ranking), truth=truth, truth_source="t",
                    config=result.to_dict()["config"])
    for m in ("zeta", "alpha", "mid"):
        got = FieldsAdapter()._intervals(scored, m)
        want = _field_f1_intervals(result.records.counts[m], resamples=300, confidence=0.95, seed=4, zero_division=0.0)
        assert np.array_equal(got, want, equal_nan=True), m
    assert score_fields(truth, preds, config=FieldsConfig(bootstrap=0)).field_patterns is None


@pytest.mark.parametrize("change,message", [
    (lambda m: m["runs"][0].update(key="../../victim"), "is not one extracteval writes"),
    (lambda m: m["runs"][0].update(key="/etc"), "is not one extracteval writes"),
    (lambda m: m["runs"][0].update(parent="elsewhere"), "do not describe a run of this folder"),
    (lambda m: m.update(runs="all"), "must be a non-empty list"),
    (lambda m: m["runs"][0].update(tags=["x"]), "'tags' must be a JSON object"),
])
def test_a_results_folder_is_untrusted_input(tmp_path, change, message):
    """`--resume-from` reads only the run folders extracteval writes, inside the folder: a changed
    manifest (a run key `../../victim`, an absolute path, an unknown parent) is refused before
    anything is read or sent."""
    from extracteval.errors import InputError

    victim = tmp_path / "victim" / "artifacts"
    victim.mkdir(parents=True)
    (victim / "secret.txt").write_text("not yours")
    (tmp_path / "victim" / "metrics.json").write_text("{}")
    bundle = tmp_path / "b" / "bundle"
    (bundle / "runs" / "single").mkdir(parents=True)
    (bundle / "runs" / "single" / "metrics.json").write_text("{}")
    manifest = {"format": "extracteval-bundle/1", "runs": [{"key": "single", "role": "single", "run_name": "m", "parent": None,
                                                           "model": "m", "tags": {}, "params": {}}]}
    from extracteval.mlflow.bundle import BUNDLE_FORMAT

    manifest["format"] = BUNDLE_FORMAT
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert load_bundle(bundle).runs[0].key == "single"
    change(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=message):
        load_bundle(bundle)


def test_a_results_folder_with_a_symbolic_link_is_refused(tmp_path):
    from extracteval.errors import InputError
    from extracteval.mlflow.bundle import BUNDLE_FORMAT

    bundle = tmp_path / "bundle"
    arts = bundle / "runs" / "single" / "artifacts"
    arts.mkdir(parents=True)
    (bundle / "runs" / "single" / "metrics.json").write_text("{}")
    (arts / "passwd").symlink_to("/etc/passwd")
    (bundle / "manifest.json").write_text(json.dumps({"format": BUNDLE_FORMAT, "runs": [
        {"key": "single", "role": "single", "run_name": "m", "parent": None, "model": "m", "tags": {}, "params": {}}]}))
    with pytest.raises(InputError, match="symbolic link"):
        load_bundle(bundle)
