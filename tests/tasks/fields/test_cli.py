"""`extracteval score fields` end to end, including every bad input the issue lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENTS, REPO

CONTRACTS = EXPERIMENTS / "contracts"


def write(p: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def seed_files(tmp_path):
    truth = write(tmp_path / "truth.csv", "id,contract_type\n1,Service Agreement\n2,NDA\n3,Not Present\n")
    a = write(tmp_path / "a.csv", "id,contract_type\n1,Service Agreement\n2,License Agreement\n3,Not Present\n")
    b = write(tmp_path / "b.csv", "id,contract_type\n1,Service Agreement\n2,NDA\n3,Employment Agreement\n")
    return truth, a, b


def test_json_document_has_the_documented_keys(cli, seed_files):
    truth, a, b = seed_files
    res = cli("score", "fields", "--truth", str(truth), "--predictions", f"A={a}", "--predictions", f"B={b}", "--json", "--no-ci")
    assert res.code == 0, res.err
    doc = res.json()
    fb = doc["models"]["B"]["fields"]["contract_type"]
    assert {k: fb[k] for k in ("tp", "fp", "fn", "tn", "excluded")} == {"tp": 2, "fp": 1, "fn": 0, "tn": 0, "excluded": 0}
    assert fb["f1"] == pytest.approx(0.8) and fb["accuracy"] == pytest.approx(2 / 3) and fb["exact_match_rate"] == pytest.approx(2 / 3)
    for m in ("A", "B"):
        assert set(doc["models"][m]["overall"]) == {"precision", "recall", "f1", "accuracy"}
        assert {"precision", "recall", "f1"} <= set(doc["models"][m]["micro"])
        assert {"rank", "tier", "field_wins"} <= set(doc["models"][m])
    assert doc["field_winners"]["contract_type"] == {**doc["field_winners"]["contract_type"], "kind": "sole", "winners": ["B"]}
    assert doc["models"]["B"]["rank"] == 1
    assert isinstance(doc["checks"], list) and doc["checks"][0].keys() >= {"name", "passed", "detail"}


def test_terminal_view_shows_ranking_and_winners(cli, seed_files):
    truth, a, b = seed_files
    res = cli("score", "fields", "--truth", str(truth), "--predictions", f"A={a}", "--predictions", f"B={b}")
    assert res.code == 0
    lines = res.out.splitlines()
    row_b = next(line for line in lines if line.startswith("#1"))
    assert "B" in row_b and "66.7%" in row_b and "100.0%" in row_b and "80.0%" in row_b and "Won 1 of 1 fields" in row_b
    assert any(line.startswith("#2") and " A " in line and "50.0%" in line for line in lines)
    assert any("contract_type" in line and "B (sole)" in line for line in lines)


def test_output_folder(cli, seed_files, tmp_path):
    import pandas as pd

    truth, a, b = seed_files
    out = tmp_path / "out"
    res = cli("score", "fields", "--truth", str(truth), "--predictions", f"A={a}", "--predictions", f"B={b}", "--output", str(out), "--no-ci")
    assert res.code == 0, res.err
    doc = json.loads((out / "result.json").read_text())
    assert doc["ranking"] == ["B", "A"]
    fm = pd.read_csv(out / "field_metrics.csv")
    assert set(fm["model"]) == {"A", "B"}
    rec = pd.read_parquet(out / "records.parquet")
    assert len(rec) == 6 and rec[["tp", "fp", "fn", "tn"]].sum().tolist() == [3, 2, 1, 1]


def test_long_format_with_model_column_and_cell_status(cli, tmp_path):
    truth = write(tmp_path / "truth.csv", "id,field,value\n1,party,Acme\n1,party,Bolt\n1,date,2024-01-01\n2,party,Crane\n2,date,Not Present\n")
    preds = write(
        tmp_path / "preds.csv",
        "id,field,value,model,status\n"
        "1,party,acme,m1,ok\n1,party,Bolt,m1,ok\n1,date,\"January 1, 2024\",m1,ok\n2,party,Crane,m1,pending\n"
        "1,party,Acme,m2,ok\n1,date,2024-02-01,m2,ok\n2,party,Crane,m2,ok\n2,date,2024-01-01,m2,ok\n",
    )
    res = cli("score", "fields", "--truth", str(truth), "--predictions", str(preds), "--json", "--no-ci")
    assert res.code == 0, res.err
    doc = res.json()
    m1, m2 = doc["models"]["m1"]["fields"], doc["models"]["m2"]["fields"]
    assert (m1["party"]["tp"], m1["party"]["excluded"], m1["date"]["tp"], m1["date"]["fn"]) == (2, 1, 1, 0)
    assert m1["date"]["tn"] == 1  # record 2 has no prediction row: absent vs Not Present
    assert (m2["party"]["tp"], m2["party"]["fn"], m2["date"]["fp"], m2["date"]["fn"]) == (2, 1, 2, 1)


def test_jsonl_and_parquet_inputs(cli, tmp_path):
    import pandas as pd

    truth = write(tmp_path / "truth.jsonl", '{"id": 1, "parties": ["A", "B"], "amount": 1000}\n{"id": 2, "parties": [], "amount": null}\n')
    pd.DataFrame({"id": ["1", "2"], "parties": [["b", "a"], []], "amount": ["1,000.00", "n/a"]}).to_parquet(tmp_path / "p.parquet")
    res = cli("score", "fields", "--truth", str(truth), "--predictions", f"pq={tmp_path / 'p.parquet'}", "--json", "--no-ci")
    assert res.code == 0, res.err
    f = res.json()["models"]["pq"]["fields"]
    assert (f["parties"]["tp"], f["parties"]["tn"], f["amount"]["tp"], f["amount"]["tn"]) == (2, 1, 1, 1)


def test_strategies_file_yaml_and_json(cli, tmp_path):
    truth = write(tmp_path / "t.csv", "id,name\n1,Acme Robotics Inc.\n")
    pred = write(tmp_path / "p.csv", "id,name\n1,Acme Robotics Inc\n")
    y = write(tmp_path / "s.yaml", "strategies:\n  name: FUZZY\nfuzzy_threshold: 0.9\n")
    j = write(tmp_path / "s.json", '{"name": "EXACT"}')
    fuzzy = cli("score", "fields", "--truth", str(truth), "--predictions", f"m={pred}", "--strategies", str(y), "--json", "--no-ci").json()
    exact = cli("score", "fields", "--truth", str(truth), "--predictions", f"m={pred}", "--strategies", str(j), "--json", "--no-ci").json()
    assert fuzzy["models"]["m"]["fields"]["name"]["tp"] == 1 and fuzzy["config"]["fuzzy_threshold"] == 0.9
    assert exact["models"]["m"]["fields"]["name"]["tp"] == 0


# --- bad inputs: one clear message, exit code 2, no traceback ---------------------------------


def bad(cli, *args) -> str:
    res = cli("score", "fields", *args)
    assert res.code == 2, (res.code, res.out, res.err)
    assert "Traceback" not in res.err
    assert res.err.startswith("extracteval: error:") or "usage:" in res.err
    return res.err


def test_unreadable_file(cli, tmp_path, seed_files):
    _, a, _ = seed_files
    err = bad(cli, "--truth", str(tmp_path / "nope.csv"), "--predictions", f"A={a}")
    assert "nope.csv: file not found" in err
    err = bad(cli, "--truth", str(tmp_path), "--predictions", f"A={a}")
    assert "is a directory" in err


def test_permission_denied_is_one_clear_message(tmp_path):
    """A file the user may not read: exit 2, the path and "permission denied", no traceback. Root
    reads every file through CAP_DAC_OVERRIDE, so as root the command runs with that capability
    dropped (`setpriv`): real permissions, no patching."""
    import os
    import shutil
    import subprocess
    import sys

    secret = write(tmp_path / "secret.csv", "id,a\n1,x\n")
    secret.chmod(0o000)
    cmd = [sys.executable, "-m", "extracteval", "score", "fields", "--truth", str(secret), "--predictions", f"m={secret}"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without util-linux `setpriv`: cannot make a file unreadable to this process")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    secret.chmod(0o600)
    assert done.returncode == 2, done.stderr
    assert f"{secret}: permission denied" in done.stderr and "Traceback" not in done.stderr


def test_wrong_delimiter(cli, tmp_path, seed_files):
    _, a, _ = seed_files
    t = write(tmp_path / "semi.csv", "id;contract_type\n1;NDA\n")
    err = bad(cli, "--truth", str(t), "--predictions", f"A={a}")
    assert "semi.csv" in err and "';'-separated" in err and "--delimiter" in err


def test_missing_id_column(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "noid.csv", "doc,contract_type\n1,NDA\n")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={p}")
    assert "noid.csv: no 'id' column" in err and "['doc', 'contract_type']" in err


def test_duplicate_ids(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "dup.csv", "id,contract_type\n1,NDA\n1,NDA\n2,X\n")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={p}")
    assert "dup.csv: record ids must be unique" in err and "'1'" in err


def test_ids_in_predictions_not_in_truth(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "extra.csv", "id,contract_type\n1,NDA\n99,X\n")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={p}")
    assert "extra.csv" in err and "'99'" in err and "not in the ground truth" in err


def test_unknown_strategy_name(cli, tmp_path, seed_files):
    truth, a, _ = seed_files
    s = write(tmp_path / "s.json", '{"contract_type": "FUZZZY"}')
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={a}", "--strategies", str(s))
    assert "s.json" in err and "'contract_type'" in err and "EXACT, FUZZY, SEMANTIC, IGNORE" in err and "'FUZZZY'" in err


def test_model_given_twice(cli, seed_files):
    truth, a, b = seed_files
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={a}", "--predictions", f"A={b}")
    assert "model 'A' is given twice" in err


def test_empty_file(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    e = write(tmp_path / "empty.csv", "")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={e}")
    assert "empty.csv: the file is empty" in err
    h = write(tmp_path / "header.csv", "id,contract_type\n")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={h}")
    assert "header.csv: the file has a header but no records" in err


def test_non_utf8_bytes(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "latin1.csv", "id,contract_type\n1,NDA\n2,Soci\xe9t\xe9\n".encode("latin-1"))
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={p}")
    assert "latin1.csv: line 3: expected UTF-8" in err and "0xe9" in err


def test_bom_and_crlf_are_fine(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "bom.csv", "\ufeffid,contract_type\r\n1,Service Agreement\r\n2,NDA\r\n3,\r\n".encode("utf-8"))
    res = cli("score", "fields", "--truth", str(truth), "--predictions", f"A={p}", "--json", "--no-ci")
    assert res.code == 0, res.err
    assert res.json()["models"]["A"]["fields"]["contract_type"]["f1"] == 1.0


def test_bad_status_value(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "st.csv", "id,contract_type,status\n1,NDA,finished\n")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={p}")
    assert "st.csv" in err and "record '1'" in err and "'finished'" in err


def test_ragged_csv(cli, tmp_path, seed_files):
    truth, _, _ = seed_files
    p = write(tmp_path / "ragged.csv", "id,contract_type\n1,NDA\n2,NDA,extra,more\n")
    err = bad(cli, "--truth", str(truth), "--predictions", f"A={p}")
    assert "ragged.csv: not a valid CSV table" in err and "line 3" in err


def test_usage_error_exit_code_2(cli):
    res = cli("score", "fields", "--truth", "x.csv")
    assert res.code == 2 and "--predictions" in res.err


def test_contracts_example_end_to_end(cli):
    args = ["score", "fields", "--truth", str(CONTRACTS / "truth.csv"), "--strategies", str(CONTRACTS / "strategies.yaml"), "--json"]
    for p in sorted((CONTRACTS / "predictions").glob("*.csv")):
        args += ["--predictions", f"{p.stem}={p}"]
    res = cli(*args)
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["n_records"] == 60 and len(doc["ranking"]) == 3
    assert all(c["passed"] for c in doc["checks"] if c["kind"] == "consistency")
    excluded = {m: sum(f["excluded"] for f in v["fields"].values()) for m, v in doc["models"].items()}
    assert excluded["llama-3.1-8b"] > 0  # the example has pending / error records
    for m in doc["ranking"]:
        assert doc["models"][m]["ci"]["overall_f1"]["resamples"] == 1000


def test_import_does_not_load_heavy_modules():
    code = (
        "import sys, extracteval, extracteval.cli;"
        "bad = [m for m in ('mlflow', 'sklearn', 'matplotlib', 'pandas') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_help_loads_nothing_heavy():
    """`--help` must answer fast (< 0.5 s; timed in bench/bench_fields.py, never in a test):
    building the whole parser and printing help must not import numpy, pandas or mlflow."""
    code = (
        "import sys, contextlib, io\n"
        "from extracteval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main(['score', 'fields', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert '--predictions' in out.getvalue()\n"
        "print(','.join(m for m in ('numpy', 'pandas', 'mlflow', 'sklearn', 'matplotlib', 'scipy') if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ""
