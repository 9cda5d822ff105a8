"""`mlflow.models.evaluate(..., evaluators="extracteval")` gives the command line's numbers on the
inputs users really pass: every `experiments/` example, every model, with DataFrames built the way
a user builds them (`pd.read_csv` / `pd.read_json` and one `row.to_dict()` per record, JSON
strings, raw fenced model output), against the same example scored by the command line's path.

A DataFrame holds one row per ground-truth record, so a record the model did not answer is an
empty cell (None), and predictions for ids outside the truth cannot be passed: where an example
has such ids (the tickets keyword rules), the command-line side scores its file without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

mlflow = pytest.importorskip("mlflow")

from extracteval.errors import InputError  # noqa: E402
from extracteval.mlflow.bundle import write_bundle  # noqa: E402
from extracteval.mlflow.adapters import get_adapter  # noqa: E402
from extracteval.tasks import TASKS  # noqa: E402
from tests.contract.cases import example_spec, task_cases  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXP = REPO / "experiments"


def _spec(name: str) -> tuple[Path, dict[str, Any]]:
    return example_spec(EXAMPLES[name])


def _rows(frame: pd.DataFrame, ids: pd.Series) -> list[Any]:
    """One `row.to_dict()` per truth id (without the id); None for a record the file lacks."""
    by_id = frame.set_index("id")
    out = []
    for rid in ids:
        if rid not in by_id.index:
            out.append(None)
        else:
            out.append(by_id.loc[rid].to_dict())
    return out


def _column(frame: pd.DataFrame, ids: pd.Series, column: str) -> list[Any]:
    by_id = frame.set_index("id")[column]
    return [by_id.get(rid) if rid in by_id.index else None for rid in ids]


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_json(path, lines=True)


def _example_name(task: str, example: str | Path) -> str:
    return example if isinstance(example, str) else f"{task}-example"


# example → where it is (a folder of experiments/, folder/track, or a task's own folder)
EXAMPLES: dict[str, str | Path] = {_example_name(t, c.example): c.example for t, c in task_cases().items()}
# example → (task, model_type, evaluator_config, how the user builds the target and prediction cells)
CASES: dict[str, tuple[str, str, dict[str, Any], str | tuple[str, str]]] = {
    _example_name(t, c.example): (t, TASKS[t].model_type, dict(c.evaluator_config), c.cells) for t, c in task_cases().items()
}


def _frame(name: str, model: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    folder, spec = _spec(name)
    task, _mt, config, shape = CASES[name]
    config = dict(config)
    if "config_file" in config:  # the example's YAML options, passed as evaluator_config keys
        config.update(yaml.safe_load((folder / config.pop("config_file")).read_text()))
    truth = _read(folder / spec["truth"])
    pred = _read(folder / spec["predictions"][model])
    ids = truth["id"]
    if shape == "rows":
        targets, outputs = _rows(truth, ids), _rows(pred, ids)
    else:
        truth_column, output_column = shape
        targets, outputs = _column(truth, ids, truth_column), _column(pred, ids, output_column)
    return pd.DataFrame({"id": ids, "truth": targets, "output": outputs}), config


def _cli_metrics(name: str, model: str, tmp: Path) -> dict[str, float]:
    """The command line's scoring of one model of the example (the `extracteval evaluate` path:
    its arguments → `score_args` → the metrics bundled for upload)."""
    folder, spec = _spec(name)
    task = CASES[name][0]
    spec = dict(spec)
    path = folder / spec["predictions"][model]
    truth_ids = set(_read(folder / spec["truth"])["id"])
    pred = _read(path)
    if not set(pred["id"]) <= truth_ids:  # not expressible in a DataFrame of truth rows
        kept = tmp / path.name
        lines = path.read_text().splitlines()
        kept.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split(",", 1)[0] in truth_ids]) + "\n")
        path = kept
    spec["predictions"] = {model: str(path)}
    adapter = get_adapter(task)
    scored = adapter.score_experiment(folder, spec)
    bundle = write_bundle(scored, adapter, tmp / "bundle", experiment=None, tracking_uri=None, figures=False)
    return bundle.metrics("single")


def _evaluate(df: pd.DataFrame, model_type: str, config: dict[str, Any], *, targets: str = "truth") -> dict[str, float]:
    with mlflow.start_run():
        result = mlflow.models.evaluate(data=df, targets=targets, predictions="output", model_type=model_type,
                                        evaluators="extracteval", evaluator_config=config)
    return dict(result.metrics)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("parity")
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    mlflow.set_experiment("parity")
    yield root
    mlflow.set_tracking_uri("")


def _models(name: str) -> list[str]:
    return list(_spec(name)[1]["predictions"])


def _as_json_text(cell: Any) -> Any:
    """A cell as the JSON string a user's own code (or a model) writes; None stays None."""
    if cell is None:
        return None

    def clean(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(cell))


# every model with the cells as objects; the first model of each example with JSON strings too
_PARAMS = [(n, m, "objects") for n in CASES for m in _models(n)] + [(n, _models(n)[0], "json-strings") for n in CASES]


@pytest.mark.parametrize("name,model,form", _PARAMS, ids=lambda x: x)
def test_evaluator_gives_the_command_lines_metrics(store: Path, tmp_path: Path, name: str, model: str, form: str) -> None:
    df, config = _frame(name, model)
    if form == "json-strings":
        df["truth"] = [_as_json_text(c) for c in df["truth"]]
        df["output"] = [c if isinstance(c, str) else _as_json_text(c) for c in df["output"]]
    got = _evaluate(df, CASES[name][1], config)
    want = _cli_metrics(name, model, tmp_path)
    assert sorted(got) == sorted(want)
    differ = {k: (want[k], got[k]) for k in want if not (got[k] == want[k] or abs(got[k] - want[k]) < 1e-12)}
    assert differ == {}


def test_parties_json_list_cells_and_status_read_as_the_command_line_reads_them(store: Path, tmp_path: Path, cli) -> None:
    """`parties` holds JSON lists in the CSV cells: a multi-valued field, not one text value; the
    `status` column's pending/error records are excluded. Both through the real command."""
    folder = EXP / "contracts"
    code, out, _err = cli("score", "fields", "--truth", str(folder / "truth.csv"),
                          "--predictions", f"llama-3.1-8b={folder / 'predictions' / 'llama-3.1-8b.csv'}",
                          "--strategies", str(folder / "strategies.yaml"), "--json")
    assert code == 0
    doc = json.loads(out)
    cli_model = doc["models"]["llama-3.1-8b"]
    df, config = _frame("contracts", "llama-3.1-8b")
    assert isinstance(df["truth"][0]["parties"], str) and df["truth"][0]["parties"].startswith("[")  # as read_csv gives it
    got = _evaluate(df, "extraction-fields", config)
    assert got["field/parties/f1"] == pytest.approx(cli_model["fields"]["parties"]["f1"], abs=1e-12)
    assert got["overall/f1"] == pytest.approx(cli_model["overall"]["f1"], abs=1e-12)
    assert got["field/parties/f1"] > 0.9
    excluded = sum(1 for r in df["output"] if r and r["status"] in ("pending", "error"))
    assert excluded > 0
    assert got["field/contract_type/excluded"] == excluded
    # the same records through a `status_column` instead of a key of the prediction
    df2 = df.copy()
    df2["state"] = [r.pop("status") if r else None for r in df2["output"]]
    got2 = _evaluate(df2, "extraction-fields", {**config, "status_column": "state"})
    assert got2["overall/f1"] == got["overall/f1"] and got2["field/contract_type/excluded"] == excluded


def test_fenced_model_output_is_read_as_the_object_inside(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Raw LLM output in a ```json fence, or after a line of prose, is the object it holds; what
    cannot be read is counted (`invalid_outputs/count`) and said on stderr."""
    df, config = _frame("contracts", "gpt-4o-mini")
    plain = _evaluate(df, "extraction-fields", config)
    wrapped = df.copy()
    texts = []
    for i, r in enumerate(wrapped["output"]):
        if r is None:
            texts.append(None)
            continue
        body = json.dumps({k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()})
        texts.append(f"```json\n{body}\n```" if i % 2 == 0 else f"Here is the extraction:\n{body}\nHope this helps.")
    wrapped["output"] = texts
    got = _evaluate(wrapped, "extraction-fields", config)
    assert got["overall/f1"] == pytest.approx(plain["overall/f1"], abs=1e-12)
    assert got["invalid_outputs/count"] == 0
    broken = wrapped.copy()
    broken.loc[0, "output"] = "I could not find the contract fields."
    broken.loc[1, "output"] = '```json\n{"contract_type": \n```'
    capsys.readouterr()
    got = _evaluate(broken, "extraction-fields", config)
    assert got["invalid_outputs/count"] == 2
    assert got["overall/f1"] < plain["overall/f1"]
    err = capsys.readouterr().err
    assert "2 output(s) are not a JSON object of field values" in err


def test_unknown_strategy_field_is_warned_as_by_the_command_line(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    df, _config = _frame("contracts", "gpt-4o-mini")
    capsys.readouterr()
    _evaluate(df, "extraction-fields", {"strategies": {"party": "FUZZY"}, "bootstrap": 0})
    err = capsys.readouterr().err
    assert "warning: strategies given for fields that are not in the ground truth: ['party']" in err


@pytest.mark.parametrize("model_type", ["text", "question-answering", "extraction-labels"])
def test_unsupported_model_type_names_the_accepted_ones(store: Path, model_type: str) -> None:
    df, _config = _frame("contracts", "gpt-4o-mini")
    with pytest.raises(InputError) as e:
        _evaluate(df, model_type, {})
    msg = str(e.value)
    assert f"cannot score model_type {model_type!r}" in msg
    for mt in ("extraction-fields", "extraction-json", "extraction-spans", "extraction-entities", "structured-output", "tool-calling"):
        assert f'"{mt}"' in msg
    assert 'evaluator_config={"extracteval": {' in msg and '{"task": "labels"}' in msg


def test_other_model_types_never_reach_extracteval_when_no_evaluator_is_named(store: Path) -> None:
    """`evaluators=None` asks every installed evaluator: extracteval must step aside for a model
    type that is not its own (MLflow's own evaluators score it)."""
    from extracteval.mlflow.evaluator import ExtractevalEvaluator

    assert ExtractevalEvaluator.can_evaluate(model_type="extraction-fields", evaluator_config={})
    from mlflow.models.evaluation.base import resolve_evaluators_and_configs

    names = [b.name for b in resolve_evaluators_and_configs(None, None, model_type="regressor")]
    assert "extracteval" not in names
    names = [b.name for b in resolve_evaluators_and_configs(None, None, model_type="extraction-fields")]
    assert "extracteval" in names


def test_default_and_extracteval_together_with_per_evaluator_config(store: Path) -> None:
    df, config = _frame("contracts", "gpt-4o-mini")
    with mlflow.start_run():
        result = mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-fields",
                                        evaluators=["default", "extracteval"], evaluator_config={"extracteval": config})
    assert result.metrics["overall/f1"] == pytest.approx(_evaluate(df, "extraction-fields", config)["overall/f1"])


def test_status_column_must_exist(store: Path) -> None:
    df, config = _frame("contracts", "gpt-4o-mini")
    with pytest.raises(InputError, match=r"`status_column`: column 'state' is not in the data"):
        _evaluate(df, "extraction-fields", {**config, "status_column": "state"})


def test_reading_rules_of_one_cell() -> None:
    from extracteval.io.cells import json_list_value, record_object
    from extracteval.io.tables import json_list_cells

    assert json_list_value('["A", "B"]') == ["A", "B"]
    assert json_list_value("[not json]") == "[not json]"
    assert json_list_cells(['["A"]', "x", "[1"]) == {'["A"]': ["A"]}  # the CSV reader: the same rule
    assert record_object('```json\n{"a": 1}\n```') == ({"a": 1}, None)
    assert record_object('Sure! {"a": [1, 2]} done')[0] == {"a": [1, 2]}
    assert record_object(float("nan")) == (None, "no output")
    assert record_object("  ") == (None, "no output")
    obj, why = record_object("no json here")
    assert obj is None and why


def test_record_cells_become_columns_as_a_files_reader_gives_them() -> None:
    """The evaluator's cells go straight into one column per field: fields in the order they
    first appear, None where a record lacks one, an integer still an integer beside a record
    without it (no detour through float), JSON-list text a list, equal texts held once."""
    adapter = get_adapter("fields")
    truth = ['{"a": 7, "b": "x"}', '{"b": "x", "c": "[\\"P\\", \\"Q\\"]"}', {"c": ["R"], "a": 2**60 + 1}]
    scored = adapter.score_frame(ids=["1", "2", "3"], targets=truth, predictions={"m": truth}, config={"bootstrap": 0}, truth_source="t")
    frame = scored.truth
    assert list(frame.columns) == ["a", "b", "c"] and list(frame.index) == ["1", "2", "3"]
    assert frame["a"].tolist() == [7, None, 2**60 + 1] and type(frame.loc["1", "a"]) is int
    assert frame["c"].tolist() == [None, ["P", "Q"], ["R"]]
    assert frame.loc["1", "b"] is frame.loc["2", "b"]  # one text object for the two equal cells
    assert scored.result.models["m"].overall["f1"] == 1.0


def test_genai_scorer_reads_the_same_cells(store: Path, tmp_path: Path) -> None:
    """The `mlflow.genai` scorer, one row at a time on the same `row.to_dict()` cells (status key
    included), sums to the command line's micro counts."""
    from extracteval.mlflow.genai import extraction_scorer

    df, config = _frame("contracts", "gpt-4o-mini")
    scorer = extraction_scorer("fields", {k: v for k, v in config.items()})
    tp = fp = fn = 0
    for truth, output in zip(df["truth"], df["output"]):
        fb = {f.name: f.value for f in scorer(outputs=output, expectations=truth)}
        tp, fp, fn = tp + fb["extracteval/tp"], fp + fb["extracteval/fp"], fn + fb["extracteval/fn"]
    want = _cli_metrics("contracts", "gpt-4o-mini", tmp_path)
    assert tp / (tp + fp) == pytest.approx(want["micro/precision"], abs=1e-12)
    assert tp / (tp + fn) == pytest.approx(want["micro/recall"], abs=1e-12)
