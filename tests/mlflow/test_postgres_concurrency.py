"""20 concurrent `extracteval evaluate` processes logging to one `mlflow server` backed by
PostgreSQL (what teams run in production, not SQLite): every command exits 0 and every run lands
in the store with every metric of its local copy, values equal, nothing missing, nothing twice.
The 20 processes are forked from one Python that has imported the command's modules once, each
then running `python -m extracteval`'s `__main__` with its own argv, stdout and stderr: the same
command, without paying 20 times the seconds of imports on a 2-core machine.

The fixture builds a throw-away PostgreSQL cluster on 127.0.0.1 (initdb/pg_ctl from $PATH, else
/usr/lib/postgresql/*/bin; as root through `runuser -u postgres`, since PostgreSQL refuses to run
as root). It skips, saying why, only when PostgreSQL is not installed or cannot be started here;
`.ci/run` installs it from Debian packages when it is missing."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.system import POSTGRESQL

from tests.fixtures.tracking import CONTRACTS, MlflowServer, _free_port

N_EVALUATIONS = 20
MODELS = ["gpt-4o-mini", "llama-3.1-8b", "regex-baseline"]


class PostgresCluster:
    """A private cluster in a temporary folder: trust auth for user `mlflow`, loopback only,
    fsync off (a test store, thrown away), enough connections for 20 clients and the server."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                pytest.skip("PostgreSQL refuses to run as root and `runuser` is not available to run it as another user")
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("PostgreSQL refuses to run as root and there is no `postgres` user to run it as")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        # not pytest's tmp_path: it lives under a 0700 folder of root that user postgres cannot enter
        self.root = Path(tempfile.mkdtemp(prefix="extracteval-pg-"))
        if self.as_user:
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = _free_port()
        self.started = False

    def _run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.as_user, *cmd], capture_output=True, text=True, timeout=120, cwd=self.root)

    def start(self) -> None:
        r = self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "mlflow", "--no-sync")
        if r.returncode != 0:
            self.cleanup()
            pytest.skip(f"PostgreSQL cannot be started here: initdb exited {r.returncode}: {(r.stderr or r.stdout)[-800:]}")
        opts = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=200"
        r = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", opts, "start")
        if r.returncode != 0:
            log = self.log.read_text(errors="replace")[-800:] if self.log.exists() else ""
            self.cleanup()
            pytest.skip(f"PostgreSQL cannot be started here: pg_ctl start exited {r.returncode}: {r.stderr[-400:]} {log}")
        self.started = True

    def create_database(self, name: str) -> str:
        import psycopg2  # the `test` extra's driver, also what the mlflow server uses

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="mlflow", dbname="postgres")
        try:
            conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        # the driver named: SQLAlchemy ≥ 2.1 maps a bare `postgresql://` to psycopg 3, not psycopg2
        return f"postgresql+psycopg2://mlflow@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self.started:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres_mlflow_server(tmp_path_factory: pytest.TempPathFactory):
    bindir = Path(POSTGRESQL.require()).parent
    cluster = PostgresCluster(bindir)
    cluster.start()
    server = None
    try:
        uri = cluster.create_database("extracteval")
        server = MlflowServer(tmp_path_factory.mktemp("mlflow-pg-server"), backend_uri=uri)
        server.start(timeout=120)  # a fresh PostgreSQL schema runs every MLflow migration first
        yield server
    finally:
        if server is not None:
            server.stop()
        cluster.cleanup()


def _evaluation_argv(i: int, url: str, out: Path) -> list[str]:
    # two of the three example models per evaluation, rotating, so the runs do not all carry the same numbers
    a, b = MODELS[i % 3], MODELS[(i + 1) % 3]
    return [
        "evaluate", "fields",
        "--truth", str(CONTRACTS / "truth.csv"),
        "--predictions", f"{a}={CONTRACTS / 'predictions' / f'{a}.csv'}",
        "--predictions", f"{b}={CONTRACTS / 'predictions' / f'{b}.csv'}",
        "--strategies", str(CONTRACTS / "strategies.yaml"),
        "--no-ci", "--no-figures",  # the load is on the store, not on the bootstrap or matplotlib
        "--experiment", "concurrency", "--run-name", f"eval-{i:02d}",
        "--tracking-uri", url, "--output", str(out), "--json",
    ]


# Imports what `extracteval evaluate fields … --tracking-uri http://…` needs, then forks one process
# per job (argv[1]: a JSON list of {i, argv, stdout, stderr}), 0.1 s apart, each running
# `python -m extracteval`'s `__main__` with `extracteval <argv>` as its command line; prints
# {i: exit code} once all have ended. Niced: the 20 clients stand for 20 machines; on one 2-core box
# at equal priority they starve the one server process they are testing.
_LAUNCHER = r"""
import json, os, runpy, sys, time, traceback

os.nice(10)
import pandas, pyarrow.parquet  # noqa: E401,F401
import extracteval.cli, extracteval.commands.evaluate  # noqa: E401,F401
import mlflow.data.dataset_source_registry, mlflow.store.artifact.artifact_repository_registry, mlflow.tracking, mlflow.types  # noqa: E401,F401

jobs = json.loads(sys.argv[1])
children = {}
for job in jobs:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            sys.argv = ["extracteval", *job["argv"]]
            try:
                runpy.run_module("extracteval", run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    children[pid] = job["i"]
    time.sleep(0.1)  # a slight stagger, as 20 clients starting would; each lives >> 2 s, so they all overlap
codes = {}
while children:
    pid, status = os.wait()
    codes[children.pop(pid)] = os.waitstatus_to_exitcode(status)
print(json.dumps(codes))
"""


@pytest.mark.slow
def test_twenty_concurrent_evaluations_land_complete_in_postgres(postgres_mlflow_server, tmp_path):
    import extracteval

    url = postgres_mlflow_server.url
    src = str(Path(extracteval.__file__).resolve().parents[1])  # the children import the code under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
           "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",  # a request the server drops is a failure, not a silent retry
           "MLFLOW_HTTP_REQUEST_TIMEOUT": "120"}
    jobs = [{"i": i, "argv": _evaluation_argv(i, url, tmp_path / f"out-{i:02d}"),
             "stdout": str(tmp_path / f"eval-{i:02d}.out"), "stderr": str(tmp_path / f"eval-{i:02d}.err")} for i in range(N_EVALUATIONS)]
    t0 = time.monotonic()
    launcher = subprocess.run([sys.executable, "-c", _LAUNCHER, json.dumps(jobs)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
    assert launcher.returncode == 0, launcher.stderr[-3000:]
    codes = {int(k): v for k, v in json.loads(launcher.stdout).items()}
    docs = {}
    for i in range(N_EVALUATIONS):
        err = (tmp_path / f"eval-{i:02d}.err").read_text()
        assert codes[i] == 0, f"evaluation {i} exited {codes[i]}:\n{err[-3000:]}"
        assert "Traceback" not in err
        docs[i] = json.loads((tmp_path / f"eval-{i:02d}.out").read_text())
    elapsed = time.monotonic() - t0

    client = MlflowClient(url)
    exp = client.get_experiment_by_name("concurrency")
    stored = {r.info.run_id: r for r in client.search_runs([exp.experiment_id], max_results=1000)}
    expected_runs = 0
    n_metrics = 0
    windows = []  # (upload start, parent finished) per evaluation, from the store's own clock
    for i, doc in docs.items():
        out = tmp_path / f"out-{i:02d}"
        manifest = json.loads((out / "manifest.json").read_text())
        run_ids = doc["mlflow"]["run_ids"]
        assert list(run_ids) == [r["key"] for r in manifest["runs"]] == ["parent", "model-1", "model-2"]
        assert json.loads((out / "state.json").read_text())["status"] == "UPLOADED"
        expected_runs += len(run_ids)
        for key, rid in run_ids.items():
            assert rid in stored, f"evaluation {i}: run {key} ({rid}) is missing from the store"
            run = client.get_run(rid)
            local = json.loads((out / "runs" / key / "metrics.json").read_text())
            missing = sorted(set(local) - set(run.data.metrics))
            assert not missing, f"evaluation {i}, run {key}: {len(missing)} metrics missing, e.g. {missing[:5]}"
            assert run.data.metrics == local  # every value equal, nothing extra
            assert run.info.status == "FINISHED"
            n_metrics += len(local)
            name = "overall/f1" if key != "parent" else next(iter(local))
            assert len(client.get_metric_history(rid, name)) == 1  # logged once
        assert stored[run_ids["parent"]].info.run_name == f"eval-{i:02d}"
        assert all(stored[run_ids[k]].data.tags["mlflow.parentRunId"] == run_ids["parent"] for k in ("model-1", "model-2"))
        windows.append((manifest["created_ms"], stored[run_ids["parent"]].info.end_time))
    assert len(stored) == expected_runs == 3 * N_EVALUATIONS  # no run missing, none duplicated
    assert n_metrics >= 3 * N_EVALUATIONS * 10
    # the uploads really overlapped at the server: most of them were in flight at the same moment
    events = sorted([(s, 1) for s, _ in windows] + [(e, -1) for _, e in windows])
    in_flight = peak = 0
    for _, d in events:
        in_flight += d
        peak = max(peak, in_flight)
    print(f"\n{N_EVALUATIONS} evaluations in {elapsed:.1f} s; {len(stored)} runs, {n_metrics} metrics read back; "
          f"peak {peak} uploads in flight")
    assert peak >= N_EVALUATIONS // 2, f"only {peak} uploads overlapped: the test no longer exercises concurrency"
