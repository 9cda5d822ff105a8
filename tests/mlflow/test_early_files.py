"""The in-memory `evaluate fields` starts its big artifacts and the truth digest while the scoring
still runs (mlflow/early.py): the local copy must be exactly what writing it afterwards gives,
failures must be reported as before, and the background work must never outlive the command."""

from __future__ import annotations

import errno
import threading
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.digest import truth_digest
from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields
from extracteval.tasks.fields.counting import _column_codes
from extracteval.mlflow.early import EarlyWork


def _early_dirs(parent: Path) -> list[Path]:
    return sorted(parent.glob(".extracteval-early-*"))


def test_local_copy_written_early_is_the_one_written_after_the_scoring(cli, tmp_path, contracts_args):
    from extracteval.cli import build_parser
    from extracteval.mlflow.bundle import load_bundle, write_bundle
    from extracteval.mlflow.adapters import get_adapter

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "e", "--tracking-uri", uri, "--output", str(tmp_path / "early"))
    assert code == 0, err
    assert _early_dirs(tmp_path) == []  # the work folder is gone once the files are linked in

    args = build_parser().parse_args(["evaluate", "fields", *contracts_args, "--experiment", "e"])
    adapter = get_adapter("fields")
    scored = adapter.score_args(args)  # no early work: everything written by write_bundle
    assert "early_files" not in scored.cache and "truth_digest" not in scored.cache
    late = write_bundle(scored, adapter, tmp_path / "late", experiment="e", tracking_uri=uri)
    early = load_bundle(tmp_path / "early")
    assert early.manifest["truth_digest"] == late.manifest["truth_digest"]
    assert [r["tags"] for r in early.manifest["runs"]] == [r["tags"] for r in late.manifest["runs"]]
    children = [p.key for p in late.runs if p.role != "comparison"]
    assert len(children) == 3
    for key in children:
        for name in ("records.parquet", "predictions.parquet"):
            a = early.run_dir(key) / "artifacts" / "extracteval" / name
            b = late.run_dir(key) / "artifacts" / "extracteval" / name
            assert a.read_bytes() == b.read_bytes(), (key, name)
            assert len(pq.ParquetFile(a).metadata.row_group(0).to_dict()["columns"]) > 0


def test_a_failing_background_write_is_an_output_error_and_leaves_nothing(cli, tmp_path, contracts_args, monkeypatch):
    from extracteval.tasks.fields import adapter as task_fields

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(task_fields, "write_records_parquet", full_disk)
    out = tmp_path / "results"
    code, _, err = cli("evaluate", "fields", *contracts_args, "--experiment", "e", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}",
                       "--output", str(out))
    assert code == 1
    assert "No space left on device" in err and str(out) in err and "Traceback" not in err
    assert not out.exists() and _early_dirs(tmp_path) == []
    assert not (tmp_path / "m.db").exists()  # nothing was logged: the local copy never completed


def test_an_error_after_the_background_work_started_stops_it_and_removes_its_folder(cli, tmp_path, contracts_args, monkeypatch):
    from extracteval.tasks.fields import semantics as core_fields
    from extracteval.errors import InputError

    started: list[EarlyWork] = []

    def failing_result(*a, **k):
        raise InputError("the bootstrap failed on purpose")

    monkeypatch.setattr(core_fields, "fields_result", failing_result)
    real_start = EarlyWork._start

    def spy(self):
        if self not in started:
            started.append(self)
        return real_start(self)

    monkeypatch.setattr(EarlyWork, "_start", spy)
    code, _, err = cli("evaluate", "fields", *contracts_args, "--experiment", "e", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}",
                       "--output", str(tmp_path / "results"))
    assert code == 2 and "failed on purpose" in err
    assert started, "the background work never started: the test no longer covers the error path"
    work = started[0]
    assert work.workdir is not None and not work.workdir.exists()
    assert all(f.done() for f in work.files.values())
    assert not [t for t in threading.enumerate() if t.name.startswith("extracteval-early")]


def test_on_records_gets_the_final_counts_before_the_bootstrap(monkeypatch):
    from extracteval.tasks.fields import ledger as core_fields  # where the count patterns are taken

    rng = np.random.default_rng(3)
    ids = [f"r{i}" for i in range(40)]
    truth = pd.DataFrame({f: rng.choice(["a", "b", "c"], 40) for f in ("x", "y")}, index=ids)
    pred = truth.where(rng.random((40, 2)) < 0.7, "z")
    events: list[str] = []
    seen = []

    real = core_fields.record_patterns

    def patterns(*a, **k):
        events.append("bootstrap")
        return real(*a, **k)

    monkeypatch.setattr(core_fields, "record_patterns", patterns)

    def on_records(rec):
        events.append("records")
        seen.append({m: arr.copy() for m, arr in rec.counts.items()})

    result = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=FieldsConfig(bootstrap=50), on_records=on_records)
    assert events == ["records", "bootstrap"]
    assert len(seen) == 1 and np.array_equal(seen[0]["m"], result.records.counts["m"])


def test_background_jobs_run_one_at_a_time_until_the_scoring_is_done(tmp_path):
    running, most = [0], [0]
    lock = threading.Lock()

    def job(path):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        path.write_text("x")
        return True

    with EarlyWork(tmp_path) as work:
        for i in range(4):
            work.file(f"m{i}", "records.parquet", job)
        for f in work.files.values():
            f.result()
        assert most[0] == 1  # the scoring keeps a core of its own
        for i in range(4, 8):
            work.file(f"m{i}", "records.parquet", job)
        cache: dict = {}
        work.attach(cache)
        assert set(cache["early_files"]) == {(f"m{i}", "records.parquet") for i in range(8)}
        paths = [f.result() for f in cache["early_files"].values()]
        assert most[0] == 2 and all(p.read_text() == "x" for p in paths)
        workdir = work.workdir
    assert workdir is not None and not workdir.exists()


def test_a_failing_warm_up_is_ignored_and_a_failing_job_raises_its_error(tmp_path):
    def broken():
        raise ImportError("no such module")

    def nothing(path):
        return False

    with EarlyWork(tmp_path, warm=[broken]) as work:
        work.file("m", "a.parquet", nothing)
        work.value("digest", lambda: 1 / 0)
        cache: dict = {}
        work.attach(cache)
        assert cache["early_files"][("m", "a.parquet")].result() is None
        with pytest.raises(ZeroDivisionError):
            cache["digest"].result()


# ---- the truth digest from the scoring's factorisation ------------------------------------------

_CELLS = st.one_of(st.none(), st.just(float("nan")), st.just(pd.NA), st.sampled_from(["a", "b", "", "é", "1", "true"]),
                   st.integers(-2, 2), st.floats(allow_nan=False, allow_infinity=False, width=16), st.booleans(),
                   st.just(Decimal("NaN")), st.just(pd.NaT))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_CELLS, min_size=3, max_size=3), min_size=1, max_size=12), st.randoms(use_true_random=False), st.booleans())
def test_digest_from_codes_equals_the_digest_cell_by_cell(rows, rnd, text_only):
    if text_only:  # the CLI's case: text and missing cells only, all columns taken from the codes
        rows = [[c if c is None or isinstance(c, str) else None for c in r] for r in rows]
    ids = [f"r{i}" for i in range(len(rows))]
    rnd.shuffle(ids)
    frame = pd.DataFrame(rows, index=ids, columns=["c", "a", "b"], dtype=object)
    known: dict = {}
    for c in ("a", "c"):  # "b" is not scored: digested cell by cell
        _column_codes(frame, c, np.arange(len(frame)), known)
    assert truth_digest(frame, known=known) == truth_digest(frame)


def test_digest_from_codes_covers_missing_cells_and_refuses_inexact_ones():
    frame = pd.DataFrame({"t": ["x", None, np.nan, "y", pd.NA], "d": ["x", Decimal("NaN"), "y", "x", None], "m": [1, 1.0, True, "1", None]},
                         index=["e", "d", "c", "b", "a"], dtype=object)
    known: dict = {}
    for c in frame.columns:
        _column_codes(frame, c, np.arange(5), known)
    assert "t" in known  # text with missing cells: taken from the codes
    assert truth_digest(frame, known=known) == truth_digest(frame)
    changed = frame.copy()
    changed.loc["e", "t"] = "z"
    known2: dict = {}
    _column_codes(changed, "t", np.arange(5), known2)
    assert truth_digest(changed, known=known2) != truth_digest(frame, known=known)


@pytest.mark.parametrize("uri, store", [("sqlite:///m.db", True), ("postgresql+psycopg2://u@h/db", True), ("http://127.0.0.1:5000", False)])
def test_the_warm_up_imports_what_logging_to_that_store_needs(uri, store):
    """The warm-up's failures are silent by design; this is where a renamed MLflow module shows."""
    import subprocess
    import sys

    code = ("import sys\nfrom extracteval.commands.evaluate import _logging_imports\n"
            f"_logging_imports({uri!r}, figures=True)()\n"
            "print(sorted(m for m in ('mlflow.tracking', 'mlflow.data.dataset_source_registry', 'matplotlib.figure', "
            "'mlflow.store.tracking.sqlalchemy_store') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    expected = ["matplotlib.figure", "mlflow.data.dataset_source_registry", "mlflow.tracking"]
    if store:
        expected.insert(2, "mlflow.store.tracking.sqlalchemy_store")
    assert r.stdout.strip() == repr(expected)
