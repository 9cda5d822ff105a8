"""`extracteval score labels` end to end: terminal, --json keys, --output, bad inputs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

TRUTH = "id,colour,size,price\n1,red,S,10\n2,blue,M,20\n3,red,L,\n4,green,M,\"1,000\"\n"
PRED = "id,colour,size,price,status\n1,red,S,10.0,ok\n2,red,M,20,\n4,green,M,1000,ok\n5,red,S,3,error\n9,red,S,abc,ok\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "truth.csv").write_text(TRUTH, encoding="utf-8")
    (tmp_path / "a.csv").write_text(PRED, encoding="utf-8")
    return tmp_path


def test_json_document_has_both_views_and_the_documented_keys(cli, files):
    r = cli("score", "labels", "--truth", str(files / "truth.csv"), "--predictions", f"a={files / 'a.csv'}",
            "--predictions", f"perfect={files / 'truth.csv'}", "--type", "price=number", "--positive-label", "colour=Red", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["task"] == "labels" and doc["ranking"] == ["perfect", "a"]
    a = doc["models"]["a"]
    assert a["alignment"] == {"aligned_rows": 3, "missing_rows": 1, "extra_rows": 1}
    for view in ("aligned", "strict"):
        v = a[view]
        assert set(v) == {"description", "rows", "correct_rows", "row_accuracy", "totals", "features"}
        assert set(v["totals"]) == {"precision", "recall", "f1", "specificity", "micro_accuracy", "weighted", "samples"}
        assert set(v["features"]["size"]) >= {"mode", "precision", "recall", "f1", "specificity", "micro_accuracy", "labels"}
    assert a["aligned"]["rows"] == 3 and a["strict"]["rows"] == 5
    assert a["strict"]["row_accuracy"] == pytest.approx(2 / 5)
    assert a["aligned"]["features"]["colour"]["mode"] == "binary"
    assert a["aligned"]["features"]["colour"]["positive_label"] == "red"
    assert a["unparsable_predictions"] == {"price": 1}
    assert any("status pending/error" in w for w in doc["warnings"])
    assert any("do not parse" in w for w in doc["warnings"])
    assert doc["config"]["missing_label"] == "<MISSING>"


def test_terminal_table_and_output_folder(cli, files, tmp_path):
    out = tmp_path / "out"
    r = cli("score", "labels", "--truth", str(files / "truth.csv"), "--predictions", f"a={files / 'a.csv'}", "--output", str(out))
    assert r.code == 0, r.err
    assert "Strict F1" in r.out and "Aligned row acc" in r.out and "3/1/1" in r.out
    assert json.loads((out / "result.json").read_text())["task"] == "labels"
    rows = pd.read_csv(out / "feature_metrics.csv", keep_default_na=False)
    assert set(rows["view"]) == {"aligned", "strict"}
    assert "<MISSING>" in set(rows["label"])  # the empty price of row 3 is its own class


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--features", "ghost"], r"features \['ghost'\] are not columns"),
        (["--type", "price=money"], r"type of feature 'price': expected one of auto, category, text, number, date, but got 'money'"),
        (["--positive-label", "nope"], r"--positive-label 'nope': expected FEATURE=VALUE"),
        (["--positive-label", "weight=1"], r"positive label given for features \['weight'\]"),
        (["--labels", "colour="], r"labels of feature 'colour': expected a non-empty list of classes"),
        (["--labels", "weight=a,b"], r"labels given for features \['weight'\]"),
        (["--labels", "colour=red,blue", "--positive-label", "colour=green"], r"the positive label 'green' is not one of its declared classes"),
    ],
)
def test_bad_options_exit_2_without_traceback(cli, files, args, message):
    r = cli("score", "labels", "--truth", str(files / "truth.csv"), "--predictions", f"a={files / 'a.csv'}", *args)
    assert r.code == 2
    assert "Traceback" not in r.err
    assert pytest.importorskip("re").search(message, r.err), r.err


def test_bad_files_exit_2_naming_the_file(cli, files):
    (files / "dup.csv").write_text("id,colour\n1,red\n1,blue\n", encoding="utf-8")
    r = cli("score", "labels", "--truth", str(files / "dup.csv"), "--predictions", f"a={files / 'a.csv'}")
    assert r.code == 2 and "dup.csv" in r.err and "duplicated" in r.err
    (files / "allmissing.csv").write_text("id,colour,notes\n1,red,\n2,blue,n/a\n", encoding="utf-8")
    r = cli("score", "labels", "--truth", str(files / "allmissing.csv"), "--predictions", f"a={files / 'a.csv'}")
    assert r.code == 2 and "'notes' is missing (<MISSING>) in every ground-truth record" in r.err
    r = cli("score", "labels", "--truth", str(files / "nope.csv"), "--predictions", f"a={files / 'a.csv'}")
    assert r.code == 2 and "nope.csv: file not found" in r.err


def test_demo_runs_the_tickets_example(cli, tmp_path, monkeypatch):
    from pathlib import Path

    experiments = Path(__file__).resolve().parents[3] / "experiments"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the demo logs to ./mlflow.db and ./mlartifacts: here, not in the checkout
    r = cli("demo", "--experiments", str(experiments), "--only", "tickets", "--output", str(tmp_path / "out"))
    assert r.code == 0, r.err
    assert (work / "mlflow.db").is_file()
    assert "== tickets (labels)" in r.out
    doc = json.loads((tmp_path / "out" / "tickets" / "result.json").read_text())
    assert doc["ranking"][0] == "gpt-4o-mini" and len(doc["models"]) == 3
    rules = doc["models"]["keyword-rules"]
    assert rules["alignment"] == {"aligned_rows": 74, "missing_rows": 6, "extra_rows": 2}
    refunds = rules["aligned"]["features"]["refund_amount"]["labels"]
    assert "<MISSING>" in refunds and "none" not in refunds and "n/a" not in refunds
    assert rules["unparsable_predictions"]["refund_amount"] > 0
    # "$45.00" and "March 3, 2024" are the same values as "45" and "2024-03-03"
    gpt = doc["models"]["gpt-4o-mini"]["aligned"]["features"]
    assert gpt["refund_amount"]["micro_accuracy"] == 1.0 and gpt["follow_up_date"]["micro_accuracy"] == 1.0
    assert doc["models"]["gpt-4o-mini"]["aligned"]["features"]["priority"]["mode"] == "binary"


def test_declared_classes_from_the_command_line_and_a_config_file(cli, files, tmp_path):
    """`--labels FEATURE=A,B` and a config file's `labels`: the feature is averaged over exactly those
    classes (as displayed: `Red` is the class `red`), an absent one listed with no support, and a
    warning names the labels outside them."""
    base = ["score", "labels", "--truth", str(files / "truth.csv"), "--predictions", f"a={files / 'a.csv'}", "--json"]
    flag = cli(*base, "--labels", "colour=Red,purple")
    assert flag.code == 0, flag.err
    (tmp_path / "c.yaml").write_text("labels:\n  colour: [Red, purple]\n", encoding="utf-8")
    from_file = cli(*base, "--config", str(tmp_path / "c.yaml"))
    assert from_file.code == 0, from_file.err
    for doc in (flag.json(), from_file.json()):
        f = doc["models"]["a"]["strict"]["features"]["colour"]
        assert doc["config"]["labels_used"] == {"colour": ["red", "purple"]}
        assert f["labels"]["purple"]["support"] == 0 and f["labels"]["purple"]["f1"] == 0.0
        assert f["f1"] == pytest.approx((f["labels"]["red"]["f1"] + 0.0) / 2)
        assert any("outside the declared classes" in w for w in doc["warnings"]) == ("labels_outside_declared_classes" in f["flags"])
    assert flag.json()["models"] == from_file.json()["models"]


def test_a_declared_class_with_a_comma_is_given_as_a_list(cli, files, tmp_path):
    """On the command line a comma separates classes; in a config file a string is one class, whatever it holds."""
    (tmp_path / "c.yaml").write_text('labels:\n  colour: "red, or blue"\n', encoding="utf-8")
    r = cli("score", "labels", "--truth", str(files / "truth.csv"), "--predictions", f"a={files / 'a.csv'}", "--json", "--config", str(tmp_path / "c.yaml"))
    assert r.code == 0, r.err
    assert r.json()["config"]["labels"] == {"colour": ["red, or blue"]}
