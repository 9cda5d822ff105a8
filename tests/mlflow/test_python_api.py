"""`extracteval.score(task, truth, predictions, **config)`: every task, from files, DataFrames and
lists of dicts, gives the command line's metrics; per-item and per-record tables; logging to a
real SQLite tracking store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import extracteval
from extracteval.errors import InputError
from tests.contract.test_evaluator_parity import CASES, _cli_metrics, _models, _spec

EXP = Path(__file__).resolve().parents[2] / "experiments"


def _config(name: str) -> dict:
    folder, _spec_ = _spec(name)
    config = {k: v for k, v in CASES[name][2].items() if k != "task"}
    if "config_file" in config:
        config.update(yaml.safe_load((folder / config.pop("config_file")).read_text()))
    return config


def _paths(name: str, model: str) -> tuple[Path, Path]:
    folder, spec = _spec(name)
    return folder / spec["truth"], folder / spec["predictions"][model]


@pytest.mark.parametrize("name", list(CASES))
def test_every_task_from_files_gives_the_command_lines_metrics(name: str, tmp_path: Path) -> None:
    model = _models(name)[0]
    truth, pred = _paths(name, model)
    result = extracteval.score(CASES[name][0], str(truth), {model: str(pred)}, **_config(name))
    assert result.models == (model,)
    got, want = result.metrics(model), _cli_metrics(name, model, tmp_path)
    assert sorted(got) == sorted(want)
    assert {k: (want[k], got[k]) for k in want if abs(got[k] - want[k]) > 1e-12} == {}
    items = result.items()
    assert isinstance(items, pd.DataFrame) and len(items) > 0
    assert isinstance(result.to_dict(), dict) and result.to_dict()


def test_dataframes_and_lists_of_dicts_give_the_same_result(tmp_path: Path) -> None:
    truth_path, pred_path = _paths("contracts", "llama-3.1-8b")
    truth = pd.read_csv(truth_path)  # numbers, NaN, JSON lists as text: as a user reads it
    pred = pd.read_csv(pred_path)
    config = _config("contracts")
    from_frames = extracteval.score("fields", truth, {"llama": pred}, **config)
    from_lists = extracteval.score("fields", truth.to_dict("records"), {"llama": pred.to_dict("records")}, **config)
    from_files = extracteval.score("fields", truth_path, {"llama": pred_path}, **config)
    want = _cli_metrics("contracts", "llama-3.1-8b", tmp_path)
    for r in (from_frames, from_lists, from_files):
        assert r.metrics()["overall/f1"] == pytest.approx(want["overall/f1"], abs=1e-12)
        assert r.metrics()["field/parties/f1"] == pytest.approx(want["field/parties/f1"], abs=1e-12)
    records = from_frames.records("llama")
    assert set(records["record_id"]) <= set(truth["id"]) and {"tp", "fp", "fn", "tn", "excluded"} <= set(records.columns)


def test_several_models_are_ranked_and_the_status_column_is_read(tmp_path: Path) -> None:
    folder = EXP / "contracts"
    preds = {m: pd.read_csv(folder / "predictions" / f"{m}.csv").rename(columns={"status": "state"})
             for m in ("gpt-4o-mini", "llama-3.1-8b", "regex-baseline")}
    r = extracteval.score("fields", folder / "truth.csv", preds, status_column="state", strategies=str(folder / "strategies.yaml"))
    assert r.models[0] == "gpt-4o-mini" and set(r.models) == set(preds)
    # excluded records counted as the command line counts them
    assert r.metrics("gpt-4o-mini")["field/contract_type/excluded"] == _cli_metrics("contracts", "gpt-4o-mini", tmp_path)["field/contract_type/excluded"]
    assert "gpt-4o-mini" in r.summary()


@pytest.mark.parametrize("given", ["files", "frames", "lists"])
def test_a_prediction_outside_the_truth_counts_as_on_the_command_line(given: str, tmp_path: Path, cli) -> None:
    """A model that invents a record is charged for it in `labels`' strict view, whatever door:
    the API gives the command line's document, which equals scikit-learn with a sentinel label
    for the missing side (left out of `labels=`)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    truth = pd.DataFrame({"id": ["a", "b", "c", "d", "e"], "kind": ["x", "y", "x", "z", "y"]})
    pred = pd.DataFrame({"id": ["a", "b", "c", "d", "e", "q"], "kind": ["x", "y", "y", "z", "x", "x"]})
    truth.to_csv(tmp_path / "truth.csv", index=False)
    pred.to_csv(tmp_path / "pred.csv", index=False)
    code, out, _ = cli("score", "labels", "--truth", str(tmp_path / "truth.csv"), "--predictions", f"m={tmp_path / 'pred.csv'}", "--json")
    assert code == 0
    want = json.loads(out)["models"]["m"]
    inputs = {"files": (tmp_path / "truth.csv", tmp_path / "pred.csv"), "frames": (truth, pred),
              "lists": (truth.to_dict("records"), pred.to_dict("records"))}[given]
    got = extracteval.score("labels", inputs[0], {"m": inputs[1]}).to_dict()["models"]["m"]
    assert {**got, "source": None} == {**want, "source": None}  # the source names the file or the DataFrame
    assert got["alignment"]["extra_rows"] == 1
    strict = got["strict"]["features"]["kind"]
    yt, yp = list(truth["kind"]) + ["\x00none"], list(pred["kind"])
    p, r, f, _ = precision_recall_fscore_support(yt, yp, labels=["x", "y", "z"], average="macro", zero_division=0)
    assert (strict["precision"], strict["recall"], strict["f1"]) == pytest.approx((p, r, f), abs=1e-12)
    assert strict["micro_accuracy"] == pytest.approx(accuracy_score(yt, yp), abs=1e-12)


def test_bad_input_is_a_clear_error() -> None:
    truth, pred = _paths("contracts", "gpt-4o-mini")
    with pytest.raises(InputError, match=r"unknown key\(s\) 'fuzzy_treshold'"):
        extracteval.score("fields", truth, {"m": pred}, fuzzy_treshold=0.9)
    with pytest.raises(InputError, match="unknown task 'field'"):
        extracteval.score("field", truth, {"m": pred})
    with pytest.raises(InputError, match=r"no 'doc_id' column"):
        extracteval.score("fields", truth, {"m": pred}, id_column="doc_id")
    with pytest.raises(InputError, match="expected a DataFrame, a list of dicts"):
        extracteval.score("fields", 42, {"m": pred})
    with pytest.raises(InputError, match=r"predictions of model 'm': record ids must be unique; found 1 duplicated: 'a'"):
        extracteval.score("fields", [{"id": "a", "x": 1}], {"m": [{"id": "a", "x": 1}, {"id": "a", "x": 2}]})
    with pytest.raises(InputError, match=r"truth: record ids must be unique; found 1 duplicated: 'a'"):
        extracteval.score("fields", [{"id": "a", "x": 1}, {"id": "a", "x": 2}], {"m": [{"id": "a", "x": 1}]})
    with pytest.raises(InputError, match="no model 'other'"):
        extracteval.score("fields", truth, {"m": pred}).metrics("other")


def test_tasks_lists_every_task(product_tasks_only) -> None:
    listed = {t["task"]: t["model_type"] for t in extracteval.tasks()}
    assert set(listed) == {"fields", "json", "spans", "labels", "entities", "structured", "toolcalls"}
    assert listed["labels"] == "extraction-entities"


def test_import_and_score_do_not_import_mlflow_or_matplotlib() -> None:
    code = ("import sys, extracteval; r = extracteval.score('fields', 'experiments/contracts/truth.csv', "
            "{'m': 'experiments/contracts/predictions/gpt-4o-mini.csv'}, bootstrap=0); r.metrics(); r.items(); "
            "print(sorted(m for m in ('mlflow', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=EXP.parent, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_log_to_mlflow_logs_the_same_metrics(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    truth, pred = _paths("requirements", "llama-3.1-8b")
    r = extracteval.score("spans", truth, {"llama": pred}, threshold=0.5)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logged = r.log_to_mlflow(experiment="api", tracking_uri=uri)
    run_id = logged["models"]["llama"]
    metrics = MlflowClient(uri).get_run(run_id).data.metrics
    expected = r.metrics()
    assert {k: metrics[k] for k in expected} == pytest.approx(expected)


def test_the_registry_module_pickles_by_name() -> None:
    """`extracteval.tasks` is callable (the listing) and still pickles as a module does, so a
    function using it can travel to Spark executors and worker processes."""
    import pickle

    import extracteval.tasks as registry

    assert pickle.loads(pickle.dumps(registry)) is registry
    assert [t["task"] for t in registry()] == list(registry.TASKS)


def test_tables_of_every_kind_read_as_the_file(tmp_path: Path) -> None:
    """A pyarrow Table, and pandas columns of Arrow text, nullable integers or categories, are read
    column by column as the same table in a file: the command line's numbers."""
    import pyarrow as pa

    truth_path, pred_path = _paths("contracts", "llama-3.1-8b")
    config = _config("contracts")
    want = extracteval.score("fields", truth_path, {"llama": pred_path}, **config).to_dict()["models"]["llama"]
    truth = pd.read_csv(truth_path, dtype=str, keep_default_na=False)
    pred = pd.read_csv(pred_path, dtype=str, keep_default_na=False)

    def empty_missing(path: Path, dtype: str) -> pd.DataFrame:
        return pd.read_csv(path, dtype=dtype, keep_default_na=False, na_values=[""])

    def in_chunks(df: pd.DataFrame) -> pd.DataFrame:  # Arrow text held in several chunks, as Arrow's readers leave it
        k = len(df) // 3
        return pd.DataFrame({c: pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(df[c].iloc[:k], pa.string()), pa.array(df[c].iloc[k:], pa.string())]))
                             for c in df.columns})

    def table_in_chunks(df: pd.DataFrame) -> pa.Table:
        t = pa.Table.from_pandas(df, preserve_index=False)
        return pa.concat_tables([t.slice(0, 5), t.slice(5)])

    kinds = {
        "pyarrow": (pa.Table.from_pandas(truth, preserve_index=False), pa.Table.from_pandas(pred, preserve_index=False)),
        "pyarrow, in chunks": (table_in_chunks(truth), table_in_chunks(pred)),
        "arrow text": (truth.astype("string[pyarrow]"), pred.astype("string[pyarrow]")),
        "arrow text in chunks": (in_chunks(truth), in_chunks(pred)),
        # the empty cells missing (null in Arrow, NaN in pandas' default text dtype), as pandas reads a file by default
        "arrow text, empty cells missing (null)": (empty_missing(truth_path, "string[pyarrow]"), empty_missing(pred_path, "string[pyarrow]")),
        "pandas' text, empty cells missing (NaN)": (empty_missing(truth_path, "str"), empty_missing(pred_path, "str")),
        "categories": (truth.astype("category"), pred.astype("category")),
    }
    for kind, (t, p) in kinds.items():
        got = extracteval.score("fields", t, {"llama": p}, **config).to_dict()["models"]["llama"]
        if "missing" in kind:  # an example shows a missing cell as null where the file's is ''
            got, want_here = ({**m, "fields": {f: {k: v for k, v in c.items() if k != "examples"} for f, c in m["fields"].items()}}
                              for m in (got, want))
        else:
            want_here = want
        assert {**got, "source": None} == {**want_here, "source": None}, kind


def test_inputs_the_command_line_reads_read_the_same_way(tmp_path: Path) -> None:
    """A predictions table holding several models (a `model` column) given without a name, a
    `status_column` over records, a toolcalls truth whose calls are NumPy arrays."""
    import numpy as np

    truth = pd.DataFrame({"id": ["a", "b", "c"], "kind": ["x", "y", "x"]})
    both = pd.DataFrame({"id": ["a", "b", "c"] * 2, "kind": ["x", "y", "y", "x", "x", "x"], "model": ["m1"] * 3 + ["m2"] * 3})
    both.to_csv(tmp_path / "both.csv", index=False)
    for given in (both, tmp_path / "both.csv"):
        assert set(extracteval.score("labels", truth, given).models) == {"m1", "m2"}
    with pytest.raises(InputError, match=r"several models .* without a name"):
        extracteval.score("labels", truth, {"x": both})

    records = [{"id": "r1", "name": "Ann", "state": "error"}, {"id": "r2", "name": "Bo", "state": "ok"}]
    got = extracteval.score("json", [{"id": "r1", "name": "Ann"}, {"id": "r2", "name": "Bob"}], {"m": records}, status_column="state")
    assert got.to_dict()["models"]["m"]["excluded_records"] == 1
    with pytest.raises(InputError, match="has both columns .state. and .status."):
        extracteval.score("json", [{"id": "r1", "name": "Ann"}], {"m": [{"id": "r1", "name": "Ann", "state": "ok", "status": "ok"}]},
                          status_column="state")

    call = {"name": "f", "arguments": {"x": 1}}
    r = extracteval.score("toolcalls", [{"id": "1", "calls": np.array([call], dtype=object)}], {"m": [{"id": "1", "output": json.dumps(call)}]})
    assert r.metrics("m")["toolcalls/call_accuracy"] == 1.0


def test_empty_or_idless_tables_are_refused_as_files_are() -> None:
    with pytest.raises(InputError, match="no records"):
        extracteval.score("fields", pd.DataFrame({"id": [], "x": []}), {"m": [{"id": "a", "x": 1}]})
    with pytest.raises(InputError, match="no records"):
        extracteval.score("toolcalls", [], {"m": [{"id": "1", "output": "{}"}]})
    with pytest.raises(InputError, match='"id" is empty'):
        extracteval.score("structured", pd.DataFrame({"id": [None, "2"], "reference": ['{"a": 1}'] * 2}),
                          {"m": pd.DataFrame({"id": ["2"], "output": ['{"a": 1}']})})


def test_a_polars_frame_reads_as_its_arrow_table() -> None:
    pl = pytest.importorskip("polars", reason="polars is not installed (optional: extracteval reads a polars DataFrame via Arrow)")
    truth = pl.DataFrame({"id": ["a", "b"], "kind": ["x", "y"]})
    pred = pl.DataFrame({"id": ["a", "b"], "kind": ["x", "x"]})
    want = extracteval.score("labels", truth.to_pandas(), {"m": pred.to_pandas()}).to_dict()["models"]["m"]
    got = extracteval.score("labels", truth, {"m": pred}).to_dict()["models"]["m"]
    assert got == want
