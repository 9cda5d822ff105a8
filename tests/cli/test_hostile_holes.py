"""Five holes found by trying the command as a careless or hostile user would, each pinned here:
a damaged SQLite tracking store, a repeated column, `--output` into a folder of other things (or
a link to one), UTF-16 text with a byte-order mark, and the upload path's messages."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = REPO / "experiments" / "contracts"
ONE_MODEL = ["--truth", str(CONTRACTS / "truth.csv"), "--predictions", f"gpt={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}", "--no-ci"]


def _error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("extracteval: error:")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# the shape of every upload failure: one line, sentences, the store, the cause, the way to resume
UPLOAD_FAILURE = re.compile(
    r"^extracteval: error: Logging to (?P<uri>\S+) failed while [a-z ']+: (?P<reason>[a-z].*?)\. "
    r"The complete results are kept in (?P<kept>\S+)\. (?P<advice>[A-Z].*?)(?:, then|,) run: "
    r"extracteval evaluate --resume-from (?P=kept)( --tracking-uri \S+)?$"
)


def test_a_damaged_sqlite_store_is_one_sentence_and_the_results_are_kept(cli, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "bad.db"
    db.write_text("garbage\n")
    out = tmp_path / "kept"
    r = cli("evaluate", "fields", *ONE_MODEL, "--no-figures", "--experiment", "damaged", "--tracking-uri", f"sqlite:///{db}",
            "--output", str(out))
    assert r.code == 1, r.err  # as for an unreachable server: the environment's fault, the results kept
    assert "Traceback" not in r.err, r.err
    lines = _error_lines(r.err)
    assert len(lines) == 1 and UPLOAD_FAILURE.match(lines[0]), r.err
    assert str(db) in lines[0] and "not an MLflow database" in lines[0] and f"Move {db} aside" in lines[0]
    state = json.loads((out / "state.json").read_text())
    assert state["status"] == "FAILED" and state["runs"] == {}
    db.rename(tmp_path / "bad.db.damaged")  # what the message says to do; then the resume it prints
    r = cli("evaluate", "--resume-from", str(out), "--tracking-uri", f"sqlite:///{db}")
    assert r.code == 0, r.err
    state = json.loads((out / "state.json").read_text())
    run = MlflowClient(f"sqlite:///{db}").get_run(state["runs"]["single"])
    assert run.info.status == "FINISHED" and run.data.metrics == json.loads((out / "runs" / "single" / "metrics.json").read_text())


def test_the_unreachable_server_message_is_made_of_sentences(cli, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    url = f"http://127.0.0.1:{_free_port()}"
    out = tmp_path / "kept"
    r = cli("evaluate", "fields", *ONE_MODEL, "--no-figures", "--experiment", "nowhere", "--tracking-uri", url, "--output", str(out))
    assert r.code == 1 and "Traceback" not in r.err, r.err
    lines = _error_lines(r.err)
    assert len(lines) == 1, r.err
    m = UPLOAD_FAILURE.match(lines[0])
    assert m, lines[0]
    assert m["uri"] == url and "not reachable" in m["reason"] and m["advice"] == "Once the tracking server answers again"
    assert "writing connecting" not in lines[0]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet"])
@pytest.mark.parametrize("side", ["truth", "predictions"])
def test_a_repeated_column_is_refused(cli, tmp_path: Path, fmt: str, side: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    good, bad = tmp_path / f"good.{fmt}", tmp_path / f"repeated.{fmt}"
    rows = [("R1", "x", "y"), ("R2", "u", "v")]
    if fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        good.write_text(sep.join(("id", "a", "b")) + "\n" + "".join(sep.join(r) + "\n" for r in rows))
        bad.write_text(sep.join(("id", "a", "a")) + "\n" + "".join(sep.join(r) + "\n" for r in rows))
    elif fmt == "jsonl":
        good.write_text("".join(json.dumps({"id": i, "a": x, "b": y}) + "\n" for i, x, y in rows))
        bad.write_text("".join(f'{{"id": "{i}", "a": "{x}", "a": "{y}"}}\n' for i, x, y in rows))
    else:
        cols = [pa.array([r[k] for r in rows]) for k in range(3)]
        pq.write_table(pa.table(cols, names=["id", "a", "b"]), good)
        pq.write_table(pa.table(cols, names=["id", "a", "a"]), bad)
    truth, pred = (bad, good) if side == "truth" else (good, bad)
    r = cli("score", "fields", "--truth", str(truth), "--predictions", f"m={pred}", "--no-ci", "--json")
    assert r.code == 2, (r.code, r.out[:300], r.err)
    lines = _error_lines(r.err)
    assert len(lines) == 1 and str(bad) in lines[0] and "'a'" in lines[0] and "more than once" in lines[0], r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("through_link", [False, True], ids=["folder", "link"])
def test_output_into_a_folder_extracteval_did_not_write_is_refused(cli, tmp_path: Path, through_link: bool) -> None:
    system = tmp_path / "etc"
    system.mkdir()
    (system / "result.json").write_text("the system's own file\n")
    (system / "passwd").write_text("root:x:0:0\n")
    before = {p.name: p.read_bytes() for p in system.iterdir()}
    target = system
    if through_link:
        target = tmp_path / "results"
        target.symlink_to(system, target_is_directory=True)
    r = cli("score", "fields", *ONE_MODEL, "--output", str(target))
    assert r.code == 2, r.err
    lines = _error_lines(r.err)
    assert len(lines) == 1 and "--overwrite" in lines[0] and "not written by extracteval" in lines[0], r.err
    assert str(system.resolve()) in lines[0]  # a link is named with the folder it points to
    assert {p.name: p.read_bytes() for p in system.iterdir()} == before  # nothing written, nothing replaced
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind
    r = cli("score", "fields", *ONE_MODEL, "--output", str(target), "--overwrite")  # said explicitly: written into it
    assert r.code == 0, r.err
    assert (system / "passwd").read_bytes() == before["passwd"] and json.loads((system / "result.json").read_text())["models"]
    assert (target / ".extracteval-output").is_file() and target.is_symlink() == through_link
    r = cli("score", "fields", *ONE_MODEL, "--output", str(target))  # extracteval's folder now: no --overwrite needed
    assert r.code == 0, r.err


@pytest.mark.parametrize("codec,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")], ids=["UTF-16-LE", "UTF-16-BE"])
def test_utf16_text_with_a_byte_order_mark_is_read(cli, tmp_path: Path, codec: str, bom: bytes) -> None:
    truth = (CONTRACTS / "truth.csv").read_text(encoding="utf-8")
    pred = (CONTRACTS / "predictions" / "gpt-4o-mini.csv").read_text(encoding="utf-8")
    (tmp_path / "truth.csv").write_bytes(bom + truth.encode(codec))
    (tmp_path / "gpt.csv").write_bytes(bom + pred.encode(codec))
    r16 = cli("score", "fields", "--truth", str(tmp_path / "truth.csv"), "--predictions", f"gpt={tmp_path / 'gpt.csv'}", "--no-ci", "--json")
    assert r16.code == 0, r16.err
    r8 = cli("score", "fields", *ONE_MODEL, "--json")

    def scores(doc: dict) -> dict:
        return {m: {k: v for k, v in d.items() if k != "source"} for m, d in doc["models"].items()}

    assert scores(r16.json()) == scores(r8.json())
    # no byte-order mark: not declared, so still refused with the clear message
    (tmp_path / "bare.csv").write_bytes(truth.encode(codec))
    r = cli("score", "fields", "--truth", str(tmp_path / "bare.csv"), "--predictions", f"gpt={tmp_path / 'gpt.csv'}", "--no-ci")
    assert r.code == 2 and "Traceback" not in r.err and len(_error_lines(r.err)) == 1, r.err
    assert "UTF-8" in r.err


def test_no_output_outside_the_folder_named(cli, tmp_path: Path) -> None:
    """--output through a link: the files go to the folder it points to (named in messages), the
    link stays a link; links inside an earlier output folder are replaced, never written
    through; model and field names cannot climb out of the folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("outside\n")
    real = tmp_path / "real"
    real.mkdir()
    (real / ".extracteval-output").write_text("{}\n")  # an earlier run's folder
    (real / "result.json").symlink_to(outside / "keep.txt")  # planted links: must be replaced, not followed
    (real / "field_metrics.csv").symlink_to(outside / "keep.txt")
    link = tmp_path / "out"
    link.symlink_to(real, target_is_directory=True)
    evil = "../../outside/pwned"
    pred = tmp_path / "pred.csv"
    pred.write_text((CONTRACTS / "predictions" / "gpt-4o-mini.csv").read_text().replace("contract_type", "../../x", 1))
    truth = tmp_path / "truth.csv"
    truth.write_text((CONTRACTS / "truth.csv").read_text().replace("contract_type", "../../x", 1))

    def snapshot() -> dict[str, bytes | str]:
        snap: dict[str, bytes | str] = {}
        for p in sorted(tmp_path.rglob("*")):
            rel = p.relative_to(tmp_path).as_posix()
            if rel.startswith("real/") or rel in ("real",):
                continue
            snap[rel] = ("link:" + str(p.readlink())) if p.is_symlink() else (p.read_bytes() if p.is_file() else "dir")
        return snap

    before = snapshot()
    r = cli("score", "fields", "--truth", str(truth), "--predictions", f"{evil}={pred}", "--no-ci", "--output", str(link))
    assert r.code == 0, r.err
    assert snapshot() == before  # nothing written, created or replaced outside the folder named
    assert (outside / "keep.txt").read_text() == "outside\n"
    written = {p.name for p in real.iterdir()}
    assert {"result.json", "field_metrics.csv", ".extracteval-output"} <= written
    assert not (real / "result.json").is_symlink() and json.loads((real / "result.json").read_text())["models"]
    assert all(p.resolve().is_relative_to(real.resolve()) for p in real.rglob("*"))


def test_the_marker_is_small_json(tmp_path: Path) -> None:
    from extracteval.io.outputs import MARKER, mark_folder, written_by_extracteval

    assert not written_by_extracteval(tmp_path)
    mark_folder(tmp_path)
    doc = json.loads((tmp_path / MARKER).read_text())
    assert doc["written_by"] == "extracteval" and written_by_extracteval(tmp_path)


def _parsers_with_output():
    """(command words, parser) for every parser of the command line that has --output."""
    import argparse

    from extracteval.cli import build_parser

    def walk(p: argparse.ArgumentParser, words: tuple[str, ...]):
        if any(a.dest == "output" for a in p._actions):
            yield words, p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from walk(sub, (*words, name))

    return list(walk(build_parser(), ()))


def test_every_output_option_has_the_folder_rule() -> None:
    from extracteval.cli import WHOLE_FOLDER_OUTPUTS

    found = _parsers_with_output()
    assert len(found) >= 11  # 7 score tasks, 7 evaluate tasks, leaderboard, demo, rescore
    for words, p in found:
        has_overwrite = any(a.dest == "overwrite" for a in p._actions)
        assert has_overwrite != (words[0] in WHOLE_FOLDER_OUTPUTS), words


# the fewest arguments argparse accepts for each command with --output (the folder is refused first)
MINIMAL = {
    "score": ["--truth", "t.csv", "--predictions", "m=p.csv"],
    "evaluate": ["--truth", "t.csv", "--predictions", "m=p.csv", "--experiment", "e"],
    "leaderboard": ["--experiment", "e"],
    "demo": ["--no-mlflow"],
    "rescore": ["--run", "0" * 32, "--truth", "t.csv"],
}


@pytest.mark.parametrize("words", [w for w, _ in _parsers_with_output()], ids=lambda w: "-".join(w))
def test_every_command_refuses_a_folder_it_did_not_write(cli, tmp_path: Path, monkeypatch, words) -> None:
    monkeypatch.chdir(tmp_path)  # nothing reaches a store: the refusal comes before any work
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("the user's\n")
    link = tmp_path / "link"
    link.symlink_to(foreign, target_is_directory=True)
    r = cli(*words, *MINIMAL[words[0]], "--output", str(link))
    assert r.code == 2 and "Traceback" not in r.err, r.err
    lines = _error_lines(r.err)
    assert len(lines) == 1 and f"(a link to {foreign})" in lines[0] and "not written by extracteval" in lines[0], r.err
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign", "link"]


def test_what_a_user_adds_to_a_results_folder_is_never_removed(cli, tmp_path: Path) -> None:
    """`score --output` then `evaluate --output` into the same folder (and back): each run replaces
    or removes only what extracteval wrote there (listed in the folder's marker); a user's notes
    and sub-folder beside the results stay."""
    out = tmp_path / "results"
    assert cli("score", "fields", *ONE_MODEL, "--output", str(out)).code == 0
    (out / "NOTES.txt").write_text("my notes")
    (out / "mine").mkdir()
    (out / "mine" / "keep.csv").write_text("a,b\n")
    r = cli("evaluate", "fields", *ONE_MODEL, "--no-figures", "--experiment", "e", "--tracking-uri", f"sqlite:///{tmp_path / 's.db'}",
            "--output", str(out))
    assert r.code == 0, r.err
    assert (out / "NOTES.txt").read_text() == "my notes" and (out / "mine" / "keep.csv").is_file()
    assert (out / "manifest.json").is_file() and not (out / "field_metrics.csv").exists()  # the score run's files were extracteval's
    listed = set(json.loads((out / ".extracteval-output").read_text())["files"])
    assert {"manifest.json", "runs", "state.json"} <= listed and not listed & {"NOTES.txt", "mine"}
    assert cli("score", "fields", *ONE_MODEL, "--output", str(out)).code == 0
    assert (out / "NOTES.txt").read_text() == "my notes" and (out / "mine" / "keep.csv").is_file()
    assert {"manifest.json", "result.json"} <= set(json.loads((out / ".extracteval-output").read_text())["files"])


def test_a_sqlite_file_of_another_application_is_not_made_a_store(cli, tmp_path: Path) -> None:
    """A SQLite database that is not MLflow's, given as the tracking store, is refused before any
    work (exit 2), left byte for byte as it was: MLflow would add its tables to it."""
    import sqlite3

    db = tmp_path / "crm.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        con.execute("INSERT INTO customers VALUES (1, 'Ann')")
    before = db.read_bytes()
    for argv in (("evaluate", "fields", *ONE_MODEL, "--experiment", "e", "--tracking-uri", f"sqlite:///{db}"),
                 ("leaderboard", "--experiment", "e", "--tracking-uri", f"sqlite:///{db}")):
        r = cli(*argv)
        assert r.code == 2 and "another application's database" in r.err and "'customers'" in r.err, r.err
        assert "Traceback" not in r.err and db.read_bytes() == before
    assert not list(tmp_path.glob("*.db-journal"))


@pytest.mark.parametrize("typed", ["\\t", "tab", "\t"])
def test_a_tab_delimiter_typed_as_written_is_a_tab_and_longer_ones_are_refused(cli, tmp_path: Path, typed: str) -> None:
    table = tmp_path / "t.txt"
    table.write_text("id\tx\n1\ta\n2\tb\n", encoding="utf-8")
    r = cli("score", "fields", "--truth", str(table), "--predictions", f"m={table}", "--no-ci", "--delimiter", typed, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["models"]["m"]["fields"]["x"]["f1"] == 1.0
    for bad in (";;", "", '"'):
        r = cli("score", "fields", "--truth", str(table), "--predictions", f"m={table}", "--no-ci", "--delimiter", bad)
        assert r.code == 2 and "--delimiter: expected one character" in r.err and "Traceback" not in r.err, r.err


@pytest.mark.parametrize("command", [
    ("evaluate", "fields", *ONE_MODEL),
    ("leaderboard",),
    ("compare", "--baseline", "run-a", "--candidate", "run-b"),
])
@pytest.mark.parametrize("name", ["", "  ", "bad\x1b[31mname"])
def test_an_empty_or_unprintable_experiment_name_is_refused(cli, tmp_path: Path, command, name: str) -> None:
    """An empty `--experiment` logged silently to a default experiment; now it is the command
    line's error, before any work or any store is opened."""
    db = tmp_path / "s.db"
    r = cli(*command, "--experiment", name, "--tracking-uri", f"sqlite:///{db}")
    assert r.code == 2 and "--experiment: expected an experiment name" in r.err and "\x1b" not in r.err, r.err
    assert not db.exists()


def test_names_reach_the_terminal_with_their_control_characters_written_out(cli, tmp_path: Path) -> None:
    """A model or file name carrying escape sequences (clear the screen, retitle the window, set
    the clipboard) is printed with them written out (`\\u001b`), in the report and in error messages;
    colours, where the terminal has them, are the only escape sequences printed."""
    table = tmp_path / "t.csv"
    table.write_text("id,x\n1,a\n2,b\n", encoding="utf-8")
    hostile = "m\x1b[2J\x1b]0;pwned\x07\x9bx"
    r = cli("score", "fields", "--truth", str(table), "--predictions", f"{hostile}={table}", "--predictions", f"n={table}", "--no-ci")
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\x07" not in r.out and "\x9b" not in r.out
    assert "m\\u001b[2J\\u001b]0;pwned\\u0007\\u009bx" in r.out
    r = cli("score", "fields", "--truth", str(tmp_path / "missing\x1b]0;t\x07.csv"), "--predictions", f"n={table}", "--no-ci")
    assert r.code == 2 and "\x1b" not in r.err and "\\u001b]0;t\\u0007" in r.err, r.err
    r = cli("score", "fields", "--truth", str(table), "--predictions", f"{hostile}={table}", "--no-ci", "--json")
    assert r.code == 0 and json.loads(r.out)["ranking"] == [hostile]  # the JSON document keeps the name exactly


def test_terminal_safe_keeps_colours_only_where_asked() -> None:
    from extracteval.report.terminal import colour, terminal_safe

    green = colour("ok", "green", True)
    assert terminal_safe(green) == green and terminal_safe(green, colours=False) == "\\u001b[32mok\\u001b[0m"
    assert terminal_safe("a\tb\nc\rd\x00") == "a\tb\nc\\u000dd\\u0000"


def test_examples_whose_names_differ_only_by_characters_a_file_name_cannot_hold_keep_their_own_outputs(cli, tmp_path: Path) -> None:
    """`a/b` and `a_b` (and `a b`) are three examples: three result folders, three experiment names."""
    import shutil

    from extracteval.io.config import distinct_file_name

    root = tmp_path / "experiments"
    for folder, name in (("one", "a/b"), ("two", "a_b"), ("three", "a b")):
        shutil.copytree(CONTRACTS, root / folder)
        spec = (root / folder / "experiment.yaml").read_text(encoding="utf-8")
        (root / folder / "experiment.yaml").write_text(spec.replace("name: contracts", f"name: {json.dumps(name)}"), encoding="utf-8")
    r = cli("demo", "--experiments", str(root), "--no-mlflow", "--output", str(tmp_path / "out"))
    assert r.code == 0, r.err
    folders = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert len(folders) == 3 and "a_b" in folders, folders
    assert len({distinct_file_name(n) for n in ("a/b", "a_b", "a b", "a\\b", "a:b")}) == 5


def test_an_unreachable_server_is_tried_again_with_a_word_each_time_then_given_up(cli, tmp_path: Path, monkeypatch) -> None:
    """Not minutes of silence: each new try is announced, and after the last the results are kept
    with the command that logs them later."""
    pytest.importorskip("mlflow")
    import time

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")  # pauses of 1 s and 2 s
    url = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    r = cli("evaluate", "fields", *ONE_MODEL, "--no-figures", "--experiment", "nowhere", "--tracking-uri", url)
    took = time.monotonic() - started
    assert r.code == 1 and "Traceback" not in r.err, r.err
    waits = [ln for ln in r.err.splitlines() if "does not answer" in ln]
    assert waits == [f"extracteval: the tracking server {url} does not answer (connection refused); trying again in 1 s (try 2 of 3)",
                     f"extracteval: the tracking server {url} does not answer (connection refused); trying again in 2 s (try 3 of 3)"], r.err
    m = UPLOAD_FAILURE.match(_error_lines(r.err)[0])
    assert m and "not reachable" in m["reason"] and "while connecting to the tracking server" in _error_lines(r.err)[0], r.err
    assert 3 <= took < 60, took
