"""The suite's new SQLite stores are filled from a migrated template (tests/conftest.py): such a
store must be the very database MLflow's own migrations make — checked against a store made in a
separate process, where no template is used."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path


def _schema(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[str, ...]]]:
    """Every table, index and trigger with its SQL, and the schema version. MLflow's migrations
    write the lines of one CREATE TABLE (the runs table's constraints) in an order that changes
    from one migration run to the next, so each statement's lines are compared as a sorted list."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
        version = con.execute("SELECT version_num FROM alembic_version").fetchall()
    objects = sorted((kind, name, table, sorted(line.strip().rstrip(",") for line in (sql or "").splitlines()))
                     for kind, name, table, sql in rows)
    return objects, version


def test_a_store_made_from_the_template_is_the_one_mlflow_migrates(tmp_path):
    import mlflow.store.db.utils as db_utils
    from mlflow.tracking import MlflowClient

    # the store below is made from the template, not by MLflow's migrations
    assert "_new_sqlite_stores_from_a_migrated_copy" in db_utils._initialize_tables.__qualname__

    here, there = tmp_path / "here.db", tmp_path / "there.db"
    MlflowClient(f"sqlite:///{here}").create_experiment("e")
    code = (f"from mlflow.tracking import MlflowClient; MlflowClient('sqlite:///{there.as_posix()}').create_experiment('e')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    objects, version = _schema(there)
    assert len(objects) > 20 and version  # a migrated MLflow store: many tables, a schema version
    assert _schema(here) == (objects, version)
    with sqlite3.connect(here) as con:
        assert [r[0] for r in con.execute("SELECT name FROM experiments ORDER BY experiment_id")] == ["Default", "e"]


def test_a_database_with_tables_of_its_own_is_left_to_mlflow(tmp_path):
    """The template is copied only into a database with no table: one holding another program's
    table keeps it, as MLflow keeps it."""
    from mlflow.tracking import MlflowClient

    db = tmp_path / "shared.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE mydata (x INTEGER)")
        con.execute("INSERT INTO mydata VALUES (7)")
    MlflowClient(f"sqlite:///{db}").create_experiment("e")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT x FROM mydata").fetchall() == [(7,)]
        assert con.execute("SELECT count(*) FROM experiments WHERE name = 'e'").fetchone() == (1,)
